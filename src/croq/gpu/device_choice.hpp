// The device a measurement runs on (croq measure, croq baseline, croq profile's CPU path): which
// GPU (or CPU lease slot), what the runner may see of it, its facts for the measurement document;
// its lease; and the contention checks around a timing.
#pragma once
#include <chrono>
#include <functional>
#include <string>

#include "croq/gpu/lease.hpp"
#include "croq/measure/measurement.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {

// The device the run will use, and its lease id.
struct DeviceChoice {
  std::string lease_id;  // "cpu", "cpu<i>", or the GPU's lease id
  // The runner sees only this device (CUDA_VISIBLE_DEVICES=<uuid>), so the candidate's own CUDA
  // runtime cannot pick another one. Empty on the CPU.
  std::string visible;
  DeviceFacts facts;  // name, key, uuid, clocks, the operator's peak
};

// dsl cpp: the CPU lease, or the slot cpu<i> named by `device_flag` (else CROQ_DEVICE: croq sweep's
// workers on fake devices each hold their own). Any other dsl: the GPU `device_flag` names (index or
// UUID; empty: CUDA_VISIBLE_DEVICES' first, else 0) as nvidia-smi reports it, with the peak of `op`
// at `dtype`. Throws no_device when there is no such GPU.
DeviceChoice choose_device(const std::string& dsl, const std::string& device_flag, const DtypePair& dtype,
                           const std::string& op);

// A line for a person while a measurement waits (for the lease, for the GPU to be idle).
using DeviceWaitNote = std::function<void(const std::string& line)>;

// The device's lease for `purpose`, waiting up to `timeout_s` (each holder met is noted).
DeviceLease take_device_lease(const DeviceChoice& dev, const std::string& purpose, double timeout_s,
                              const DeviceWaitNote& note, const std::string& who);

// Runs `measure` between two checks of the GPU for other work (contention.hpp): before, waiting up
// to `idle_timeout_s` for the device to be idle; after, once. A device still shared before, shared
// after, or on which the runner's samples saw another process makes the measurement contended: the
// flag, a warning, and the `contention` record. The CPU is not checked.
Measurement measure_uncontended(const DeviceChoice& dev, double idle_timeout_s, const DeviceWaitNote& note,
                                const std::string& who, const std::function<Measurement()>& measure);

// The same with the device taken at a gate: `measure` gets `gate`, which it calls (any number of
// times; the first call counts) once its runner is ready to use the device: the gate takes the
// lease (`take_lease`) and then waits for the device to be idle (the "before" check). The
// "after" check and the contention record follow only if the gate was opened; a measurement that
// never reached it (its runner failed before) did not use the device.
Measurement measure_uncontended_gated(const DeviceChoice& dev, double idle_timeout_s, const DeviceWaitNote& note,
                                      const std::string& who, const std::function<void()>& take_lease,
                                      const std::function<Measurement(const std::function<void()>& gate)>& measure);

}  // namespace croq
