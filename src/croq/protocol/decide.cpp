// The noise-aware decision (decide.hpp).
#include "croq/protocol/decide.hpp"
#include "croq/util/units.hpp"

#include "croq/measure/measurement.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace croq {

json PerfSample::to_json() const {
  json j = {{"tflops", tflops}, {"median_ms", median_ms}, {"cv", cv}, {"reps", reps}, {"source", source}, {"file", file}};
  if (robust_cv >= 0) j["robust_cv"] = robust_cv;
  if (runs_sd >= 0) j["runs_sd"] = runs_sd;
  return j;
}

double PerfSample::noise(double floor) const {
  const double v = spread();
  if (runs_sd < 0) return std::max(v, floor);
  const double se = reps > 1 ? 1.2533 * v / std::sqrt(static_cast<double>(reps)) : v;
  return std::max({floor, runs_sd, se});
}

PerfSample PerfSample::from_measurement(const json& m) {
  PerfSample s;
  s.tflops = get_number(m, "tflops").value_or(0);
  if (m.contains("timing") && m["timing"].is_object()) {
    const json& t = m["timing"];
    s.median_ms = get_number(t, "median_ms").value_or(0);
    s.cv = get_number(t, "cv").value_or(0);
    s.reps = static_cast<int>(get_integer(t, "reps").value_or(0));
    if (auto r = timing_robust_cv(t)) s.robust_cv = *r;
  }
  s.source = get_string(m, "source").value_or("measured");
  if (m.contains("runs") && m["runs"].is_array()) {
    std::vector<double> v;
    for (const auto& r : m["runs"]) {
      if (auto t = get_number(r, "tflops"); t && *t > 0) v.push_back(*t);
    }
    if (v.size() >= 2) {
      double mean = 0;
      for (double x : v) mean += x;
      mean /= static_cast<double>(v.size());
      double ss = 0;
      for (double x : v) ss += (x - mean) * (x - mean);
      s.runs_sd = std::sqrt(ss / static_cast<double>(v.size() - 1)) / mean;
    }
  }
  return s;
}

std::optional<PerfSample> PerfSample::from_record(const RoundRecord& r) {
  if (!r.tflops) return std::nullopt;
  PerfSample s;
  s.tflops = *r.tflops;
  s.source = r.source();
  if (r.extra.contains("measurement") && r.extra["measurement"].is_object()) {
    const json& m = r.extra["measurement"];
    s.median_ms = get_number(m, "median_ms").value_or(0);
    s.cv = get_number(m, "cv").value_or(0);
    s.reps = static_cast<int>(get_integer(m, "reps").value_or(0));
    if (auto r = get_number(m, "robust_cv")) s.robust_cv = *r;
    s.file = get_string(m, "file").value_or("");
  }
  return s;
}

json DecisionRule::to_json() const {
  return {{"noise_floor", noise_floor}, {"k", k}, {"suspicious_gain", suspicious_gain},
          {"suspicious_loss", suspicious_loss}, {"min_reps", min_reps}, {"pairs", pairs},
          {"paired_floor", paired_floor}};
}

json DecisionResult::to_json() const {
  json j = {{"decision", decision_name(decision)}, {"reason", reason}, {"needs_rerun", needs_rerun},
            {"needs_pairs", needs_pairs}, {"gain", std::round(gain * 1e5) / 1e5},
            {"margin", std::round(margin * 1e5) / 1e5}};
  if (!pairs.is_null()) j["pairs"] = pairs;
  return j;
}

DecisionResult decide(const PerfSample& c, const std::optional<PerfSample>& best, const DecisionRule& rule,
                      bool rerun_done) {
  DecisionResult r;
  if (!(c.tflops > 0)) {
    r.decision = Decision::DISCARD;
    r.reason = "the candidate has no positive TFLOPS figure";
    return r;
  }
  if (!best || !(best->tflops > 0)) {
    if (c.source == "measured" && c.reps < rule.min_reps) {
      r.reason = fmt::format("only {} timed repetition(s); a KEEP needs at least {}", c.reps, rule.min_reps);
      return r;
    }
    r.decision = Decision::KEEP;
    r.reason = "no earlier best on this base: the first measured candidate is kept";
    return r;
  }
  const double nc = c.noise(rule.noise_floor);
  const double nb = best->noise(rule.noise_floor);
  r.gain = c.tflops / best->tflops - 1.0;
  r.margin = rule.k * std::sqrt(nc * nc + nb * nb);
  if (!rerun_done && (r.gain > rule.suspicious_gain || r.gain < -rule.suspicious_loss)) {
    r.needs_rerun = true;
    r.decision = Decision::DISCARD;
    r.reason = fmt::format("a change of {:+.1f}% is suspicious: re-measure the candidate and the best back to back "
                           "(`croq measure --iter <candidate> --pairs` measures both) and decide on the re-run figures",
                           r.gain * 100);
    return r;
  }
  if (c.source == "measured" && c.reps < rule.min_reps) {
    r.reason = fmt::format("only {} timed repetition(s); a KEEP needs at least {}", c.reps, rule.min_reps);
    return r;
  }
  if (r.gain > r.margin) {
    r.decision = Decision::KEEP;
    r.reason = fmt::format("{} vs best {}: {:+.2f}% beats the noise margin {:.2f}%", format_rate(c.tflops),
                           format_rate(best->tflops), r.gain * 100, r.margin * 100);
  } else if (rule.pairs > 0 && r.gain > rule.close_call()) {
    r.decision = Decision::DISCARD;
    r.needs_pairs = true;
    r.reason = fmt::format("{} vs best {}: {:+.2f}% is inside the noise margin {:.2f}% but above {:.2f}%: "
                           "a close call, settled on {} back-to-back pairs of the best and the candidate",
                           format_rate(c.tflops), format_rate(best->tflops), r.gain * 100, r.margin * 100,
                           rule.close_call() * 100, rule.pairs);
  } else {
    r.decision = Decision::DISCARD;
    r.reason = fmt::format("{} vs best {}: {:+.2f}% is within the noise margin {:.2f}% or worse",
                           format_rate(c.tflops), format_rate(best->tflops), r.gain * 100, r.margin * 100);
  }
  return r;
}

DecisionResult decide_pairs(const std::vector<MeasuredPair>& pairs, const DecisionRule& rule) {
  DecisionResult r;
  r.decision = Decision::DISCARD;
  json list = json::array();
  std::vector<double> ratios;
  for (const auto& p : pairs) {
    const double ratio = p.best > 0 ? p.candidate / p.best : 0;
    ratios.push_back(ratio);
    list.push_back({{"candidate_tflops", p.candidate}, {"best_tflops", p.best}, {"ratio", std::round(ratio * 1e5) / 1e5},
                    {"candidate_file", p.candidate_file}, {"best_file", p.best_file}});
  }
  r.pairs = {{"measured", list}, {"needed", rule.pairs}};
  const int n = static_cast<int>(ratios.size());
  if (n < std::max(rule.pairs, 2)) {
    r.needs_pairs = true;
    r.reason = fmt::format("a close call: {} of {} back-to-back pairs of the best and the candidate measured",
                           n, std::max(rule.pairs, 2));
    return r;
  }
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  double mean = 0;
  for (double x : ratios) mean += x;
  mean /= n;
  double ss = 0;
  for (double x : ratios) ss += (x - mean) * (x - mean);
  const double se = std::sqrt(ss / (n - 1)) / std::sqrt(static_cast<double>(n)) / median;
  r.gain = median - 1.0;
  r.margin = rule.k * std::max(rule.paired_floor, se);
  r.pairs["median_ratio"] = std::round(median * 1e5) / 1e5;
  r.pairs["standard_error"] = std::round(se * 1e6) / 1e6;
  const double lowest = sorted.front();
  if (r.gain > r.margin && lowest > 1.0) {
    r.decision = Decision::KEEP;
    r.reason = fmt::format("close call settled on {} back-to-back pairs: every pair favours the candidate (lowest ratio "
                           "{:.4f}) and the median ratio's {:+.2f}% beats the paired margin {:.2f}%",
                           n, lowest, r.gain * 100, r.margin * 100);
  } else if (lowest <= 1.0) {
    r.reason = fmt::format("close call settled on {} back-to-back pairs: a pair does not favour the candidate (lowest "
                           "ratio {:.4f}, median {:+.2f}%)", n, lowest, r.gain * 100);
  } else {
    r.reason = fmt::format("close call settled on {} back-to-back pairs: the median ratio's {:+.2f}% is inside the paired "
                           "margin {:.2f}%", n, r.gain * 100, r.margin * 100);
  }
  return r;
}

}  // namespace croq
