// Devices of a sweep (devices.hpp).
#include "croq/sweep/devices.hpp"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "croq/gpu/contention.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/gpu/lease.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"

namespace croq::sweep {

json Device::to_json() const { return {{"id", id}, {"visible", visible}, {"lease_id", lease_id}, {"name", name}}; }

bool is_cpu_slot(const std::string& id) {
  if (id.rfind("cpu", 0) != 0) return false;
  if (id.size() > 3 + 4) return false;
  for (size_t i = 3; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9') return false;
  }
  return true;
}

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == sep) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

class FakeDevices : public DeviceSource {
 public:
  explicit FakeDevices(int n) : m_n(n) {}
  std::vector<Device> list(std::string*) override {
    std::vector<Device> out;
    for (int i = 0; i < m_n; ++i) {
      Device d;
      d.id = fmt::format("cpu{}", i);
      d.lease_id = d.id;
      d.name = fmt::format("host CPU (fake device {})", i);
      out.push_back(d);
    }
    return out;
  }
  std::optional<std::string> unhealthy(const Device& d) override {
    const char* f = std::getenv("CROQ_SWEEP_FAKE_HEALTH");
    if (!f || !*f) return std::nullopt;
    auto text = read_file(f);
    if (!text) return std::nullopt;
    for (const auto& line : split_lines(*text)) {
      auto sp = line.find(' ');
      std::string id = line.substr(0, sp);
      if (id == d.id) return sp == std::string::npos ? std::string("marked unhealthy") : line.substr(sp + 1);
    }
    return std::nullopt;
  }

 private:
  int m_n;
};

class HostCpu : public DeviceSource {
 public:
  std::vector<Device> list(std::string*) override { return {Device{"cpu", "", "cpu", "host CPU"}}; }
  std::optional<std::string> unhealthy(const Device&) override { return std::nullopt; }
};

class Gpus : public DeviceSource {
 public:
  std::vector<Device> list(std::string* error) override {
    std::vector<Device> out;
    for (const auto& g : query_gpus(error)) {
      Device d;
      d.id = std::to_string(g.index);
      d.visible = g.uuid.empty() ? d.id : g.uuid;
      d.lease_id = lease_id_of(g);
      d.name = g.name;
      out.push_back(d);
    }
    return out;
  }
  std::optional<std::string> unhealthy(const Device& d) override {
    std::string error;
    for (const auto& g : query_gpus(&error)) {
      if (std::to_string(g.index) != d.id) continue;
      if (g.temperature_c >= 85) return fmt::format("temperature {} C (>= 85 C)", g.temperature_c);
      if (!g.uuid.empty()) {
        // Under the device's lease, as a measurement checks: with several workers on a device
        // (--workers-per-device), another worker's measurement or profile is not contention. The
        // utilization of the measurement just ended settles within a few samples.
        std::optional<DeviceLease> lease;
        try {
          lease.emplace(DeviceLease::acquire(d.lease_id, "croq sweep: health check of device " + d.id,
                                             std::chrono::minutes(30)));
        } catch (const Error& e) {
          return std::string("its lease stayed held for 30 minutes: ") + e.what();
        }
        ContentionCheck c = wait_until_idle(g.uuid, std::chrono::seconds(10), std::chrono::milliseconds(500));
        if (c.contended()) {
          std::string why;
          for (const auto& r : c.reasons) why += (why.empty() ? "" : "; ") + r;
          return "not idle: " + why;
        }
      }
      return std::nullopt;
    }
    return "not listed by nvidia-smi" + (error.empty() ? std::string() : ": " + error);
  }
};

}  // namespace

std::unique_ptr<DeviceSource> device_source_for(const std::string& dsl) {
  if (const char* f = std::getenv("CROQ_SWEEP_FAKE_DEVICES"); f && *f) {
    int n = std::atoi(f);
    if (n < 1 || n > 256) {
      throw_usage(fmt::format("CROQ_SWEEP_FAKE_DEVICES={} is not a number of devices (1-256)", f));
    }
    return std::make_unique<FakeDevices>(n);
  }
  if (dsl == "cpp") return std::make_unique<HostCpu>();
  return std::make_unique<Gpus>();
}

std::vector<Device> select_devices(const std::vector<Device>& all, const std::string& gpus) {
  if (gpus.empty() || gpus == "all") return all;
  std::vector<Device> out;
  std::set<std::string> seen;
  for (const auto& want : split(gpus, ',')) {
    std::string w = trim(want);
    if (w.empty()) continue;
    const Device* found = nullptr;
    for (const auto& d : all) {
      if (d.id == w || d.visible == w || d.lease_id == w) found = &d;
    }
    if (!found) {
      std::string names;
      for (const auto& d : all) names += (names.empty() ? "" : ", ") + d.id;
      throw_usage(fmt::format("--gpus names device '{}', which this machine does not have", w),
                  "devices here: " + (names.empty() ? std::string("none") : names) + "; or --gpus all");
    }
    if (seen.insert(found->id).second) out.push_back(*found);
  }
  if (out.empty()) throw_usage("--gpus names no device", "--gpus all, or a list such as 0,2");
  return out;
}

}  // namespace croq::sweep
