// Whether a GPU is shared while croq times on it. The lease keeps croq's own steps apart; this
// looks for everything else: a compute process of another user, container or program on the
// device, or a clock limit that slows the GPU for reasons not of the measurement's making.
//
// Checked through nvidia-smi (the process runner, so tests replay its answers), on the one GPU a
// measurement uses:
//   before  every compute process on the device (the runner has not started yet, so any is
//           someone else's: another user's job, a stale runner, a notebook holding a context);
//           utilization above 5 %; a limiting clock reason (software power cap, hardware
//           slowdown, thermal, power brake) on a GPU that should be idle;
//   after   every compute process on the device (the runner has exited); a hardware clock limit
//           (hardware slowdown, thermal, power brake -- not the software power cap, which the
//           measurement's own load may have raised).
// Before the measurement croq waits for the device to be idle up to a limit; a device still
// shared then, or shared after, or on which the runner's own NVML samples saw another process,
// makes the measurement contended (docs/measurement.md).
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "croq/gpu/processes.hpp"
#include "croq/util/json.hpp"

namespace croq {

struct ContentionCheck {
  std::string when;  // "before" | "after"
  std::string at;    // ISO time
  bool processes_listed = false;
  std::vector<GpuProcess> processes;       // compute processes on the device
  std::optional<int> utilization_pct;      // read before only
  std::optional<uint64_t> clock_reasons;   // nvidia-smi's active clock event reasons
  std::vector<std::string> reasons;        // why it counts as shared ("pid 4242 python3 ...")
  std::vector<std::string> errors;         // what could not be read
  bool contended() const { return !reasons.empty(); }
  json to_json() const;
};

// The clock reasons that make a device shared: before (idle) every limiting one, after only the
// hardware ones.
inline constexpr uint64_t k_contention_clock_reasons_before = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
inline constexpr uint64_t k_contention_clock_reasons_after = 0x8 | 0x20 | 0x40 | 0x80;

// Parses `nvidia-smi --query-gpu=uuid,utilization.gpu,<reasons field> --format=csv,noheader,nounits`
// for the GPU `uuid` (other lines are ignored): utilization and the reasons mask ("0x...").
struct GpuLoad {
  std::optional<int> utilization_pct;
  std::optional<uint64_t> clock_reasons;
};
std::optional<GpuLoad> parse_gpu_load(const std::string& csv, const std::string& uuid);

// One check of the device `uuid` (through nvidia-smi and /proc).
ContentionCheck check_contention(const std::string& uuid, bool before, ProcReader& proc);
ContentionCheck check_contention(const std::string& uuid, bool before);

// Checks before a measurement, again every `interval` until the device is idle or `timeout` has
// passed; `on_wait(check)` is called once when it has to wait. Returns the last check.
ContentionCheck wait_until_idle(const std::string& uuid, std::chrono::milliseconds timeout,
                                std::chrono::milliseconds interval,
                                const std::function<void(const ContentionCheck&)>& on_wait = {},
                                double* waited_ms = nullptr);

// The contention object of a measurement (measurement.hpp): before, after, what the runner's
// samples saw (`other_processes`), and the verdict.
json contention_record(const ContentionCheck& before, const ContentionCheck& after, double waited_ms,
                       std::optional<int> other_processes);

}  // namespace croq
