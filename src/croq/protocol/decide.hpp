// The noise-aware KEEP/DISCARD rule (docs/protocol.md "Decisions").
//
// Each measurement has a noise figure: the spread of its timed repetitions, floored at
// `noise_floor` (run-to-run drift of clocks and temperature that one run's spread does not show).
// The spread is the robust coefficient of variation, 1.4826 * MAD / median
// (measure/statistics.hpp), where the measurement has it or its samples, else the plain CV. The
// decision compares medians, and a few stray repetitions move the plain CV, not the median: on
// the H200 36 launches of 5-8.5 ms among 500 of 3.35 ms made it 16 %, and every later candidate
// of that tune, +4.7 % included, fell inside a 25 % margin.
//
// A short kernel measured in several runner processes (docs/measurement.md, "Short kernels") has
// a better figure: the relative standard deviation of the processes' TFLOPS, or the standard
// error of the median (1.2533 * spread / sqrt(reps)) if that is larger, floored likewise. Its
// per-repetition spread (2-5 % for a 10 us call) says how much one launch moves, not how far the
// median of 500 can be off: with it, a real +4.9 % at 4096x1024x1024 was discarded as noise.
//
// A candidate is KEPT only when its gain over the best of its base exceeds
//     margin = k * sqrt(noise_candidate^2 + noise_best^2)
// (default k = 1.5, floor 0.5 %: at least ~1.1 %). Anything within the margin, a tie included,
// is DISCARD. A KEEP needs at least `min_reps` timed repetitions (never one sample). A gain above
// +50 % or a loss beyond -50 % is suspicious (the seeds' re-run protocol): the candidate and the
// best are re-measured back to back and the decision is made on the re-run figures.
//
// A close call -- a gain inside the margin but above k * paired_floor (0.3 %) -- is settled on
// back-to-back pairs instead: the best and the candidate measured one right after the other,
// `pairs` times (ABBA order), so that the drift the 0.5 % floor stands for falls on both sides of
// each pair alike. It is KEPT when every pair's ratio is above 1 and the median ratio's gain
// exceeds k * max(paired_floor, standard error of the ratios). On the H200 the ratio of two
// kernels measured back to back moved 0.05-0.2 % between repeats, their TFLOPS 0.4-1 %.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "croq/ledger/records.hpp"
#include "croq/util/json.hpp"

namespace croq {

struct PerfSample {
  double tflops = 0;
  double median_ms = 0;
  double cv = 0;        // coefficient of variation of the timed repetitions (0.01 = 1 %)
  double robust_cv = -1;  // 1.4826 * MAD / median of them; negative when unknown
  int reps = 0;         // timed repetitions; 0 when unknown (a reported figure)
  // Relative standard deviation of the TFLOPS of the runner processes that measured it (the
  // measurement's `runs`); negative when one process did.
  double runs_sd = -1;
  std::string source;   // measured | reported
  std::string file;     // measurement file, when measured
  json to_json() const;
  static PerfSample from_measurement(const json& measurement);  // croq-measurement-v1
  static std::optional<PerfSample> from_record(const RoundRecord& r);
  // The noise figure the decision uses (see the top of this file).
  double noise(double floor) const;
  // The repetitions' spread that figure starts from: robust_cv when known, else cv.
  double spread() const { return robust_cv >= 0 ? robust_cv : cv; }
};

struct DecisionRule {
  double noise_floor = 0.005;
  double k = 1.5;
  double suspicious_gain = 0.5;
  double suspicious_loss = 0.5;
  int min_reps = 3;
  int pairs = 3;               // back-to-back pairs that settle a close call (0: no close calls)
  double paired_floor = 0.002; // floor of a paired ratio's noise
  json to_json() const;
  // Gains above this, yet inside the margin, are close calls.
  double close_call() const { return k * paired_floor; }
};

struct DecisionResult {
  Decision decision = Decision::DISCARD;
  std::string reason;
  bool needs_rerun = false;  // suspicious: re-measure candidate and best back to back first
  bool needs_pairs = false;  // close call: measure back-to-back pairs of the best and the candidate
  double gain = 0;           // candidate / best - 1 (for a paired decision: median ratio - 1)
  double margin = 0;
  json pairs;                // a paired decision's pairs and figures; null otherwise
  json to_json() const;
};

DecisionResult decide(const PerfSample& candidate, const std::optional<PerfSample>& best, const DecisionRule& rule,
                      bool rerun_done);

// One back-to-back pair: the candidate's and the best's TFLOPS, measured one right after the other.
struct MeasuredPair {
  double candidate = 0;
  double best = 0;
  std::string candidate_file, best_file;
};
// A close call decided on its pairs (see the top of this file). With fewer than rule.pairs pairs it
// is DISCARD with needs_pairs set.
DecisionResult decide_pairs(const std::vector<MeasuredPair>& pairs, const DecisionRule& rule);

}  // namespace croq
