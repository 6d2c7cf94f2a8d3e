// The bottleneck classifier (the seeds' profile_extract): from the figures of one profiled kernel
// to one of memory_bound, compute_bound, latency_bound, launch_bound or mixed — never unknown —
// with a confidence, the evidence (every rule with its metric, value, threshold and whether it
// fired) and hints taken from the DSL's IDEA menu. Every rule and threshold is stated, with its
// reason, in docs/classifier.md; the constants below are the single source of those numbers.
//
// The decision uses the two Speed-of-Light figures Nsight Compute itself leads with (SM
// throughput and memory throughput, % of peak), the launch shape (CTAs against SMs, duration), and
// corroborating figures (tensor/FMA pipe use, DRAM use, warp-stall breakdown, issue-slot use) that
// raise or lower the confidence. A CSV without either Speed-of-Light figure cannot be classified
// and is refused (exit 2) rather than guessed.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "croq/profile/metrics.hpp"
#include "croq/util/json.hpp"

namespace croq::profile {

// Thresholds (percentages are % of peak as ncu reports them).
inline constexpr double k_busy_pct = 60.0;           // a unit at or above this is busy
inline constexpr double k_dominance_pts = 10.0;      // lead (points) one side needs to be "the" bottleneck
inline constexpr double k_grid_fill_ratio = 0.5;     // CTAs below this fraction of the SMs leave the GPU idle
inline constexpr double k_short_kernel_us = 10.0;    // shorter kernels are dominated by launch overhead
inline constexpr double k_pipe_busy_pct = 50.0;      // tensor or FMA pipe at or above this corroborates compute
inline constexpr double k_dram_busy_pct = 60.0;      // DRAM at or above this corroborates memory
inline constexpr double k_stall_dominant_pct = 30.0; // one stall reason's share that makes it "the" stall
inline constexpr double k_low_issue_pct = 30.0;      // issue slots busy below this: warps mostly waiting
inline constexpr double k_low_occupancy_pct = 25.0;  // achieved occupancy below this is low
inline constexpr double k_bank_conflict_pct = 10.0;  // conflicts per shared wavefront worth a hint
inline constexpr double k_l2_hit_low_pct = 50.0;     // L2 hit rate below this with DRAM busy: L2 thrash
// Confidence: score = clamp(k_score_base + margin / k_score_margin_scale + k_score_corroboration *
// (corroborating - contradicting), 0.05, 0.99); high >= 0.75, medium >= 0.5, low below.
inline constexpr double k_score_base = 0.35;
inline constexpr double k_score_margin_scale = 25.0;
inline constexpr double k_score_corroboration = 0.15;

enum class Bottleneck { memory_bound, compute_bound, latency_bound, launch_bound, mixed };
const char* bottleneck_name(Bottleneck b);

struct RuleResult {
  std::string rule;      // "sm_busy"
  std::string metric;    // the ncu metric the value came from
  std::optional<double> value;  // nullopt: the CSV does not have it (the rule cannot fire)
  std::string op;        // ">=", "<", ...
  double threshold = 0;
  bool fired = false;
  std::string role;      // "decides", "corroborates <class>", "contradicts <class>", "hint"
  std::string meaning;   // one line: what firing means
};

struct Hint {
  std::string idea;      // the menu's idea text
  std::string menu;      // "croqtile IDEA menu: Memory-bound"
  std::string why;       // which evidence selected it
};

struct ClassifyOptions {
  std::string dsl = "cuda";         // cuda | croqtile | triton | cpp: which IDEA menu the hints come from
  std::optional<double> flops;      // the problem's floating-point operations (achieved TFLOPS)
  std::string dtype;                // canonical dtype pair ("f16f32") for the device's peak
};

struct Classification {
  Bottleneck bottleneck = Bottleneck::latency_bound;
  std::string confidence;           // high | medium | low
  double score = 0;                 // 0..1, see the constants above
  double margin_pts = 0;            // distance of the deciding figures from their thresholds
  std::string reason;               // one sentence
  std::vector<RuleResult> rules;
  std::vector<Hint> hints;
  // Achieved throughput when the FLOPs are known.
  std::optional<double> achieved_tflops;
  std::optional<double> peak_tflops;
  std::string peak_basis;
  std::optional<double> pct_of_peak;
  std::vector<std::string> warnings;
};

// Throws croq::Error(usage) when neither SM nor memory throughput is in the profile.
Classification classify(const ProfileMetrics& m, const ClassifyOptions& options);

// Dense peak in FLOP per clock per SM for a compute capability and a canonical dtype pair
// (tensor cores for 16-bit and 8-bit inputs and tf32, FFMA for f32); nullopt when unknown.
std::optional<double> peak_flop_per_clock_per_sm(const std::string& cc, const std::string& dtype);

// The document `croq classify` prints (bottleneck, confidence, score, kernel, evidence{key_metrics,
// rules, ncu_rep}, metrics{...}, hints, warnings).
json classification_json(const ProfileMetrics& m, const Classification& c);
json metrics_json(const ProfileMetrics& m, const Classification& c);

// The IDEA menu hints for a bottleneck (and the conditional rows: register pressure, bank
// conflicts, L2 thrash) in the given DSL's menu.
std::vector<Hint> menu_hints(const std::string& dsl, Bottleneck b, const ProfileMetrics& m,
                             const std::vector<RuleResult>& rules);

}  // namespace croq::profile
