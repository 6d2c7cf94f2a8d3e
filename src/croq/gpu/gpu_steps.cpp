// croq gpu key | check | contention as functions (gpu_steps.hpp).
#include "croq/gpu/gpu_steps.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "croq/gpu/lease.hpp"
#include "croq/gpu/processes.hpp"
#include "croq/util/error.hpp"
#include "croq/util/time.hpp"

namespace croq {

namespace {

std::vector<GpuInfo> gpus_or_throw(ProcessRunner& runner) {
  std::string error;
  auto gpus = query_gpus(runner, &error);
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

GpuInfo selected_gpu(ProcessRunner& runner, const std::string& device) {
  return selected_or_throw(gpus_or_throw(runner), device);
}

StepResult run_gpu_key(const std::string& device, const StepDeps& deps) {
  GpuInfo g = selected_gpu(deps.runner, device);
  StepResult res;
  res.doc = gpu_json(g);
  res.notes.push_back(res.doc["key"].get<std::string>());
  return res;
}

StepResult run_gpu_check(const GpuCheckOptions& o, const StepDeps& deps) {
  Stopwatch clock;
  bool told = false;
  for (;;) {
    GpuInfo g = selected_or_throw(gpus_or_throw(deps.runner), o.device);
    std::string error;
    auto apps = query_compute_apps(deps.runner, &error);
    std::vector<ComputeApp> on_gpu;
    if (apps) {
      for (const auto& a : *apps) {
        if (a.gpu_uuid.empty() || a.gpu_uuid == g.uuid) on_gpu.push_back(a);
      }
    }
    GpuHealth h = evaluate_health(g, on_gpu);
    if (!apps) h.warnings.push_back("the compute processes could not be listed: " + error);
    const bool timed_out = clock.elapsed_ms() >= o.timeout_s * 1000;
    if (h.idle || !o.wait || timed_out) {
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
      StepResult res;
      res.doc = doc;
      if (h.idle) {
        res.notes.push_back(fmt::format("GPU {} ({}) is idle", g.index, g.name));
        return res;
      }
      std::string why;
      for (const auto& r : h.reasons) why += (why.empty() ? "" : "; ") + r;
      res.notes.push_back(fmt::format("GPU {} ({}) is busy: {}", g.index, g.name, why));
      res.code = o.wait ? ExitCode::busy : ExitCode::failure;
      return res;
    }
    if (!told) {
      std::string why;
      for (const auto& r : h.reasons) why += (why.empty() ? "" : "; ") + r;
      if (deps.note) deps.note(fmt::format("croq gpu check: waiting up to {:.0f} s for GPU {} to be idle ({})", o.timeout_s, g.index, why));
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long long>(o.interval_s * 1000)));
  }
}

StepResult run_gpu_contention(const GpuContentionOptions& o, const StepDeps& deps) {
  std::string only_uuid;
  auto gpus = gpus_or_throw(deps.runner);
  if (!o.device.empty()) only_uuid = selected_or_throw(gpus, o.device).uuid;
  std::string error;
  auto apps = query_compute_apps(deps.runner, &error);
  if (!apps) throw Error(ExitCode::no_device, "cannot list the GPU processes: " + error);
  std::vector<ComputeApp> selected;
  for (const auto& a : *apps) {
    if (only_uuid.empty() || a.gpu_uuid == only_uuid) selected.push_back(a);
  }
  SystemProcReader reader;
  auto procs = classify_processes(selected, reader, static_cast<int>(::getuid()));
  for (auto& p : procs) {
    for (int pid : o.except) {
      if (p.app.pid == pid) p.stale = false;
    }
    if (p.app.pid == ::getpid()) p.stale = false;
  }
  std::vector<int> killed;
  if (o.kill) {
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
  StepResult res;
  res.doc = doc;
  res.notes.push_back(fmt::format("{} process(es) on the GPU: {} croq's ({} stale), {} foreign{}", procs.size(), ours, stale,
                       foreign, killed.empty() ? "" : fmt::format("; ended {}", killed.size())));
  return res;
}

}  // namespace croq
