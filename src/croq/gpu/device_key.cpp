// Device keys and nvidia-smi queries (device_key.hpp).
#include "croq/gpu/device_key.hpp"
#include "croq/gpu/gpu_steps.hpp"

#include <sys/utsname.h>

#include <cstdlib>
#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/number.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\n')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

long to_long(const std::string& s) {
  try {
    return std::stol(s);
  } catch (...) {
    return 0;
  }
}

}  // namespace

std::string make_gpu_key(const std::string& name, const std::string& compute_cap) {
  std::string cc;
  for (char c : compute_cap) {
    if (c != '.') cc += c;
  }
  std::string n;
  for (char c : trim(name)) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') n += c;
    else if (!n.empty() && n.back() != '_') n += '_';
  }
  while (!n.empty() && n.back() == '_') n.pop_back();
  return fmt::format("sm{}_{}", cc, n);
}

std::string cpu_device_key() {
  struct utsname u{};
  std::string arch = "unknown";
  if (::uname(&u) == 0) arch = u.machine;
  return "cpu_" + arch;
}

std::vector<GpuInfo> parse_gpu_query(const std::string& csv) {
  std::vector<GpuInfo> out;
  size_t s = 0;
  while (s < csv.size()) {
    size_t e = csv.find('\n', s);
    std::string line = csv.substr(s, e == std::string::npos ? std::string::npos : e - s);
    s = e == std::string::npos ? csv.size() : e + 1;
    if (trim(line).empty()) continue;
    std::vector<std::string> f;
    size_t p = 0;
    while (p <= line.size()) {
      size_t c = line.find(',', p);
      f.push_back(trim(line.substr(p, c == std::string::npos ? std::string::npos : c - p)));
      if (c == std::string::npos) break;
      p = c + 1;
    }
    if (f.size() < 4) continue;
    GpuInfo g;
    g.index = static_cast<int>(to_long(f[0]));
    g.name = f[1];
    g.uuid = f[2];
    g.compute_cap = f[3];
    if (f.size() > 4) g.driver = f[4];
    if (f.size() > 5) g.pci_bus_id = f[5];
    if (f.size() > 6) g.memory_total_mib = to_long(f[6]);
    if (f.size() > 7) g.memory_used_mib = to_long(f[7]);
    if (f.size() > 8) g.utilization_pct = static_cast<int>(to_long(f[8]));
    if (f.size() > 9) g.temperature_c = static_cast<int>(to_long(f[9]));
    if (f.size() > 10) g.sm_clock_mhz = static_cast<int>(to_long(f[10]));
    if (f.size() > 11) g.max_sm_clock_mhz = static_cast<int>(to_long(f[11]));
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<GpuInfo> query_gpus(std::string* error) { return query_gpus(process_runner(), error); }

std::vector<GpuInfo> query_gpus(ProcessRunner& runner, std::string* error) {
  ProcessSpec spec;
  spec.argv = {"nvidia-smi", std::string("--query-gpu=") + k_gpu_query_fields,
               "--format=csv,noheader,nounits"};
  spec.timeout = std::chrono::milliseconds(20000);
  spec.env_unset = {"CUDA_VISIBLE_DEVICES"};
  ProcessResult r = runner.run(spec);
  if (!r.started) {
    if (error) *error = "nvidia-smi not found: no NVIDIA driver on this machine";
    return {};
  }
  if (!r.ok()) {
    if (error) *error = "nvidia-smi failed (" + r.describe() + "): " + trim(r.err.empty() ? r.out : r.err);
    return {};
  }
  auto gpus = parse_gpu_query(r.out);
  if (gpus.empty() && error) *error = "nvidia-smi lists no GPU";
  return gpus;
}

std::optional<GpuInfo> select_gpu(const std::vector<GpuInfo>& gpus, const std::string& device_flag) {
  if (gpus.empty()) return std::nullopt;
  std::string want = device_flag;
  if (want.empty()) {
    if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES"); cvd && *cvd) {
      std::string v = cvd;
      want = v.substr(0, v.find(','));
    }
  }
  if (want.empty()) return gpus.front();
  for (const auto& g : gpus) {
    if (g.uuid == want || (want.size() > 4 && g.uuid.rfind(want, 0) == 0)) return g;
  }
  if (auto idx = parse_decimal_integer(want)) {
    for (const auto& g : gpus) {
      if (g.index == *idx) return g;
    }
  }
  return std::nullopt;
}

std::string resolve_device_key(const std::string& flag, const std::string& dsl) {
  // dsl cpp runs on the CPU: its tasks are filed under a CPU key, never a GPU's (its measurements
  // name the CPU, and would stand in a GPU's tree beside that GPU's).
  const bool cpu_dsl = dsl == "cpp";
  if (!flag.empty()) {
    validate_gpu_key(flag);
    if (cpu_dsl && flag.rfind("cpu_", 0) != 0) {
      throw_usage(fmt::format("dsl cpp runs on the CPU; --gpu {} names a GPU", flag),
                  fmt::format("leave --gpu out (this CPU's key is {}), or pass a CPU key cpu_<name>", cpu_device_key()));
    }
    return flag;
  }
  if (const char* env = std::getenv("CROQ_GPU"); env && *env && !(cpu_dsl && std::string(env).rfind("cpu_", 0) != 0)) {
    validate_gpu_key(env);
    return env;
  }
  if (dsl == "cpp") return cpu_device_key();
  std::string error;
  auto gpus = query_gpus(&error);
  auto g = select_gpu(gpus, "");
  if (!g) {
    throw Error(ExitCode::no_device,
                fmt::format("cannot tell the GPU key: {}", error.empty() ? "no matching GPU" : error),
                "pass --gpu <key> (e.g. --gpu sm90_NVIDIA_H200) or set CROQ_GPU; the cpp dsl needs no GPU");
  }
  return make_gpu_key(g->name, g->compute_cap);
}

}  // namespace croq
