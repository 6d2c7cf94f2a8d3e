// croq gpu key, croq gpu check and croq gpu contention: the seeds' detect_gpu, gpu_check and
// gpu_contention, read from nvidia-smi (through the process runner) and /proc. None of them ever
// signals another user's process, resets a GPU or uses sudo.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/gpu/lease.hpp"
#include "croq/gpu/processes.hpp"
#include "croq/util/process.hpp"
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

// The device's lease, read without taking it: held or free, and by whom.
json lease_json(const GpuInfo& g) {
  LeaseState st = DeviceLease::state(lease_id_of(g));
  return {{"held", st.held}, {"holder", st.held ? json(st.holder) : json(nullptr)}, {"file", st.path.string()},
          {"device_id", st.device_id}};
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
  app.add_flag("--reset", o->reset, "(the original skill's option; refused: croq never resets a GPU)");
  app.add_flag("--kill-others", o->kill_others, "(the original skill's option; refused: croq never ends another's process)");
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
        doc["lease"] = lease_json(g);
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
  app.add_flag("--json", o->json_flag, "(the original skill's option: the output is always one JSON document)");
  app.add_flag("--kill", o->kill, "end croq's own stale processes (orphaned runners and candidate binaries) only");
  app.add_option("--except", o->except, "a pid never to end (repeatable)");
  app.add_flag("--kill-ours", o->kill_ours, "(the original skill's option; refused: croq ends only its stale processes)");
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

VerbRunner setup_gpu_lease(CLI::App& app) {
  struct Opts {
    std::string device;
    double timeout_s = 1800;
    std::string purpose;
    bool history = false;
    std::vector<std::string> command;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--device", o->device, "GPU index or UUID (default: CUDA_VISIBLE_DEVICES' first, else 0); cpu: the CPU's lease");
  app.add_option("--timeout", o->timeout_s, "seconds to wait for the lease")->default_val(1800)->check(CLI::Range(0.0, 86400.0));
  app.add_option("--purpose", o->purpose, "what the holder line says (default: the command)");
  app.add_flag("--history", o->history, "print the device's lease history instead of running a command");
  app.add_option("command", o->command, "the command to run while holding the lease (after --)");
  return [o](Context& ctx) {
    const std::string id = o->device == "cpu" ? std::string("cpu") : resolve_gpu_lease_id(o->device);
    if (o->history) {
      if (!o->command.empty()) throw_usage("--history runs no command", "drop the command, or drop --history");
      json doc = {{"device_id", id}, {"file", DeviceLease::history_path(id).string()}, {"history", DeviceLease::history(id)},
                  {"state", DeviceLease::state(id).to_json()}};
      ctx.emit(doc);
      return ExitCode::ok;
    }
    if (o->command.empty()) throw_usage("no command to run", "croq gpu lease [--device N] -- COMMAND ARGS...");
    const std::string purpose = o->purpose.empty() ? "croq gpu lease -- " + shell_join(o->command) : o->purpose;
    DeviceLease lease = DeviceLease::acquire(
        id, purpose, std::chrono::milliseconds(static_cast<long long>(o->timeout_s * 1000)),
        [&](const std::string& holder) {
          ctx.note(fmt::format("croq gpu lease: waiting for device {}: held by {}", id,
                               holder.empty() ? "another process" : holder));
        });
    // The command inherits stdin and stderr; its stdout goes to stderr, so that croq's own stdout
    // stays one JSON document. The lock's descriptor is close-on-exec: the lease stays with croq,
    // which holds it until the command has ended.
    Stopwatch clock;
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0) throw Error(ExitCode::failure, std::string("fork failed: ") + std::strerror(errno));
    if (child == 0) {
      ::dup2(2, 1);
      std::vector<char*> argv;
      for (auto& a : o->command) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      std::fprintf(stderr, "croq gpu lease: cannot run %s: %s\n", argv[0], std::strerror(errno));
      ::_exit(127);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    json doc;
    doc["device_id"] = id;
    doc["command"] = o->command;
    doc["waited_ms"] = lease.waited().count();
    doc["held_ms"] = std::round(clock.elapsed_ms());
    doc["exit_code"] = WIFEXITED(status) ? json(WEXITSTATUS(status)) : json(nullptr);
    doc["signal"] = WIFSIGNALED(status) ? json(WTERMSIG(status)) : json(nullptr);
    ctx.emit(doc);
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return ok ? ExitCode::ok : ExitCode::failure;
  };
}

}  // namespace croq::cli
