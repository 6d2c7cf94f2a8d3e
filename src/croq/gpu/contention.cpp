// Contention on a GPU around a measurement (contention.hpp).
#include "croq/gpu/contention.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "croq/measure/measurement.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq {

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) f.push_back(trim(cell));
  return f;
}

ProcessResult run_smi(const std::vector<std::string>& args) {
  ProcessSpec spec;
  spec.argv = {"nvidia-smi"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::milliseconds(20000);
  spec.env_unset = {"CUDA_VISIBLE_DEVICES"};
  return process_runner().run(spec);
}

std::string smi_error(const ProcessResult& r) {
  return r.started ? "nvidia-smi failed (" + r.describe() + "): " + trim(r.err.empty() ? r.out : r.err)
                   : std::string("nvidia-smi not found");
}

// Utilization and clock reasons of one GPU. Newer drivers call the reasons "clocks_event_reasons",
// older ones "clocks_throttle_reasons"; the first that nvidia-smi accepts is used from then on.
std::optional<GpuLoad> query_load(const std::string& uuid, std::string& error) {
  static int field = 0;
  static const char* const names[] = {"clocks_event_reasons.active", "clocks_throttle_reasons.active"};
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int f = (field + attempt) % 2;
    ProcessResult r = run_smi({std::string("--query-gpu=uuid,utilization.gpu,") + names[f], "--format=csv,noheader,nounits"});
    if (r.ok()) {
      field = f;
      auto load = parse_gpu_load(r.out, uuid);
      if (!load) error = "nvidia-smi did not list the GPU " + uuid;
      return load;
    }
    error = smi_error(r);
    if (!r.started) break;
  }
  return std::nullopt;
}

std::string describe(const GpuProcess& p) {
  std::string s = fmt::format("pid {} {}", p.app.pid, p.app.name.empty() ? std::string("(no name)") : p.app.name);
  if (p.app.used_memory_mib > 0) s += fmt::format(" ({} MiB)", p.app.used_memory_mib);
  if (!p.why.empty()) s += ": " + p.why;
  return s;
}

}  // namespace

std::optional<GpuLoad> parse_gpu_load(const std::string& csv, const std::string& uuid) {
  for (const std::string& raw : split_lines(csv)) {
    std::vector<std::string> f = split_csv_line(raw);
    if (f.size() < 3 || f[0] != uuid) continue;
    GpuLoad load;
    char* end = nullptr;
    long u = std::strtol(f[1].c_str(), &end, 10);
    if (end != f[1].c_str() && *end == '\0' && u >= 0 && u <= 100) load.utilization_pct = static_cast<int>(u);
    const std::string& m = f[2];
    if (m.size() > 2 && m.size() <= 18 && (m.rfind("0x", 0) == 0 || m.rfind("0X", 0) == 0) &&
        m.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos) {
      load.clock_reasons = std::strtoull(m.c_str() + 2, nullptr, 16);
    }
    return load;
  }
  return std::nullopt;
}

json ContentionCheck::to_json() const {
  json procs = json::array();
  for (const auto& p : processes) {
    json j = {{"pid", p.app.pid}, {"name", p.app.name}, {"used_memory_mib", p.app.used_memory_mib},
              {"ours", p.ours},   {"stale", p.stale},   {"why", p.why}};
    if (p.facts) j["uid"] = p.facts->uid;
    procs.push_back(j);
  }
  return {{"when", when},
          {"at", at},
          {"contended", contended()},
          {"reasons", reasons},
          {"processes_listed", processes_listed},
          {"processes", procs},
          {"utilization_pct", utilization_pct ? json(*utilization_pct) : json(nullptr)},
          {"clock_reasons", clock_reasons ? json(clock_reason_names(*clock_reasons)) : json(nullptr)},
          {"errors", errors}};
}

ContentionCheck check_contention(const std::string& uuid, bool before, ProcReader& proc) {
  ContentionCheck c;
  c.when = before ? "before" : "after";
  c.at = now_iso8601();
  std::string error;
  if (auto apps = query_compute_apps(&error)) {
    c.processes_listed = true;
    std::vector<ComputeApp> on_gpu;
    for (const auto& a : *apps) {
      if (a.gpu_uuid.empty() || a.gpu_uuid == uuid) on_gpu.push_back(a);
    }
    c.processes = classify_processes(on_gpu, proc, static_cast<int>(::getuid()));
    for (const auto& p : c.processes) c.reasons.push_back("compute process " + describe(p));
  } else {
    c.errors.push_back("the compute processes could not be listed: " + error);
  }
  error.clear();
  if (auto load = query_load(uuid, error)) {
    c.clock_reasons = load->clock_reasons;
    if (before) {
      c.utilization_pct = load->utilization_pct;
      if (load->utilization_pct && *load->utilization_pct > 5) {
        c.reasons.push_back(fmt::format("utilization {} % with no measurement running", *load->utilization_pct));
      }
    }
    const uint64_t limiting = before ? k_contention_clock_reasons_before : k_contention_clock_reasons_after;
    if (load->clock_reasons && (*load->clock_reasons & limiting)) {
      std::string names;
      for (const auto& n : clock_reason_names(*load->clock_reasons & limiting)) names += (names.empty() ? "" : ", ") + n;
      c.reasons.push_back("clock limit " + names);
    }
  } else {
    c.errors.push_back("the clock reasons could not be read: " + error);
  }
  return c;
}

ContentionCheck check_contention(const std::string& uuid, bool before) {
  SystemProcReader reader;
  return check_contention(uuid, before, reader);
}

ContentionCheck wait_until_idle(const std::string& uuid, std::chrono::milliseconds timeout,
                                std::chrono::milliseconds interval,
                                const std::function<void(const ContentionCheck&)>& on_wait, double* waited_ms) {
  Stopwatch clock;
  bool told = false;
  for (;;) {
    ContentionCheck c = check_contention(uuid, true);
    if (!c.contended() || clock.elapsed_ms() >= static_cast<double>(timeout.count())) {
      if (waited_ms) *waited_ms = clock.elapsed_ms();
      return c;
    }
    if (!told && on_wait) on_wait(c);
    told = true;
    std::this_thread::sleep_for(interval);
  }
}

json contention_record(const ContentionCheck& before, const ContentionCheck& after, double waited_ms,
                       std::optional<int> other_processes) {
  std::vector<std::string> reasons;
  for (const auto& r : before.reasons) reasons.push_back("before: " + r);
  if (other_processes && *other_processes > 0) {
    reasons.push_back(fmt::format("during: {} other compute process{} on the device while it was timed",
                                  *other_processes, *other_processes == 1 ? "" : "es"));
  }
  for (const auto& r : after.reasons) reasons.push_back("after: " + r);
  return {{"contended", !reasons.empty()},
          {"reasons", reasons},
          {"waited_ms", std::round(waited_ms)},
          {"other_processes", other_processes ? json(*other_processes) : json(nullptr)},
          {"before", before.to_json()},
          {"after", after.to_json()}};
}

}  // namespace croq
