// Extraction of the engineer's figures from one profiled kernel (metrics.hpp). Each figure has a
// list of places to look: raw-page metric names first (the exact ncu metric), then the long form's
// "<Section Name>/<Metric Name>" as `--section X --csv` and `--page details --csv` print them.
#include "croq/profile/metrics.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "croq/util/text.hpp"

namespace croq::profile {

const std::vector<std::string>& stall_reasons() {
  static const std::vector<std::string> r = {
      "long_scoreboard", "barrier",       "mio_throttle", "lg_throttle",   "math_pipe_throttle",
      "wait",            "not_selected",  "selected",     "short_scoreboard", "tex_throttle",
      "membar",          "gmma",          "warpgroup_arrive", "branch_resolving", "dispatch_stall",
      "drain",           "imc_miss",      "no_instruction", "sleeping",    "misc"};
  return r;
}

namespace {

std::string unit_base(const std::string& unit) {
  std::string u = to_lower(trim(unit));
  size_t slash = u.find('/');
  if (slash != std::string::npos) u = u.substr(0, slash);  // "Kbyte/block" -> "kbyte"
  return u;
}

}  // namespace

std::optional<double> to_microseconds(double v, const std::string& unit) {
  std::string u = unit_base(unit);
  if (u == "ns" || u == "nsecond" || u == "nanosecond") return v / 1000.0;
  if (u == "us" || u == "usecond" || u == "microsecond") return v;
  if (u == "ms" || u == "msecond" || u == "millisecond") return v * 1000.0;
  if (u == "s" || u == "second") return v * 1e6;
  return std::nullopt;
}

std::optional<double> to_bytes(double v, const std::string& unit) {
  std::string u = unit_base(unit);
  if (u == "byte" || u == "bytes" || u == "b" || u.empty()) return v;
  if (u == "kbyte" || u == "kb") return v * 1e3;
  if (u == "mbyte" || u == "mb") return v * 1e6;
  if (u == "gbyte" || u == "gb") return v * 1e9;
  if (u == "tbyte" || u == "tb") return v * 1e12;
  if (u == "kibyte" || u == "kib") return v * 1024.0;
  if (u == "mibyte" || u == "mib") return v * 1048576.0;
  if (u == "gibyte" || u == "gib") return v * 1073741824.0;
  return std::nullopt;
}

std::optional<double> to_hertz(double v, const std::string& unit) {
  std::string u = to_lower(trim(unit));
  if (u == "hz" || u == "cycle/second") return v;
  if (u == "khz" || u == "cycle/msecond") return v * 1e3;
  if (u == "mhz" || u == "cycle/usecond") return v * 1e6;
  if (u == "ghz" || u == "cycle/nsecond") return v * 1e9;
  return std::nullopt;
}

std::map<std::string, double> ProfileMetrics::stall_shares() const {
  if (!stall_pct_of_samples.empty()) return stall_pct_of_samples;
  std::map<std::string, double> out;
  double total = 0;
  for (const auto& [r, v] : stall_per_issue) {
    if (r != "selected") total += v;
  }
  if (total <= 0) return out;
  for (const auto& [r, v] : stall_per_issue) {
    if (r != "selected") out[r] = v / total * 100.0;
  }
  return out;
}

namespace {

using Convert = std::function<std::optional<double>(double, const std::string&)>;

std::optional<double> identity_unit(double v, const std::string&) { return v; }

class Extractor {
 public:
  Extractor(const KernelProfile& k, ProfileMetrics& m) : m_k(k), m_m(m) {}

  // The first of `keys` that the kernel has as a number, converted by `conv`.
  Figure get(std::initializer_list<const char*> keys, const Convert& conv = identity_unit) {
    for (const char* key : keys) {
      const MetricValue* v = m_k.find(key);
      if (!v || !v->number) continue;
      auto c = conv(*v->number, v->unit);
      if (!c) {
        m_m.warnings.push_back(fmt::format("unit \"{}\" of {} is not understood; the figure is left out", v->unit, key));
        continue;
      }
      return Figure{c, key};
    }
    return Figure{};
  }

 private:
  const KernelProfile& m_k;
  ProfileMetrics& m_m;
};

// "(2, 66, 1)" -> 132
std::optional<double> dims_product(const std::string& text) {
  double product = 1;
  int count = 0;
  std::string num;
  auto flush = [&] {
    if (num.empty()) return true;
    auto v = parse_ncu_number(num);
    num.clear();
    if (!v) return false;
    product *= *v;
    ++count;
    return true;
  };
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      num.push_back(c);
    } else if (c == ',' || c == ')' || c == ' ') {
      if (!flush()) return std::nullopt;
    } else if (c != '(') {
      return std::nullopt;
    }
  }
  if (!flush() || count == 0) return std::nullopt;
  return product;
}

}  // namespace

ProfileMetrics extract_metrics(const KernelProfile& k) {
  ProfileMetrics m;
  m.kernel = k.name;
  m.kernel_id = k.id;
  m.cc = k.cc;
  m.grid_size = k.grid_size;
  m.block_size = k.block_size;
  m.ncu_rules = k.rule_messages;
  if (const MetricValue* d = k.find("device__attribute_display_name")) m.device = d->text;
  Extractor x(k, m);
  const char* sol = "GPU Speed Of Light Throughput/";
  auto S = [&](const char* metric) { return std::string(sol) + metric; };
  std::string sol_sm = S("Compute (SM) Throughput"), sol_mem = S("Memory Throughput"), sol_dram = S("DRAM Throughput"),
              sol_l1 = S("L1/TEX Cache Throughput"), sol_l2 = S("L2 Cache Throughput"), sol_dur = S("Duration"),
              sol_freq = S("SM Frequency");

  m.sm_throughput_pct = x.get({"sm__throughput.avg.pct_of_peak_sustained_elapsed", sol_sm.c_str()});
  m.memory_throughput_pct = x.get({"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", sol_mem.c_str()});
  m.dram_throughput_pct = x.get({"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                                 "dram__throughput.avg.pct_of_peak_sustained_elapsed", sol_dram.c_str()});
  m.l1tex_throughput_pct = x.get({"l1tex__throughput.avg.pct_of_peak_sustained_active", sol_l1.c_str()});
  m.l2_throughput_pct = x.get({"lts__throughput.avg.pct_of_peak_sustained_elapsed", sol_l2.c_str()});
  m.shared_throughput_pct = x.get({"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed"});
  m.tensor_pipe_pct = x.get({"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
                             "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                             "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                             "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_elapsed"});
  m.fma_pipe_pct = x.get({"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                          "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed",
                          "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"});
  m.issue_slot_pct = x.get({"sm__issue_active.avg.pct_of_peak_sustained_elapsed",
                            "Compute Workload Analysis/Issue Slots Busy"});
  m.executed_ipc = x.get({"sm__inst_executed.avg.per_cycle_active", "Compute Workload Analysis/Executed Ipc Active"});
  m.eligible_warps_per_scheduler = x.get({"smsp__warps_eligible.avg.per_cycle_active",
                                          "Scheduler Statistics/Eligible Warps Per Scheduler"});
  m.no_eligible_pct = x.get({"smsp__issue_inst0.avg.pct_of_peak_sustained_active", "Scheduler Statistics/No Eligible"});

  m.achieved_occupancy_pct = x.get({"sm__warps_active.avg.pct_of_peak_sustained_active", "Occupancy/Achieved Occupancy"});
  m.theoretical_occupancy_pct = x.get({"sm__maximum_warps_per_active_cycle_pct", "Occupancy/Theoretical Occupancy"});
  const std::pair<const char*, std::pair<const char*, const char*>> limits[] = {
      {"registers", {"launch__occupancy_limit_registers", "Occupancy/Block Limit Registers"}},
      {"shared_mem", {"launch__occupancy_limit_shared_mem", "Occupancy/Block Limit Shared Mem"}},
      {"warps", {"launch__occupancy_limit_warps", "Occupancy/Block Limit Warps"}},
      {"blocks", {"launch__occupancy_limit_blocks", "Occupancy/Block Limit SM"}},
      {"barriers", {"launch__occupancy_limit_barriers", "Occupancy/Block Limit Barriers"}},
  };
  for (const auto& [name, keys] : limits) {
    Figure f = x.get({keys.first, keys.second});
    if (f) m.occupancy_block_limits[name] = *f;
  }
  if (!m.occupancy_block_limits.empty()) {
    double lo = std::min_element(m.occupancy_block_limits.begin(), m.occupancy_block_limits.end(),
                                 [](auto& a, auto& b) { return a.second < b.second; })->second;
    for (const auto& [name, v] : m.occupancy_block_limits) {
      if (v == lo) m.occupancy_limiter += (m.occupancy_limiter.empty() ? "" : "+") + name;
    }
  }

  m.registers_per_thread = x.get({"launch__registers_per_thread", "Launch Statistics/Registers Per Thread"});
  m.shared_bytes_per_block = x.get({"launch__shared_mem_per_block"}, to_bytes);
  if (!m.shared_bytes_per_block) {
    Figure st = x.get({"launch__shared_mem_per_block_static", "Launch Statistics/Static Shared Memory Per Block"}, to_bytes);
    Figure dy = x.get({"launch__shared_mem_per_block_dynamic", "Launch Statistics/Dynamic Shared Memory Per Block"}, to_bytes);
    if (st || dy) {
      m.shared_bytes_per_block = Figure{(st ? *st : 0) + (dy ? *dy : 0), (st ? st.source : dy.source) + " + dynamic"};
    }
  }
  m.spill_instructions = x.get({"sass__inst_executed_register_spilling"});
  m.local_load_instructions = x.get({"smsp__sass_inst_executed_op_local_ld.sum", "sass__inst_executed_local_loads"});
  m.local_store_instructions = x.get({"smsp__sass_inst_executed_op_local_st.sum", "sass__inst_executed_local_stores"});
  m.local_spill_requests = x.get({"derived__local_spilling_requests", "Memory Workload Analysis/Local Memory Spilling Requests"});
  m.bank_conflicts = x.get({"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"});
  m.shared_wavefronts = x.get({"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"});
  m.l1_hit_rate_pct = x.get({"l1tex__t_sector_hit_rate.pct", "Memory Workload Analysis/L1/TEX Hit Rate"});
  m.l2_hit_rate_pct = x.get({"lts__t_sector_hit_rate.pct", "Memory Workload Analysis/L2 Hit Rate"});
  Figure rd = x.get({"dram__bytes_read.sum"}, to_bytes);
  Figure wr = x.get({"dram__bytes_write.sum"}, to_bytes);
  if (rd || wr) m.dram_bytes = Figure{(rd ? *rd : 0) + (wr ? *wr : 0), "dram__bytes_read.sum + dram__bytes_write.sum"};

  // Warp stalls.
  auto samples = k.number("smsp__pcsamp_sample_count");
  for (const std::string& r : stall_reasons()) {
    if (auto v = k.number("smsp__average_warps_issue_stalled_" + r + "_per_issue_active.ratio")) m.stall_per_issue[r] = *v;
    // ncu names this one "no_instructions" in the sampling metrics.
    std::string sample_name = r == "no_instruction" ? "no_instructions" : r;
    if (samples && *samples > 0) {
      if (auto v = k.number("smsp__pcsamp_warps_issue_stalled_" + sample_name)) {
        m.stall_pct_of_samples[r] = *v / *samples * 100.0;
      }
    }
  }

  m.duration_us = x.get({"gpu__time_duration.sum", sol_dur.c_str()}, to_microseconds);
  m.grid_ctas = x.get({"launch__grid_size", "Launch Statistics/Grid Size"});
  if (!m.grid_ctas) {
    if (auto g = dims_product(k.grid_size)) m.grid_ctas = Figure{g, "Grid Size"};
  }
  m.block_threads = x.get({"launch__block_size", "Launch Statistics/Block Size"});
  if (!m.block_threads) {
    if (auto b = dims_product(k.block_size)) m.block_threads = Figure{b, "Block Size"};
  }
  m.sm_count = x.get({"launch__sm_count", "device__attribute_multiprocessor_count", "Launch Statistics/# SMs"});
  m.waves_per_sm = x.get({"launch__waves_per_multiprocessor", "Launch Statistics/Waves Per SM"});
  m.sm_frequency_hz = x.get({"sm__cycles_elapsed.avg.per_second", sol_freq.c_str()}, to_hertz);
  return m;
}

}  // namespace croq::profile
