// croq gpu key, croq gpu check and croq gpu contention: the seeds' detect_gpu, gpu_check and
// gpu_contention, read from nvidia-smi (through the process runner) and /proc. None of them ever
// signals another user's process, resets a GPU or uses sudo.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/gpu/lease.hpp"
#include "croq/gpu/processes.hpp"
#include "croq/util/time.hpp"

namespace croq::cli {

namespace {

json gpu_json(const GpuInfo& g) {
  return {{"index", g.index},
          {"name", g.name},
          {"uuid", g.uuid},
          {"key", make_gpu_key(g.name, g.compute_cap)},
          {"compute_cap", g.compute_cap},
          {"driver", g.driver},
          {"memory_total_mib", g.memory_total_mib},
          {"memory_used_mib", g.memory_used_mib},
          {"utilization_pct", g.utilization_pct},
          {"temperature_c", g.temperature_c},
          {"sm_clock_mhz", g.sm_clock_mhz},
          {"max_sm_clock_mhz", g.max_sm_clock_mhz}};
}

std::vector<GpuInfo> gpus_or_throw() {
  std::string error;
  auto gpus = query_gpus(&error);
  if (gpus.empty()) {
    throw Error(ExitCode::no_device, "no GPU: " + error,
                "run on a machine with an NVIDIA GPU and driver; the cpp dsl needs no GPU");
  }
  return gpus;
}

GpuInfo selected_or_throw(const std::vector<GpuInfo>& gpus, const std::string& device) {
  auto g = select_gpu(gpus, device);
  if (!g) {
    std::string known;
    for (const auto& x : gpus) known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", x.index, x.uuid);
    throw Error(ExitCode::no_device,
                fmt::format("device '{}' is not among the GPUs: {}",
                            device.empty() ? std::string(std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "") : device,
                            known),
                "pass --device <index|uuid> (CUDA_VISIBLE_DEVICES is honoured)");
  }
  return *g;
}

json lease_json(const std::string& uuid) {
  std::string holder;
  bool held = false;
  if (auto lease = DeviceLease::try_acquire(uuid, "croq gpu check (probe)")) {
    held = false;
  } else {
    held = true;
    holder = DeviceLease::holder(uuid);
  }
  return {{"held", held}, {"holder", held ? json(holder) : json(nullptr)}, {"file", DeviceLease::lock_path(uuid).string()}};
}

}  // namespace

VerbRunner setup_gpu_key(CLI::App& app) {
  auto device = std::make_shared<std::string>();
  app.add_option("--device", *device, "GPU index or UUID (default: CUDA_VISIBLE_DEVICES' first, else 0)");
  return [device](Context& ctx) {
    GpuInfo g = selected_or_throw(gpus_or_throw(), *device);
    json doc = gpu_json(g);
    ctx.emit(doc);
    ctx.note(doc["key"].get<std::string>());
    return ExitCode::ok;
  };
}

VerbRunner setup_gpu_check(CLI::App& app) {
  struct Opts {
    std::string device;
    bool wait = false;
    double timeout_s = 120;
    double interval_s = 2;
    bool reset = false;
    bool kill_others = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--device", o->device, "GPU index or UUID (default: CUDA_VISIBLE_DEVICES' first, else 0)");
  app.add_flag("--wait", o->wait, "poll until the GPU is idle (or --timeout)");
  app.add_option("--timeout", o->timeout_s, "seconds to wait with --wait")->default_val(120)->check(CLI::Range(0.0, 86400.0));
  app.add_option("--interval", o->interval_s, "seconds between polls")->default_val(2)->check(CLI::Range(0.05, 600.0));
  app.add_flag("--reset", o->reset, "(the seeds' option; refused: croq never resets a GPU)");
  app.add_flag("--kill-others", o->kill_others, "(the seeds' option; refused: croq never ends another's process)");
  return [o](Context& ctx) {
    if (o->reset) {
      throw_usage("croq never resets a GPU: it needs root and ends every user's work on it",
                  "if the GPU is stuck, tell its administrator; `croq gpu contention --kill` ends croq's own stale processes");
    }
    if (o->kill_others) {
      throw_usage("croq never ends another process on the GPU",
                  "`croq gpu contention --kill` ends croq's own stale processes only");
    }
    Stopwatch clock;
    bool told = false;
    for (;;) {
      GpuInfo g = selected_or_throw(gpus_or_throw(), o->device);
      std::string error;
      auto apps = query_compute_apps(&error);
      std::vector<ComputeApp> on_gpu;
      if (apps) {
        for (const auto& a : *apps) {
          if (a.gpu_uuid.empty() || a.gpu_uuid == g.uuid) on_gpu.push_back(a);
        }
      }
      GpuHealth h = evaluate_health(g, on_gpu);
      if (!apps) h.warnings.push_back("the compute processes could not be listed: " + error);
      const bool timed_out = clock.elapsed_ms() >= o->timeout_s * 1000;
      if (h.idle || !o->wait || timed_out) {
        json procs = json::array();
        for (const auto& a : on_gpu) procs.push_back({{"pid", a.pid}, {"name", a.name}, {"used_memory_mib", a.used_memory_mib}});
        json doc;
        doc["idle"] = h.idle;
        doc["device"] = gpu_json(g);
        doc["reasons"] = h.reasons;
        doc["warnings"] = h.warnings;
        doc["processes"] = procs;
        doc["lease"] = lease_json(g.uuid);
        doc["waited_ms"] = std::round(clock.elapsed_ms());
        ctx.emit(doc);
        if (h.idle) {
          ctx.note(fmt::format("GPU {} ({}) is idle", g.index, g.name));
          return ExitCode::ok;
        }
        std::string why;
        for (const auto& r : h.reasons) why += (why.empty() ? "" : "; ") + r;
        ctx.note(fmt::format("GPU {} ({}) is busy: {}", g.index, g.name, why));
        return o->wait ? ExitCode::busy : ExitCode::failure;
      }
      if (!told) {
        std::string why;
        for (const auto& r : h.reasons) why += (why.empty() ? "" : "; ") + r;
        ctx.note(fmt::format("croq gpu check: waiting up to {:.0f} s for GPU {} to be idle ({})", o->timeout_s, g.index, why));
        told = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long long>(o->interval_s * 1000)));
    }
  };
}

VerbRunner setup_gpu_contention(CLI::App& app) {
  struct Opts {
    std::string device;
    bool json_flag = false;
    bool kill = false;
    std::vector<int> except;
    bool kill_ours = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--device", o->device, "only this GPU (index or UUID; default: every GPU)");
  app.add_flag("--json", o->json_flag, "(the seeds' option: the output is always one JSON document)");
  app.add_flag("--kill", o->kill, "end croq's own stale processes (orphaned runners and candidate binaries) only");
  app.add_option("--except", o->except, "a pid never to end (repeatable)");
  app.add_flag("--kill-ours", o->kill_ours, "(the seeds' option; refused: croq ends only its stale processes)");
  return [o](Context& ctx) {
    if (o->kill_ours) {
      throw_usage("--kill-ours is not available: a croq process that is still waited for is never ended",
                  "--kill ends the stale ones (whose croq parent is gone)");
    }
    std::string only_uuid;
    auto gpus = gpus_or_throw();
    if (!o->device.empty()) only_uuid = selected_or_throw(gpus, o->device).uuid;
    std::string error;
    auto apps = query_compute_apps(&error);
    if (!apps) throw Error(ExitCode::no_device, "cannot list the GPU processes: " + error);
    std::vector<ComputeApp> selected;
    for (const auto& a : *apps) {
      if (only_uuid.empty() || a.gpu_uuid == only_uuid) selected.push_back(a);
    }
    SystemProcReader reader;
    auto procs = classify_processes(selected, reader, static_cast<int>(::getuid()));
    for (auto& p : procs) {
      for (int pid : o->except) {
        if (p.app.pid == pid) p.stale = false;
      }
      if (p.app.pid == ::getpid()) p.stale = false;
    }
    std::vector<int> killed;
    if (o->kill) {
      killed = end_stale_processes(
          procs, [](int pid, int sig) { return ::kill(pid, sig); },
          [](int pid) { return ::kill(pid, 0) == 0; });
    }
    json list = json::array();
    int ours = 0, foreign = 0, stale = 0;
    for (const auto& p : procs) {
      ours += p.ours;
      foreign += !p.ours;
      stale += p.stale;
      json j = {{"pid", p.app.pid},
                {"name", p.app.name},
                {"used_memory_mib", p.app.used_memory_mib},
                {"gpu_uuid", p.app.gpu_uuid},
                {"ours", p.ours},
                {"stale", p.stale},
                {"why", p.why}};
      if (p.facts) {
        j["uid"] = p.facts->uid;
        j["exe"] = p.facts->exe;
        j["ppid"] = p.facts->ppid;
      }
      j["killed"] = std::find(killed.begin(), killed.end(), p.app.pid) != killed.end();
      list.push_back(j);
    }
    json doc;
    doc["processes"] = list;
    doc["ours"] = ours;
    doc["foreign"] = foreign;
    doc["stale"] = stale;
    doc["killed"] = killed;
    doc["idle"] = procs.empty();
    if (!only_uuid.empty()) doc["device"] = only_uuid;
    if (foreign > 0) {
      doc["note"] = "foreign processes are never ended by croq: wait for them (`croq gpu check --wait`) or ask their owner";
    }
    ctx.emit(doc);
    ctx.note(fmt::format("{} process(es) on the GPU: {} croq's ({} stale), {} foreign{}", procs.size(), ours, stale,
                         foreign, killed.empty() ? "" : fmt::format("; ended {}", killed.size())));
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
