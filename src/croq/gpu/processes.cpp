// GPU processes and health (processes.hpp).
#include "croq/gpu/processes.hpp"
#include "croq/gpu/gpu_steps.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "croq/util/process.hpp"
#include "croq/util/text.hpp"

namespace croq {

namespace {

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  std::string b = slash == std::string::npos ? path : path.substr(slash + 1);
  // /proc/<pid>/exe of a replaced binary reads "... (deleted)"
  if (ends_with(b, " (deleted)")) b = b.substr(0, b.size() - 10);
  return b;
}

bool is_runner_or_candidate(const ProcFacts& f) {
  const std::string b = basename_of(f.exe.empty() ? f.comm : f.exe);
  if (b == "croq-gpu-runner" || b == "croq-cpu-runner") return true;
  return f.exe.find("/tuning/") != std::string::npos && f.exe.find("/bin/") != std::string::npos;
}

}  // namespace

std::vector<ComputeApp> parse_compute_apps(const std::string& csv) {
  std::vector<ComputeApp> out;
  for (const std::string& raw : split_lines(csv)) {
    std::string line = trim(raw);
    if (line.empty() || line.find("No running") != std::string::npos) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(trim(cell));
    if (f.size() < 2) continue;
    ComputeApp a;
    try {
      a.pid = std::stoi(f[0]);
    } catch (...) {
      continue;
    }
    a.name = f[1];
    if (f.size() > 2) {
      try {
        a.used_memory_mib = std::stol(f[2]);
      } catch (...) {
        a.used_memory_mib = 0;  // "[N/A]" in some containers
      }
    }
    if (f.size() > 3) a.gpu_uuid = f[3];
    out.push_back(a);
  }
  return out;
}

std::optional<std::vector<ComputeApp>> query_compute_apps(std::string* error) {
  return query_compute_apps(process_runner(), error);
}

std::optional<std::vector<ComputeApp>> query_compute_apps(ProcessRunner& runner, std::string* error) {
  ProcessSpec spec;
  spec.argv = {"nvidia-smi", std::string("--query-compute-apps=") + k_compute_app_fields,
               "--format=csv,noheader,nounits"};
  spec.timeout = std::chrono::milliseconds(20000);
  spec.env_unset = {"CUDA_VISIBLE_DEVICES"};
  ProcessResult r = runner.run(spec);
  if (!r.ok()) {
    if (error) *error = r.started ? "nvidia-smi failed (" + r.describe() + "): " + trim(r.err) : "nvidia-smi not found";
    return std::nullopt;
  }
  return parse_compute_apps(r.out);
}

std::optional<ProcFacts> SystemProcReader::read(int pid) {
  const std::filesystem::path dir = std::filesystem::path("/proc") / std::to_string(pid);
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return std::nullopt;
  ProcFacts f;
  f.pid = pid;
  std::ifstream status(dir / "status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) == 0) {
      std::istringstream in(line.substr(4));
      in >> f.uid;
    } else if (line.rfind("PPid:", 0) == 0) {
      std::istringstream in(line.substr(5));
      in >> f.ppid;
    }
  }
  std::ifstream comm(dir / "comm");
  std::getline(comm, f.comm);
  f.exe = std::filesystem::read_symlink(dir / "exe", ec).string();
  if (ec) f.exe.clear();
  return f;
}

bool is_croq_program(const std::string& exe_or_comm) {
  const std::string b = basename_of(exe_or_comm);
  return b == "croq" || b == "croq-gpu-runner" || b == "croq-cpu-runner";
}

std::vector<GpuProcess> classify_processes(const std::vector<ComputeApp>& apps, ProcReader& proc, int my_uid) {
  std::vector<GpuProcess> out;
  for (const ComputeApp& app : apps) {
    GpuProcess g;
    g.app = app;
    g.facts = proc.read(app.pid);
    if (!g.facts) {
      g.why = "not visible in this process namespace (another container or host process)";
      out.push_back(g);
      continue;
    }
    const ProcFacts& f = *g.facts;
    if (f.uid != my_uid) {
      g.why = fmt::format("another user's process (uid {})", f.uid);
      out.push_back(g);
      continue;
    }
    // Ancestors: is a croq process above it?
    bool croq_ancestor = false;
    int ppid = f.ppid;
    for (int depth = 0; depth < 32 && ppid > 1; ++depth) {
      auto parent = proc.read(ppid);
      if (!parent) break;
      if (basename_of(parent->exe.empty() ? parent->comm : parent->exe) == "croq") {
        croq_ancestor = true;
        break;
      }
      ppid = parent->ppid;
    }
    const bool croq_self = is_croq_program(f.exe.empty() ? f.comm : f.exe);
    if (croq_self || croq_ancestor || is_runner_or_candidate(f)) {
      g.ours = true;
      g.stale = is_runner_or_candidate(f) && !croq_ancestor;
      g.why = g.stale ? "croq's own, orphaned: no croq process is waiting for it"
                      : (croq_ancestor ? "started by croq" : "a croq program");
    } else {
      g.why = "not started by croq";
    }
    out.push_back(g);
  }
  return out;
}

std::vector<int> end_stale_processes(const std::vector<GpuProcess>& processes,
                                     const std::function<int(int, int)>& signal_fn,
                                     const std::function<bool(int)>& alive_fn, int grace_ms) {
  std::vector<int> signalled;
  for (const auto& p : processes) {
    if (!p.ours || !p.stale) continue;
    if (signal_fn(p.app.pid, SIGTERM) == 0) signalled.push_back(p.app.pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (int pid : signalled) {
    while (alive_fn(pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (alive_fn(pid)) signal_fn(pid, SIGKILL);
  }
  return signalled;
}

GpuHealth evaluate_health(const GpuInfo& gpu, const std::vector<ComputeApp>& apps) {
  GpuHealth h;
  if (!apps.empty()) {
    std::string names;
    for (const auto& a : apps) names += fmt::format("{}{} (pid {})", names.empty() ? "" : ", ", a.name, a.pid);
    h.reasons.push_back(fmt::format("{} compute process{} on it: {}", apps.size(), apps.size() == 1 ? "" : "es", names));
  }
  if (gpu.utilization_pct > 5) h.reasons.push_back(fmt::format("utilization {} %", gpu.utilization_pct));
  if (gpu.temperature_c >= 85) h.warnings.push_back(fmt::format("temperature {} C", gpu.temperature_c));
  if (gpu.memory_used_mib > 2048 && apps.empty()) {
    h.warnings.push_back(fmt::format("{} MiB of memory in use by processes nvidia-smi does not list", gpu.memory_used_mib));
  }
  h.idle = h.reasons.empty();
  return h;
}

}  // namespace croq
