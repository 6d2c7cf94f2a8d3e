// Processes on the GPUs, ours and foreign (the seeds' gpu_contention, made safe): nvidia-smi lists
// the compute processes; /proc tells whose they are and what started them.
//
//   ours     same user, and a croq program (croq, croq-gpu-runner, croq-cpu-runner) or started by
//            one (a legacy candidate binary, ncu, the Python runner under croq)
//   stale    ours, a runner or a candidate binary of the artifact tree (.../tuning/.../bin/...),
//            with no croq process among its ancestors: croq died and left it running
//   foreign  everything else: another user's process, a process not started by croq, or one this
//            process namespace cannot see
// croq never signals a foreign process and never uses sudo; `--kill` ends stale processes only.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "croq/gpu/device_key.hpp"

namespace croq {

struct ComputeApp {
  int pid = 0;
  std::string name;
  long used_memory_mib = 0;
  std::string gpu_uuid;
};

inline constexpr const char* k_compute_app_fields = "pid,process_name,used_gpu_memory,gpu_uuid";
// Parses `nvidia-smi --query-compute-apps=<fields> --format=csv,noheader,nounits`.
std::vector<ComputeApp> parse_compute_apps(const std::string& csv);
// nullopt (and `error`) when nvidia-smi cannot be run.
std::optional<std::vector<ComputeApp>> query_compute_apps(std::string* error = nullptr);

struct ProcFacts {
  int pid = 0;
  int uid = -1;
  int ppid = 0;
  std::string exe;   // /proc/<pid>/exe target ("" if unreadable)
  std::string comm;  // /proc/<pid>/comm
};

// Reads /proc; a test substitutes a table.
class ProcReader {
 public:
  virtual ~ProcReader() = default;
  virtual std::optional<ProcFacts> read(int pid) = 0;
};
class SystemProcReader : public ProcReader {
 public:
  std::optional<ProcFacts> read(int pid) override;
};

struct GpuProcess {
  ComputeApp app;
  std::optional<ProcFacts> facts;
  bool ours = false;
  bool stale = false;
  std::string why;
};

bool is_croq_program(const std::string& exe_or_comm);
std::vector<GpuProcess> classify_processes(const std::vector<ComputeApp>& apps, ProcReader& proc, int my_uid);

// Ends the stale processes: SIGTERM, then SIGKILL after `grace_ms` if still alive. `signal_fn`
// (pid, signal) -> 0 on success; `alive_fn` (pid) -> still running. Returns the pids signalled.
std::vector<int> end_stale_processes(const std::vector<GpuProcess>& processes,
                                     const std::function<int(int, int)>& signal_fn,
                                     const std::function<bool(int)>& alive_fn, int grace_ms = 3000);

// Health of one GPU for a measurement: idle when nothing runs on it.
struct GpuHealth {
  bool idle = true;
  std::vector<std::string> reasons;   // why it is not idle
  std::vector<std::string> warnings;  // e.g. temperature
};
GpuHealth evaluate_health(const GpuInfo& gpu, const std::vector<ComputeApp>& apps_on_gpu);

}  // namespace croq
