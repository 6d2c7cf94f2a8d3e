// The exclusive lease on one device: while croq measures, profiles, takes a baseline or runs the
// GPU tests on a GPU, no other croq process does, so two of them never share a device and skew
// each other (an Nsight Compute replay during a timing, two timings at once).
//
// There is one lease per device and one implementation: this one. Every step that runs the GPU
// takes it (croq measure, croq baseline, croq profile, croq gpu lease -- CMD for scripts and the
// GPU tests), and the dashboard and `croq gpu check` read the same file.
//
// The lease is an flock(2) on /tmp/croq-gpu-<device id>.lock (CROQ_LEASE_DIR overrides the folder),
// the device id being the GPU's UUID ("GPU-8d6b5f52-..."), or "gpu<index>" when nvidia-smi cannot
// tell the UUID, or "cpu" for the cpp backend. /tmp is shared by every user of the machine, so
// leases exclude across users too: lock files are created mode 0666. The kernel releases the lock
// when its holder dies, so a crashed croq never leaves a stale lease.
// The holder writes one line into the file ("pid 123 user alice since 2026-...: croq measure
// iter004_x"), which a waiting process prints so that its user knows what it waits for.
//
// Every acquisition and release is also appended, while the lock is held, to the device's lease
// history (croq-gpu-<device id>.history, one JSON object a line: event, pid, user, purpose, at,
// t_ms): the record that shows which steps held the device when, and that none overlapped. It
// is rotated to .history.1 past 256 KiB.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq {

struct GpuInfo;

// The lease id of a GPU: its UUID, else "gpu<index>".
std::string lease_id_of(const GpuInfo& gpu);
// The lease id of the GPU `device_flag` names (an index or a UUID; empty: CUDA_VISIBLE_DEVICES'
// first, else 0), asking nvidia-smi for its UUID. Without nvidia-smi: a UUID flag as given, else
// "gpu<index>".
std::string resolve_gpu_lease_id(const std::string& device_flag);

// Whether a lease is held now, and by whom; read without taking it (nothing is written).
struct LeaseState {
  std::string device_id;
  std::filesystem::path path;
  bool held = false;
  std::string holder;  // the holder's line ("" when free)
  json to_json() const;
};

class DeviceLease {
 public:
  DeviceLease(DeviceLease&& other) noexcept;
  DeviceLease& operator=(DeviceLease&&) = delete;
  DeviceLease(const DeviceLease&) = delete;
  ~DeviceLease();

  static std::filesystem::path lock_path(const std::string& device_id);
  static std::filesystem::path history_path(const std::string& device_id);

  // Takes the lease without waiting; nullopt if someone holds it.
  static std::optional<DeviceLease> try_acquire(const std::string& device_id, const std::string& purpose);
  // Takes the lease, waiting up to `timeout`. Calls `on_wait(holder)` once if it has to wait.
  // Throws Error(busy) naming the holder when the time is up.
  static DeviceLease acquire(const std::string& device_id, const std::string& purpose,
                             std::chrono::milliseconds timeout,
                             const std::function<void(const std::string& holder)>& on_wait = {});
  // The holder's line, or empty when the lease is free (or was never taken).
  static std::string holder(const std::string& device_id);
  // Held or free, probed with a non-blocking lock that is let go at once.
  static LeaseState state(const std::string& device_id);
  // The lease history's entries, oldest first (the rotated file's, then the current one's).
  static std::vector<json> history(const std::string& device_id);

  const std::string& device_id() const { return m_device_id; }
  std::chrono::milliseconds waited() const { return m_waited; }
  const std::string& acquired_at() const { return m_acquired_at; }

 private:
  DeviceLease() = default;
  static std::optional<DeviceLease> try_take(const std::string& device_id, const std::string& purpose);
  static DeviceLease held(const std::string& device_id, const std::string& purpose, int fd);
  void record(const char* event) const;
  std::string m_device_id;
  std::string m_purpose;
  std::string m_acquired_at;
  int m_fd = -1;
  double m_acquired_ms = 0;
  std::chrono::milliseconds m_waited{0};
};

}  // namespace croq
