// The bottleneck classifier (classifier.hpp); the rules are documented in docs/classifier.md.
#include "croq/profile/classifier.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "croq/util/error.hpp"

namespace croq::profile {

const char* bottleneck_name(Bottleneck b) {
  switch (b) {
    case Bottleneck::memory_bound: return "memory_bound";
    case Bottleneck::compute_bound: return "compute_bound";
    case Bottleneck::latency_bound: return "latency_bound";
    case Bottleneck::launch_bound: return "launch_bound";
    case Bottleneck::mixed: return "mixed";
  }
  return "mixed";
}

std::optional<double> peak_flop_per_clock_per_sm(const std::string& cc, const std::string& dtype) {
  // Dense rates per SM per clock: sm90 (H100/H200) 4096 f16/bf16, 8192 e4m3, 2048 tf32 on tensor
  // cores, 256 f32 FFMA (128 lanes x 2); sm80 (A100) half of each (no fp8).
  bool sixteen = dtype == "f16f32" || dtype == "f16" || dtype == "bf16f32" || dtype == "bf16";
  bool fp8 = dtype == "e4m3f16" || dtype == "e4m3bf16";
  if (cc == "9.0") {
    if (sixteen) return 4096;
    if (fp8) return 8192;
    if (dtype == "tf32") return 2048;
    if (dtype == "f32") return 256;
  } else if (cc == "8.0") {
    if (sixteen) return 2048;
    if (dtype == "tf32") return 1024;
    if (dtype == "f32") return 128;
  }
  return std::nullopt;
}

namespace {

double round2(double v) { return std::round(v * 100.0) / 100.0; }


// The memory-side Speed-of-Light figure: ncu's "Memory Throughput" (the busiest memory unit), or
// when a CSV lacks it the largest of DRAM, L1/TEX and L2 throughput.
Figure memory_side(const ProfileMetrics& m) {
  if (m.memory_throughput_pct) return m.memory_throughput_pct;
  Figure best;
  for (const Figure* f : {&m.dram_throughput_pct, &m.l1tex_throughput_pct, &m.l2_throughput_pct}) {
    if (*f && (!best || **f > *best)) best = *f;
  }
  if (best) best.source = "max(DRAM, L1/TEX, L2 throughput): " + best.source;
  return best;
}

const std::vector<std::string>& latency_stall_reasons() {
  static const std::vector<std::string> r = {"long_scoreboard", "barrier", "wait", "short_scoreboard", "membar",
                                             "branch_resolving", "sleeping", "no_instruction", "drain"};
  return r;
}
const std::vector<std::string>& throttle_stall_reasons() {
  static const std::vector<std::string> r = {"mio_throttle", "lg_throttle", "math_pipe_throttle", "tex_throttle"};
  return r;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

Classification classify(const ProfileMetrics& m, const ClassifyOptions& opt) {
  Classification c;
  Figure sm = m.sm_throughput_pct;
  Figure mem = memory_side(m);
  if (!sm && !mem) {
    throw Error(ExitCode::usage,
                fmt::format("the profile of {} has neither SM throughput nor memory throughput "
                            "(sm__throughput.avg.pct_of_peak_sustained_elapsed, "
                            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed): it cannot be classified",
                            m.kernel.empty() ? "the kernel" : m.kernel),
                "profile with --set full (or at least --section SpeedOfLight) and export --page raw --csv");
  }
  if (!sm) c.warnings.push_back("SM throughput is missing: the compute side is taken as 0");
  if (!mem) c.warnings.push_back("memory throughput is missing: the memory side is taken as 0");
  const double smv = sm ? *sm : 0, memv = mem ? *mem : 0;
  const double top = std::max(smv, memv);
  const double diff = smv - memv;

  auto add = [&](std::string rule, const Figure& f, std::string op, double threshold, bool fired, std::string role,
                 std::string meaning) {
    c.rules.push_back(RuleResult{std::move(rule), f.source, f.value, std::move(op), threshold, fired, std::move(role),
                                 std::move(meaning)});
    return fired;
  };

  // Deciding rules.
  bool sm_busy = add("sm_busy", sm, ">=", k_busy_pct, smv >= k_busy_pct, "decides",
                     "the SM (compute pipes, issue) runs near its peak");
  bool mem_busy = add("memory_busy", mem, ">=", k_busy_pct, memv >= k_busy_pct, "decides",
                      "a memory unit (DRAM, L2, L1/TEX, shared) runs near its peak");
  Figure diff_fig{diff, "SM throughput - memory throughput (points)"};
  bool compute_dom = add("compute_dominates", diff_fig, ">=", k_dominance_pts, diff >= k_dominance_pts, "decides",
                         "compute leads memory by enough to be the one limit");
  Figure mdiff_fig{-diff, "memory throughput - SM throughput (points)"};
  bool memory_dom = add("memory_dominates", mdiff_fig, ">=", k_dominance_pts, -diff >= k_dominance_pts, "decides",
                        "memory leads compute by enough to be the one limit");

  double fill_ratio = -1;
  Figure fill;
  if (m.grid_ctas && m.sm_count && *m.sm_count > 0) {
    fill_ratio = *m.grid_ctas / *m.sm_count;
    fill = Figure{fill_ratio, m.grid_ctas.source + " / " + m.sm_count.source};
  }
  bool underfill = add("grid_underfills_gpu", fill, "<", k_grid_fill_ratio, fill && fill_ratio < k_grid_fill_ratio,
                       "decides", "fewer CTAs than half the SMs: most of the GPU has no work");
  bool short_kernel = add("kernel_too_short", m.duration_us, "<", k_short_kernel_us,
                          m.duration_us && *m.duration_us < k_short_kernel_us, "decides",
                          "the kernel is so short that launch overhead and ramp-up dominate");

  // Corroborating figures.
  bool tensor_busy = add("tensor_pipe_busy", m.tensor_pipe_pct, ">=", k_pipe_busy_pct,
                         m.tensor_pipe_pct && *m.tensor_pipe_pct >= k_pipe_busy_pct, "corroborates compute_bound",
                         "the tensor cores are the busy compute unit");
  bool fma_busy = add("fma_pipe_busy", m.fma_pipe_pct, ">=", k_pipe_busy_pct,
                      m.fma_pipe_pct && *m.fma_pipe_pct >= k_pipe_busy_pct, "corroborates compute_bound",
                      "the FP32 FMA pipe is the busy compute unit");
  bool dram_busy = add("dram_busy", m.dram_throughput_pct, ">=", k_dram_busy_pct,
                       m.dram_throughput_pct && *m.dram_throughput_pct >= k_dram_busy_pct, "corroborates memory_bound",
                       "DRAM bandwidth is the busy memory level");

  auto shares = m.stall_shares();
  std::string top_stall;
  double top_share = 0;
  for (const auto& [r, v] : shares) {
    if (r == "selected") continue;  // issuing, not stalled
    if (v > top_share) {
      top_share = v;
      top_stall = r;
    }
  }
  std::string stall_source = m.stall_pct_of_samples.empty()
                                 ? "smsp__average_warps_issue_stalled_" + top_stall + "_per_issue_active.ratio (share)"
                                 : "smsp__pcsamp_warps_issue_stalled_" + top_stall + " / smsp__pcsamp_sample_count";
  Figure top_stall_fig = top_stall.empty() ? Figure{} : Figure{top_share, stall_source};
  bool latency_stall = add("latency_stall_dominates", top_stall_fig, ">=", k_stall_dominant_pct,
                           !top_stall.empty() && top_share >= k_stall_dominant_pct &&
                               contains(latency_stall_reasons(), top_stall),
                           "corroborates latency_bound", "warps mostly wait on a dependency (" +
                                               (top_stall.empty() ? std::string("no stall data") : top_stall) + ")");
  double throttle_share = 0;
  for (const auto& r : throttle_stall_reasons()) {
    auto it = shares.find(r);
    if (it != shares.end()) throttle_share += it->second;
  }
  Figure throttle_fig = shares.empty() ? Figure{} : Figure{throttle_share, "share of mio/lg/math_pipe/tex throttle stalls"};
  bool throttled = add("throttle_stalls_dominate", throttle_fig, ">=", k_stall_dominant_pct,
                       !shares.empty() && throttle_share >= k_stall_dominant_pct, "contradicts latency_bound",
                       "warps wait for a saturated unit's queue (a throughput limit, not latency)");
  bool low_issue = add("issue_slots_low", m.issue_slot_pct, "<", k_low_issue_pct,
                       m.issue_slot_pct && *m.issue_slot_pct < k_low_issue_pct, "corroborates latency_bound",
                       "the schedulers issue in few cycles: warps are not ready");

  // Hint-only figures.
  add("occupancy_low", m.achieved_occupancy_pct, "<", k_low_occupancy_pct,
      m.achieved_occupancy_pct && *m.achieved_occupancy_pct < k_low_occupancy_pct, "hint",
      "few warps resident per SM to hide latency (limiter: " +
          (m.occupancy_limiter.empty() ? std::string("unknown") : m.occupancy_limiter) + ")");
  double local = (m.local_load_instructions ? *m.local_load_instructions : 0) +
                 (m.local_store_instructions ? *m.local_store_instructions : 0) +
                 (m.spill_instructions ? *m.spill_instructions : 0);
  Figure local_fig = (m.local_load_instructions || m.spill_instructions)
                         ? Figure{local, "smsp__sass_inst_executed_op_local_ld.sum + _st.sum + sass__inst_executed_register_spilling"}
                         : Figure{};
  add("local_memory_used", local_fig, ">", 0, local > 0, "hint", "registers spill to local memory (LDL/STL)");
  Figure conflict_fig;
  if (m.bank_conflicts && m.shared_wavefronts && *m.shared_wavefronts > 0) {
    conflict_fig = Figure{*m.bank_conflicts / *m.shared_wavefronts * 100.0,
                          m.bank_conflicts.source + " / " + m.shared_wavefronts.source + " * 100"};
  }
  add("bank_conflicts_high", conflict_fig, ">=", k_bank_conflict_pct,
      conflict_fig && *conflict_fig >= k_bank_conflict_pct, "hint", "shared-memory accesses replay on bank conflicts");
  add("l2_hit_low", m.l2_hit_rate_pct, "<", k_l2_hit_low_pct,
      m.l2_hit_rate_pct && *m.l2_hit_rate_pct < k_l2_hit_low_pct && dram_busy, "hint",
      "DRAM is busy and L2 misses often: the tile order thrashes L2");

  // Decision.
  int corroborating = 0, contradicting = 0;
  double margin = 0;
  if ((underfill || short_kernel) && top < k_busy_pct) {
    c.bottleneck = Bottleneck::launch_bound;
    double gm = underfill ? (k_grid_fill_ratio - fill_ratio) * 100.0 : 0;
    double sm_ = short_kernel ? (k_short_kernel_us - *m.duration_us) / k_short_kernel_us * 100.0 : 0;
    margin = std::min(k_busy_pct - top, std::max(gm, sm_));
    if (underfill && short_kernel) ++corroborating;
    c.reason = underfill ? fmt::format("{:.0f} CTAs for {:.0f} SMs leave most of the GPU idle (SM {:.1f} %, memory {:.1f} %)",
                                       *m.grid_ctas, *m.sm_count, smv, memv)
                         : fmt::format("the kernel runs {:.2f} us, within launch overhead (SM {:.1f} %, memory {:.1f} %)",
                                       *m.duration_us, smv, memv);
  } else if (top >= k_busy_pct && std::abs(diff) < k_dominance_pts) {
    c.bottleneck = Bottleneck::mixed;
    margin = std::min(top - k_busy_pct, k_dominance_pts - std::abs(diff));
    c.reason = fmt::format("compute and memory are both busy and within {:.0f} points (SM {:.1f} %, memory {:.1f} %)",
                           k_dominance_pts, smv, memv);
  } else if (sm_busy && compute_dom) {
    c.bottleneck = Bottleneck::compute_bound;
    margin = std::min(smv - k_busy_pct, diff - k_dominance_pts);
    if (tensor_busy || fma_busy) ++corroborating;
    if (throttled && shares.count("math_pipe_throttle") && shares.at("math_pipe_throttle") >= 10) ++corroborating;
    c.reason = fmt::format("SM throughput {:.1f} % leads memory {:.1f} %{}", smv, memv,
                           tensor_busy ? fmt::format("; tensor pipe {:.1f} %", *m.tensor_pipe_pct)
                           : fma_busy  ? fmt::format("; FMA pipe {:.1f} %", *m.fma_pipe_pct)
                                       : std::string());
  } else if (mem_busy && memory_dom) {
    c.bottleneck = Bottleneck::memory_bound;
    margin = std::min(memv - k_busy_pct, -diff - k_dominance_pts);
    if (dram_busy) ++corroborating;
    c.reason = fmt::format("memory throughput {:.1f} % leads SM {:.1f} %{}", memv, smv,
                           dram_busy ? fmt::format("; DRAM {:.1f} %", *m.dram_throughput_pct) : std::string());
  } else {
    // top < k_busy_pct and the grid fills the GPU: no unit is near its peak, so the warps wait.
    c.bottleneck = Bottleneck::latency_bound;
    margin = k_busy_pct - top;
    if (latency_stall || low_issue) ++corroborating;
    if (throttled) ++contradicting;
    c.reason = fmt::format("no unit is near its peak (SM {:.1f} %, memory {:.1f} %){}", smv, memv,
                           top_stall.empty() ? std::string()
                                             : fmt::format("; top stall {} ({:.0f} % of samples)", top_stall, top_share));
  }
  // Mark which decision-role rules were the deciding ones for this class (the rest stay as evaluated).
  c.margin_pts = round2(margin);
  double score = k_score_base + margin / k_score_margin_scale + k_score_corroboration * (corroborating - contradicting);
  if (!sm || !mem) score -= k_score_corroboration;  // one side of the decision is missing
  c.score = round2(std::clamp(score, 0.05, 0.99));
  c.confidence = c.score >= 0.75 ? "high" : c.score >= 0.5 ? "medium" : "low";

  // Achieved TFLOPS.
  if (opt.flops && m.duration_us && *m.duration_us > 0) {
    c.achieved_tflops = round2(*opt.flops / (*m.duration_us * 1e-6) / 1e12);
    auto per_clock = peak_flop_per_clock_per_sm(m.cc, opt.dtype);
    if (per_clock && m.sm_count && m.sm_frequency_hz) {
      double peak = *per_clock * *m.sm_count * *m.sm_frequency_hz / 1e12;
      c.peak_tflops = round2(peak);
      c.peak_basis = fmt::format("{:.0f} flop/clk/SM ({} on cc {}) x {:.0f} SMs x {:.3f} GHz (SM clock during the profile)",
                                 *per_clock, opt.dtype, m.cc, *m.sm_count, *m.sm_frequency_hz / 1e9);
      c.pct_of_peak = round2(*c.achieved_tflops / peak * 100.0);
      if (*c.pct_of_peak > 100.0) {
        c.warnings.push_back(fmt::format("achieved {:.1f} TFLOPS exceeds the peak {:.1f}: the FLOPs given do not match "
                                         "this kernel's work", *c.achieved_tflops, peak));
      }
    } else {
      c.peak_basis = opt.dtype.empty() ? "no dtype given (--dtype or --shape-key)"
                                       : fmt::format("no peak known for dtype {} on cc {}", opt.dtype,
                                                     m.cc.empty() ? "?" : m.cc);
    }
  }
  c.hints = menu_hints(opt.dsl, c.bottleneck, m, c.rules);
  return c;
}

namespace {

json figure(const Figure& f) { return f ? json(round2(*f)) : json(nullptr); }

}  // namespace

json metrics_json(const ProfileMetrics& m, const Classification& c) {
  json j;
  j["sm_throughput_pct"] = figure(m.sm_throughput_pct);
  j["memory_throughput_pct"] = figure(m.memory_throughput_pct);
  j["dram_throughput_pct"] = figure(m.dram_throughput_pct);
  j["l1tex_throughput_pct"] = figure(m.l1tex_throughput_pct);
  j["l2_throughput_pct"] = figure(m.l2_throughput_pct);
  j["shared_throughput_pct"] = figure(m.shared_throughput_pct);
  j["tensor_pipe_pct"] = figure(m.tensor_pipe_pct);
  j["fma_pipe_pct"] = figure(m.fma_pipe_pct);
  j["issue_slot_pct"] = figure(m.issue_slot_pct);
  j["executed_ipc"] = figure(m.executed_ipc);
  j["eligible_warps_per_scheduler"] = figure(m.eligible_warps_per_scheduler);
  j["no_eligible_pct"] = figure(m.no_eligible_pct);
  j["achieved_occupancy_pct"] = figure(m.achieved_occupancy_pct);
  j["theoretical_occupancy_pct"] = figure(m.theoretical_occupancy_pct);
  j["occupancy_limiter"] = m.occupancy_limiter.empty() ? json(nullptr) : json(m.occupancy_limiter);
  json limits = json::object();
  for (const auto& [k, v] : m.occupancy_block_limits) limits[k] = round2(v);
  j["occupancy_block_limits"] = limits;
  j["registers_per_thread"] = figure(m.registers_per_thread);
  j["shared_bytes_per_block"] = figure(m.shared_bytes_per_block);
  j["spill_instructions"] = figure(m.spill_instructions);
  j["local_load_instructions"] = figure(m.local_load_instructions);
  j["local_store_instructions"] = figure(m.local_store_instructions);
  j["local_spill_requests"] = figure(m.local_spill_requests);
  json stalls = json::object();
  for (const auto& [r, v] : m.stall_shares()) stalls[r] = round2(v);
  j["warp_stalls"] = stalls;
  j["warp_stalls_unit"] = m.stall_pct_of_samples.empty()
                              ? "% of stall cycles: each reason's smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio "
                                "over their sum ('selected' excluded)"
                              : "% of PC samples: smsp__pcsamp_warps_issue_stalled_<reason> / smsp__pcsamp_sample_count";
  json per_issue = json::object();
  for (const auto& [r, v] : m.stall_per_issue) per_issue[r] = round2(v);
  j["warp_stalls_per_issue"] = per_issue;
  json bank = json::object();
  bank["conflicts"] = figure(m.bank_conflicts);
  bank["shared_wavefronts"] = figure(m.shared_wavefronts);
  bank["pct_of_wavefronts"] = (m.bank_conflicts && m.shared_wavefronts && *m.shared_wavefronts > 0)
                                  ? json(round2(*m.bank_conflicts / *m.shared_wavefronts * 100.0))
                                  : json(nullptr);
  j["bank_conflicts"] = bank;
  j["l1_hit_rate_pct"] = figure(m.l1_hit_rate_pct);
  j["l2_hit_rate_pct"] = figure(m.l2_hit_rate_pct);
  j["dram_bytes"] = figure(m.dram_bytes);
  j["duration_us"] = figure(m.duration_us);
  j["grid_size"] = m.grid_size;
  j["block_size"] = m.block_size;
  j["grid_ctas"] = figure(m.grid_ctas);
  j["block_threads"] = figure(m.block_threads);
  j["sm_count"] = figure(m.sm_count);
  j["waves_per_sm"] = figure(m.waves_per_sm);
  j["sm_frequency_ghz"] = m.sm_frequency_hz ? json(std::round(*m.sm_frequency_hz / 1e6) / 1e3) : json(nullptr);
  j["achieved_tflops"] = c.achieved_tflops ? json(*c.achieved_tflops) : json(nullptr);
  j["peak_tflops"] = c.peak_tflops ? json(*c.peak_tflops) : json(nullptr);
  j["peak_basis"] = c.peak_basis.empty() ? json(nullptr) : json(c.peak_basis);
  j["pct_of_peak"] = c.pct_of_peak ? json(*c.pct_of_peak) : json(nullptr);
  return j;
}

json classification_json(const ProfileMetrics& m, const Classification& c) {
  json j;
  j["bottleneck"] = bottleneck_name(c.bottleneck);
  j["confidence"] = c.confidence;
  j["score"] = c.score;
  j["kernel"] = m.kernel;
  j["reason"] = c.reason;
  json key;
  key["sm_throughput_pct"] = figure(m.sm_throughput_pct);
  key["memory_throughput_pct"] = figure(memory_side(m));
  key["dram_throughput_pct"] = figure(m.dram_throughput_pct);
  key["tensor_pipe_pct"] = figure(m.tensor_pipe_pct);
  key["achieved_occupancy_pct"] = figure(m.achieved_occupancy_pct);
  key["duration_us"] = figure(m.duration_us);
  key["grid_ctas"] = figure(m.grid_ctas);
  key["sm_count"] = figure(m.sm_count);
  std::string top;
  double top_v = 0;
  for (const auto& [r, v] : m.stall_shares()) {
    if (r != "selected" && v > top_v) {
      top_v = v;
      top = r;
    }
  }
  key["top_stall"] = top.empty() ? json(nullptr) : json(top);
  key["top_stall_pct"] = top.empty() ? json(nullptr) : json(round2(top_v));
  json rules = json::array();
  for (const auto& r : c.rules) {
    rules.push_back({{"rule", r.rule},
                     {"metric", r.metric.empty() ? json(nullptr) : json(r.metric)},
                     {"value", r.value ? json(round2(*r.value)) : json(nullptr)},
                     {"op", r.op},
                     {"threshold", r.threshold},
                     {"fired", r.fired},
                     {"role", r.role},
                     {"meaning", r.meaning}});
  }
  j["evidence"] = {{"key_metrics", key}, {"rules", rules}, {"margin_pts", c.margin_pts}, {"ncu_rep", nullptr}};
  j["metrics"] = metrics_json(m, c);
  json hints = json::array();
  for (const auto& h : c.hints) hints.push_back({{"idea", h.idea}, {"menu", h.menu}, {"why", h.why}});
  j["hints"] = hints;
  json warnings = json::array();
  for (const auto& w : m.warnings) warnings.push_back(w);
  for (const auto& w : c.warnings) warnings.push_back(w);
  j["warnings"] = warnings;
  if (!m.ncu_rules.empty()) j["ncu_rules"] = m.ncu_rules;
  return j;
}

}  // namespace croq::profile
