// Sample statistics and the stopping rule (statistics.hpp).
#include "croq/measure/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace croq {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  if (sorted.size() == 1) return sorted.front();
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double robust_cv(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double median = quantile_sorted(samples, 0.5);
  if (!(median > 0)) return 0;
  for (double& v : samples) v = std::fabs(v - median);
  std::sort(samples.begin(), samples.end());
  return 1.4826 * quantile_sorted(samples, 0.5) / median;
}

SampleSummary summarize(std::vector<double> samples) {
  SampleSummary s;
  s.n = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile_sorted(samples, 0.5);
  s.p90 = quantile_sorted(samples, 0.9);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.n);
  if (s.n > 1) {
    double acc = 0;
    for (double v : samples) acc += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(acc / static_cast<double>(s.n - 1));
  }
  s.cv = s.mean > 0 ? s.stddev / s.mean : 0;
  s.robust_cv = robust_cv(samples);
  return s;
}

std::string StopRule::check(const std::vector<double>& samples, double elapsed_ms) const {
  const int n = static_cast<int>(samples.size());
  if (n >= max_reps) return "max_reps";
  if (n >= std::max(min_reps, 2) && elapsed_ms >= min_time_ms) {
    if (summarize(samples).cv <= cv_target) return "cv_target";
  }
  if (elapsed_ms >= time_budget_ms && n >= std::min(k_min_samples, max_reps)) return "time_budget";
  return {};
}

}  // namespace croq
