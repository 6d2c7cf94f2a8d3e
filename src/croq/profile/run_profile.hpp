// croq profile as a function: Nsight Compute on exactly one launch of a candidate (the measurement
// runner's profile mode: one launch after the warm-up inside the NVTX range `croq_candidate`), the
// Python runner's for a Triton module, or a legacy self-timed binary; under the device's lease;
// the report and CSV written as perf/<key>/<model>/ncu_<kernel>_round<R>.{ncu-rep,csv}; the captured
// kernel classified; the protocol's evidence recorded. The cpp dsl has no Nsight Compute: a timing
// roofline of the CPU runner's verified measurement (cpu_profile.hpp) instead, with the same
// evidence. src/cli parses the options; tests call these directly.
#pragma once
#include <string>
#include <vector>

#include "croq/profile/ncu_runner.hpp"
#include "croq/util/step.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::profile {

struct ProfileOptions {
  std::string iter;                      // the candidate: iter<NNN>_<tag> (or iter<NNN>)
  int round = -1;                        // for the file names; <0: the task's next round
  std::string library;                   // the library baseline instead (cublas, ...)
  bool baseline = false;                 // the task's library baseline (cublas, cusparselt, openblas)
  std::string binary;                    // a legacy executable
  std::vector<std::string> binary_args;
  std::string preset = "full";           // full | quick
  std::string kernel_name;               // only kernels whose name matches this regex
  int launch_skip = -1;                  // <0: 0 with NVTX, 1 for a binary
  int warmup = 3;
  long long seed = 1;
  std::string b_layout = "auto";         // row | col | auto
  std::string ncu;                       // default: CROQ_NCU, else ncu on PATH
  std::string runner;                    // default: CROQ_GPU_RUNNER, else croq-gpu-runner beside croq
  std::string device;                    // the GPU to lease (index or UUID)
  int timeout_s = 600;
  double lease_timeout_s = 600;          // seconds, as `croq measure --lease-timeout`
  bool no_classify = false;
};

// What ncu runs for a GPU task and the kernel name the files carry: the runner's command line in
// its profile mode (candidate .so or --library), the Python runner's for a Triton module (ncu kept
// to the module's @triton.jit kernels), or the legacy binary (launch skip 1, set-up kernels
// filtered out). `o.library` and `o.round` as run_profile resolves them. Throws not_found / usage
// for a candidate or runner that is not there.
struct ProfileCapture {
  NcuCapture capture;
  std::string kernel;
};
ProfileCapture profile_capture(const Workspace& ws, const TaskRef& task, const ProfileOptions& o);

StepResult run_profile(Workspace& ws, const TaskRef& task, const ProfileOptions& o, const StepDeps& deps);

}  // namespace croq::profile
