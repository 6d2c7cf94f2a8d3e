// The GPU lease a profile holds while ncu runs: an exclusive lock per GPU, so that a profile never
// overlaps a measurement or another profile on the same device (their replays would disturb each
// other's counters and timings). The gpu component owns the lease in general; this is the narrow
// call site profiling uses, taking the same kind of machine-wide lock file per GPU index.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "croq/util/fs.hpp"

namespace croq::profile {

// The lock file of GPU `index` (CROQ_LEASE_DIR, else the system temp folder: croq-gpu<index>.lease).
fs::path gpu_lease_path(int index);
// Waits up to `timeout`; throws Error(busy) naming the holder when the lease stays taken.
FileLock take_gpu_lease(int index, std::chrono::milliseconds timeout, const std::string& purpose);
// The GPU index croq profiles on: --device if given, else the first entry of CUDA_VISIBLE_DEVICES
// when it is a number, else 0.
int profile_gpu_index(const std::string& device_flag);

}  // namespace croq::profile
