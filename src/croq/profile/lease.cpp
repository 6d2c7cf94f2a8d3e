// The per-GPU lease taken by profiling (lease.hpp).
#include "croq/profile/lease.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "croq/util/error.hpp"

namespace croq::profile {

fs::path gpu_lease_path(int index) {
  const char* dir = std::getenv("CROQ_LEASE_DIR");
  fs::path base = dir && *dir ? fs::path(dir) : fs::temp_directory_path();
  return base / fmt::format("croq-gpu{}.lease", index);
}

FileLock take_gpu_lease(int index, std::chrono::milliseconds timeout, const std::string& purpose) {
  fs::path p = gpu_lease_path(index);
  ensure_dir(p.parent_path());
  auto lock = FileLock::try_acquire(p, timeout, purpose);
  if (!lock) {
    throw Error(ExitCode::busy,
                fmt::format("GPU {} is leased by another croq process ({}) and stayed busy for {} ms", index,
                            FileLock::describe_holder(p), timeout.count()),
                "wait for it to finish, or raise --lease-timeout");
  }
  return std::move(*lock);
}

int profile_gpu_index(const std::string& device_flag) {
  std::string v = device_flag;
  if (v.empty()) {
    const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
    if (cvd) {
      v = cvd;
      v = v.substr(0, v.find(','));
    }
  }
  if (v.empty()) return 0;
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || n < 0) return 0;  // a UUID: the lease is keyed by index 0
  return static_cast<int>(n);
}

}  // namespace croq::profile
