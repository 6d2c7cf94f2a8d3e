// The timing-roofline CPU profile (cpu_profile.hpp).
#include "croq/profile/cpu_profile.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <thread>

#include "croq/profile/classifier.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/number.hpp"
#include "croq/util/text.hpp"

namespace croq::profile {

json CpuMachine::to_json() const {
  return {{"cores", cores}, {"mhz", mhz}, {"isa", isa}, {"f32_flop_per_cycle", f32_flop_per_cycle},
          {"peak_gflops", std::round(peak_gflops() * 10) / 10}, {"dram_gbps", dram_gbps}};
}

CpuMachine this_cpu() {
  CpuMachine m;
  m.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string info = read_file("/proc/cpuinfo").value_or("");
  if (info.find(" avx512f") != std::string::npos) {
    m.isa = "avx512";
    m.f32_flop_per_cycle = 64;  // 16 lanes x FMA x 2 units
  } else if (info.find(" avx2") != std::string::npos) {
    m.isa = "avx2";
    m.f32_flop_per_cycle = 32;  // 8 lanes x FMA x 2 units
  } else {
    m.isa = "sse";
    m.f32_flop_per_cycle = 8;
  }
  if (auto f = read_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")) {
    m.mhz = parse_decimal_number(trim(*f)).value_or(0) / 1000.0;
  }
  if (m.mhz <= 0) {
    auto pos = info.find("cpu MHz");
    if (pos != std::string::npos) {
      const auto colon = info.find(':', pos);
      const auto eol = info.find('\n', pos);
      if (colon != std::string::npos && colon < eol) {
        m.mhz = parse_decimal_number(trim(std::string_view(info).substr(colon + 1, eol - colon - 1))).value_or(0);
      }
    }
  }
  if (m.mhz <= 0) m.mhz = 2500;
  m.dram_gbps = 10.0 * m.cores;  // a conservative per-core share of memory bandwidth
  return m;
}

json classify_cpu_measurement(const json& mdoc, const CpuMachine& machine, const std::string& kernel) {
  if (!mdoc.contains("timing") || !mdoc["timing"].is_object()) {
    throw_usage("the measurement has no timing: the CPU profile needs a measured (PASS) candidate");
  }
  const json& t = mdoc["timing"];
  const double ms = get_number(t, "median_ms").value_or(0);
  const json& p = mdoc.value("problem", json::object());
  const double m = get_number(p, "m").value_or(0), n = get_number(p, "n").value_or(0), k = get_number(p, "k").value_or(0);
  if (ms <= 0 || m <= 0) throw_usage("the measurement has no median time or no problem size");
  // A 2:4 sparse product multiplies half of A: its real work is M N K multiply-adds' worth of
  // FLOPs, M N K (its TFLOPS count the dense-equivalent 2 M N K).
  const bool sparse = get_string(p, "op").value_or("matmul") == "gemm_sp";
  const double gflops = (sparse ? 1.0 : 2.0) * m * n * k / (ms * 1e6);
  const double peak = machine.peak_gflops();
  const double frac = gflops / peak;
  const double bytes = (m * k + k * n + m * n) * 4.0;
  const double gbps = bytes / (ms * 1e6);
  struct R {
    std::string rule, metric, op;
    double value, threshold;
    bool fired;
    std::string meaning;
  };
  std::vector<R> rules = {
      {"short_call", "timing.median_ms", "<", ms, k_cpu_launch_ms, ms < k_cpu_launch_ms,
       "the call is so short that call overhead and thread start dominate"},
      {"near_peak", "achieved/peak FLOP rate", ">=", frac, k_cpu_compute_frac, frac >= k_cpu_compute_frac,
       "the SIMD FMA units are the limit"},
      {"far_below_peak", "achieved/peak FLOP rate", "<", frac, k_cpu_memory_frac, frac < k_cpu_memory_frac,
       "far below peak: data movement (cache and register reuse) dominates a dense GEMM"},
      {"traffic_near_bandwidth", "minimum bytes / time (GB/s)", ">=", gbps, machine.dram_gbps * 0.6,
       gbps >= machine.dram_gbps * 0.6, "even the minimum traffic nears the memory bandwidth"},
  };
  Bottleneck b;
  std::string reason;
  double margin;
  if (rules[0].fired) {
    b = Bottleneck::launch_bound;
    reason = fmt::format("one call takes {:.3f} ms, under {} ms", ms, k_cpu_launch_ms);
    margin = k_cpu_launch_ms / ms;
  } else if (rules[1].fired) {
    b = Bottleneck::compute_bound;
    reason = fmt::format("{:.1f} GFLOPS is {:.0f}% of the {:.0f} GFLOPS peak", gflops, frac * 100, peak);
    margin = frac - k_cpu_compute_frac;
  } else if (rules[2].fired || rules[3].fired) {
    b = Bottleneck::memory_bound;
    reason = fmt::format("{:.1f} GFLOPS is only {:.1f}% of the {:.0f} GFLOPS peak", gflops, frac * 100, peak);
    margin = k_cpu_memory_frac - frac;
  } else {
    b = Bottleneck::latency_bound;
    reason = fmt::format("{:.1f} GFLOPS is {:.0f}% of peak: between the memory and compute lines, the FMA chains' "
                         "latency and too little independent work are the usual limit",
                         gflops, frac * 100);
    margin = std::min(frac - k_cpu_memory_frac, k_cpu_compute_frac - frac);
  }
  // Timing alone cannot see caches or stalls: confidence is at most medium.
  const double score = std::clamp(0.35 + margin * 1.5, 0.1, 0.7);
  const std::string confidence = score >= 0.5 ? "medium" : "low";
  json jr = json::array();
  std::vector<RuleResult> rr;
  for (const auto& r : rules) {
    jr.push_back({{"rule", r.rule}, {"metric", r.metric}, {"value", std::round(r.value * 1e4) / 1e4}, {"op", r.op},
                  {"threshold", r.threshold}, {"fired", r.fired}, {"meaning", r.meaning}});
    RuleResult x;
    x.rule = r.rule;
    x.fired = r.fired;
    rr.push_back(x);
  }
  json hints = json::array();
  for (const auto& h : menu_hints("cpp", b, ProfileMetrics{}, rr)) {
    hints.push_back({{"idea", h.idea}, {"menu", h.menu}, {"why", h.why}});
  }
  json key = {{"median_ms", ms},
              {"achieved_gflops", std::round(gflops * 100) / 100},
              {"peak_gflops", std::round(peak * 10) / 10},
              {"pct_of_peak", std::round(frac * 1000) / 10},
              {"min_traffic_gbps", std::round(gbps * 100) / 100}};
  json doc;
  doc["bottleneck"] = bottleneck_name(b);
  doc["confidence"] = confidence;
  doc["score"] = std::round(score * 100) / 100;
  doc["kernel"] = kernel;
  doc["method"] = "cpu-timing";
  doc["reason"] = reason;
  doc["evidence"] = {{"key_metrics", key}, {"rules", jr}, {"measurement", mdoc.value("candidate", json::object())}};
  doc["metrics"] = key;
  doc["machine"] = machine.to_json();
  doc["hints"] = hints;
  if (confidence != "high") {
    doc["hint"] = "timing-only CPU profile: no hardware counters; confirm with a second measurement shape if unsure";
  }
  return doc;
}

}  // namespace croq::profile
