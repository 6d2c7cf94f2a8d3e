// The device a measurement runs on, its lease, the contention checks around a timing
// (device_choice.hpp).
#include "croq/gpu/device_choice.hpp"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "croq/gpu/contention.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/measure/peak.hpp"
#include "croq/util/error.hpp"

namespace croq {

DeviceChoice choose_device(const std::string& dsl, const std::string& device_flag, const DtypePair& dtype,
                           const std::string& op) {
  DeviceChoice d;
  if (dsl == "cpp") {
    std::string slot = device_flag;
    if (slot.empty()) {
      if (const char* e = std::getenv("CROQ_DEVICE"); e && *e) slot = e;
    }
    // One CPU, one lease: every cpp measurement of the machine takes "cpu". The slots cpu<i> are
    // the fake devices of a test sweep (CROQ_SWEEP_FAKE_DEVICES) only; elsewhere a slot named on
    // the command line would be a lease of its own, and its measurements would overlap others on
    // the same cores.
    d.lease_id = "cpu";
    const char* fake = std::getenv("CROQ_SWEEP_FAKE_DEVICES");
    if (fake && *fake && slot.size() > 3 && slot.size() <= 7 && slot.rfind("cpu", 0) == 0 &&
        slot.find_first_not_of("0123456789", 3) == std::string::npos) {
      d.lease_id = slot;
    }
    d.facts.key = cpu_device_key();
    d.facts.name = "host CPU";
    return d;
  }
  std::string error;
  auto gpus = query_gpus(&error);
  auto g = select_gpu(gpus, device_flag);
  if (!g) {
    throw Error(ExitCode::no_device,
                gpus.empty() ? "no GPU: " + error
                             : fmt::format("device '{}' is not among the {} GPUs", device_flag, gpus.size()),
                "check `croq gpu check`; the cpp dsl measures on the CPU");
  }
  d.lease_id = lease_id_of(*g);
  d.visible = g->uuid.empty() ? std::to_string(g->index) : g->uuid;
  d.facts.name = g->name;
  d.facts.uuid = g->uuid;
  d.facts.compute_cap = g->compute_cap;
  d.facts.key = make_gpu_key(g->name, g->compute_cap);
  d.facts.driver = g->driver;
  if (g->sm_clock_mhz > 0) d.facts.sm_clock_mhz = g->sm_clock_mhz;
  if (g->max_sm_clock_mhz > 0) d.facts.max_sm_clock_mhz = g->max_sm_clock_mhz;
  int major = 0, minor = 0;
  std::sscanf(g->compute_cap.c_str(), "%d.%d", &major, &minor);
  PeakFigure peak = peak_for_operator(gpu_peak_tflops(g->name, major, minor, 0, g->max_sm_clock_mhz, dtype), op);
  d.facts.peak_tflops = peak.tflops;
  d.facts.peak_source = peak.source;
  return d;
}

DeviceLease take_device_lease(const DeviceChoice& dev, const std::string& purpose, double timeout_s,
                              const DeviceWaitNote& note, const std::string& who) {
  return DeviceLease::acquire(dev.lease_id, purpose, std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)),
                              [&](const std::string& holder) {
                                if (note) {
                                  note(fmt::format("{}: waiting for device {} ({}): held by {}", who, dev.facts.name,
                                                   dev.lease_id, holder.empty() ? "another process" : holder));
                                }
                              });
}

Measurement measure_uncontended(const DeviceChoice& dev, double idle_timeout_s, const DeviceWaitNote& note,
                                const std::string& who, const std::function<Measurement()>& measure) {
  return measure_uncontended_gated(dev, idle_timeout_s, note, who, [] {}, [&](const std::function<void()>& gate) {
    gate();
    return measure();
  });
}

Measurement measure_uncontended_gated(const DeviceChoice& dev, double idle_timeout_s, const DeviceWaitNote& note,
                                      const std::string& who, const std::function<void()>& take_lease,
                                      const std::function<Measurement(const std::function<void()>& gate)>& measure) {
  bool opened = false;
  double waited = 0;
  ContentionCheck before;
  const bool gpu = dev.lease_id != "cpu";
  auto gate = [&] {
    if (opened) return;
    take_lease();
    if (gpu) {
      before = wait_until_idle(
          dev.facts.uuid, std::chrono::milliseconds(static_cast<long long>(idle_timeout_s * 1000)),
          std::chrono::milliseconds(500),
          [&](const ContentionCheck& c) {
            std::string why;
            for (const auto& r : c.reasons) why += (why.empty() ? "" : "; ") + r;
            if (note) {
              note(fmt::format("{}: the GPU {} is not idle ({}); waiting up to {:.0f} s", who, dev.lease_id, why,
                               idle_timeout_s));
            }
          },
          &waited);
    }
    opened = true;
  };
  Measurement m = measure(gate);
  if (!gpu || !opened) return m;
  ContentionCheck after = check_contention(dev.facts.uuid, false);
  m.contention = contention_record(before, after, waited, m.device.other_processes);
  if (m.contended()) {
    m.flags.push_back(k_contended_flag);
    m.warnings.push_back("contended: " + m.contention_reason() +
                         ". The figures may be shown but are not a decision's evidence; measure again when the GPU is "
                         "idle (`croq gpu check --wait`, `croq gpu contention`)");
  }
  return m;
}

}  // namespace croq
