// croq gpu key | check | contention as functions: the GPU as nvidia-smi reports it, whether it is
// idle enough for a measurement (waiting for it with `wait`), and the processes on it — croq's own
// (stale ones may be ended) and others' (never touched). src/cli parses; tests call these with a
// fake process runner answering nvidia-smi.
#pragma once
#include <string>
#include <vector>

#include "croq/gpu/device_key.hpp"
#include "croq/gpu/processes.hpp"
#include "croq/util/json.hpp"
#include "croq/util/step.hpp"

namespace croq {

// query_gpus and query_compute_apps (device_key.hpp, processes.hpp) through the runner given
// (defined beside them; the forms without a runner use the process-wide one).
std::vector<GpuInfo> query_gpus(ProcessRunner& runner, std::string* error);
std::optional<std::vector<ComputeApp>> query_compute_apps(ProcessRunner& runner, std::string* error);

// One GPU as croq's documents show it (index, name, uuid, key, clocks, memory, ...).
json gpu_json(const GpuInfo& g);

// The GPU `device` names (index or UUID; empty: CUDA_VISIBLE_DEVICES' first, else 0). Throws
// no_device when there is no GPU or no such one, naming the GPUs there are.
GpuInfo selected_gpu(ProcessRunner& runner, const std::string& device);

// croq gpu key: the device and its key.
StepResult run_gpu_key(const std::string& device, const StepDeps& deps);

struct GpuCheckOptions {
  std::string device;
  bool wait = false;       // poll until the GPU is idle, or timeout_s
  double timeout_s = 120;
  double interval_s = 2;
};
// croq gpu check: {idle, device, reasons, warnings, processes, lease, waited_ms}; ok when idle,
// else busy (with wait) or failure.
StepResult run_gpu_check(const GpuCheckOptions& o, const StepDeps& deps);

struct GpuContentionOptions {
  std::string device;       // only this GPU (default: every GPU)
  bool kill = false;        // end croq's own stale processes
  std::vector<int> except;  // pids never to end
};
// croq gpu contention: the processes on the GPU(s), ours / stale / foreign, and those ended.
StepResult run_gpu_contention(const GpuContentionOptions& o, const StepDeps& deps);

}  // namespace croq
