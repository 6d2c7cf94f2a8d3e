// The devices a sweep runs on: one worker per device, each pinned to it. For a GPU dsl they are the
// GPUs nvidia-smi lists (through the process runner); a GPU is healthy when it is listed, no other
// compute process is on it, it is idle (utilization <= 5 %), free of limiting clock reasons and
// below 85 C -- the from-scratch skill's check. croq never kills a process on a GPU nor resets one:
// an unhealthy GPU is skipped and reported.
//
// The cpp dsl measures on the host: one device, `cpu` (the CPU lease). The device list is
// injectable: CROQ_SWEEP_FAKE_DEVICES=N gives N fake devices cpu0..cpu<N-1>, each with a lease of
// its own (`croq measure` honours CROQ_DEVICE=cpu<i> on the cpp dsl), so tests and benchmarks run N
// pinned workers without a GPU; a file named by CROQ_SWEEP_FAKE_HEALTH ("<device> <reason>" lines,
// read at every check) marks fake devices unhealthy.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq::sweep {

struct Device {
  std::string id;       // what --device names: a GPU index, or cpu / cpu<i>
  std::string visible;  // CUDA_VISIBLE_DEVICES for the worker (UUID when known); empty on the CPU
  std::string lease_id; // the lease the worker's steps take
  std::string name;     // "NVIDIA H200", "host CPU (fake device 2)"
  json to_json() const;
};

class DeviceSource {
 public:
  virtual ~DeviceSource() = default;
  // Every device of the machine (an error when none can be listed).
  virtual std::vector<Device> list(std::string* error) = 0;
  // Why the device is not fit to run on now, or nullopt when it is healthy.
  virtual std::optional<std::string> unhealthy(const Device& d) = 0;
};

// The source for a dsl: fake devices when CROQ_SWEEP_FAKE_DEVICES is set, else the host CPU (cpp)
// or the GPUs.
std::unique_ptr<DeviceSource> device_source_for(const std::string& dsl);

// The devices `--gpus` picks: "all", or a comma-separated list of ids (GPU indexes, UUIDs, or the
// fake devices' names). Throws Error(usage) naming a device that is not there.
std::vector<Device> select_devices(const std::vector<Device>& all, const std::string& gpus);

// "cpu", "cpu0", "cpu12": a CPU lease slot (cpp dsl).
bool is_cpu_slot(const std::string& id);

}  // namespace croq::sweep
