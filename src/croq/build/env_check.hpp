// `croq env validate --dsl <dsl>` (the seeds' validate_env): is this machine ready to tune kernels
// of a dsl? One document {dsl, pass, errors, warnings, checks}: every error and warning is
// {check, message, fix}; `checks` holds what was found (versions, paths, GPUs, permissions).
//
//   every GPU dsl   nvcc and its version, a visible GPU (nvidia-smi), ncu, whether the GPU's
//                   performance counters may be read (the driver's RmProfilingAdminOnly in
//                   /proc/driver/nvidia/params, unless root) and perf_event_paranoid
//   croqtile        CHOREO_HOME, the choreo binary answering --help, CUTE_HOME with CuTe and
//                   CUTLASS headers (4.2.1 expected), choreo's runtime headers
//   triton          python3, `import torch`, `import triton` and torch seeing CUDA (in a child
//                   process with a time limit)
//   cpp             g++, OpenBLAS headers and library (the cpp baseline); no GPU needed
// Processes start through the process runner and files are read through `read`, so tests replay
// any machine.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "croq/build/toolchain.hpp"
#include "croq/util/json.hpp"

namespace croq {

struct EnvProbe {
  EnvLookup env = system_env();
  std::function<std::optional<std::string>(const std::filesystem::path&)> read;  // default: the real file
  std::function<bool(const std::filesystem::path&)> exists;                      // default: the real file system
  bool is_root = false;
  std::chrono::milliseconds python_timeout{120000};

  static EnvProbe system();
};

json validate_environment(const std::string& dsl, const EnvProbe& probe);

}  // namespace croq
