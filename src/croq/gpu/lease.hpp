// The exclusive lease on one device: while croq measures (or profiles, or takes a baseline) on a
// GPU, no other croq process does, so two measurements never share a device and skew each other.
//
// The lease is an flock(2) on /tmp/croq-gpu-<device id>.lock (CROQ_LEASE_DIR overrides the folder),
// the device id being the GPU's UUID (or "cpu" for the cpp backend). /tmp is shared by every user
// of the machine, so leases exclude across users too: lock files are created mode 0666. The
// kernel releases the lock when its holder dies, so a crashed croq never leaves a stale lease.
// The holder writes one line into the file ("pid 123 user alice since 2026-...: croq measure
// iter004_x"), which a waiting process prints so that its user knows what it waits for.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace croq {

class DeviceLease {
 public:
  DeviceLease(DeviceLease&& other) noexcept;
  DeviceLease& operator=(DeviceLease&&) = delete;
  DeviceLease(const DeviceLease&) = delete;
  ~DeviceLease();

  static std::filesystem::path lock_path(const std::string& device_id);

  // Takes the lease without waiting; nullopt if someone holds it.
  static std::optional<DeviceLease> try_acquire(const std::string& device_id, const std::string& purpose);
  // Takes the lease, waiting up to `timeout`. Calls `on_wait(holder)` once if it has to wait.
  // Throws Error(busy) naming the holder when the time is up.
  static DeviceLease acquire(const std::string& device_id, const std::string& purpose,
                             std::chrono::milliseconds timeout,
                             const std::function<void(const std::string& holder)>& on_wait = {});
  // The holder's line, or empty when the lease is free (or was never taken).
  static std::string holder(const std::string& device_id);

  const std::string& device_id() const { return m_device_id; }
  std::chrono::milliseconds waited() const { return m_waited; }

 private:
  DeviceLease() = default;
  std::string m_device_id;
  int m_fd = -1;
  std::chrono::milliseconds m_waited{0};
};

}  // namespace croq
