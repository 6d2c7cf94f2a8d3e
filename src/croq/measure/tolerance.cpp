// Tolerance table and host comparison (tolerance.hpp).
#include "croq/measure/tolerance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "croq/measure/numeric.hpp"
#include "croq/measure/portable.hpp"

namespace croq {

ToleranceSpec tolerance_for(const DtypePair& d) {
  ToleranceSpec t;
  const bool out16 = d.output == ScalarType::f16 || d.output == ScalarType::bf16;
  const double out_norm = d.output == ScalarType::bf16 ? 1e-2 : 2e-3;
  switch (d.input) {
    case ScalarType::e4m3:
      t.base_tol = 0.5;
      t.rel_tol = 0.01;
      t.normwise = d.output == ScalarType::bf16 ? 1e-2 : 5e-3;
      t.rule = "fp8 e4m3 in, f32 accumulate";
      break;
    case ScalarType::f16:
    case ScalarType::bf16:
      t.base_tol = 1.0;
      t.rel_tol = 0.01;
      t.normwise = out16 ? out_norm : 1e-3;
      t.rule = out16 ? "f16/bf16 in, f32 accumulate, 16-bit out" : "f16/bf16 in, f32 accumulate";
      break;
    case ScalarType::f32:
    case ScalarType::tf32:
      t.base_tol = 1.0;
      t.rel_tol = 0.01;
      if (d.compute == ScalarType::tf32) {
        t.normwise = 5e-3;
        t.rule = "tf32 multiply, f32 accumulate";
      } else {
        t.normwise = 1e-4;
        t.rule = "f32 in, f32 accumulate";
      }
      break;
  }
  return t;
}

ToleranceSpec tolerance_for(const DtypePair& d, const std::string& op) {
  ToleranceSpec t = tolerance_for(d);
  if (d.input != ScalarType::e4m3) return t;
  if (op == "blockscaled") {
    t.rule = "fp8 e4m3 in, f32 scales per 1x128 (A) and 128x128 (B) block, f32 accumulate; plus 2^-10 x sum|a b| scaled";
    t.mag_tol = k_blockscaled_mag_tol;
  }
  else if (op == "matmul") t.rule = "fp8 e4m3 in, per-tensor f32 scales, f32 accumulate";
  return t;
}

ToleranceSpec f16_accumulate_tolerance() { return {16.0, 0.05, 1e-2, "f16 in, f16 accumulate"}; }

void decide_passed(Verification& v) {
  v.passed = v.mismatches == 0 && v.nan_count == 0 && v.guard_bytes_changed == 0 &&
             std::isfinite(v.normwise_rel_err) && v.normwise_rel_err <= v.tolerance.normwise;
}

void compare_host(const void* got, ScalarType c_type, const float* want, int64_t m, int64_t n,
                  const ToleranceSpec& tol, Verification& out, size_t max_worst, const float* magnitude) {
  struct Cand {
    double score;
    int64_t idx;
    double got, want;
  };
  std::vector<Cand> worst;
  auto push_worst = [&](Cand c) {
    if (max_worst == 0) return;
    if (worst.size() < max_worst) {
      worst.push_back(c);
      std::push_heap(worst.begin(), worst.end(), [](const Cand& a, const Cand& b) { return a.score > b.score; });
    } else if (c.score > worst.front().score) {
      std::pop_heap(worst.begin(), worst.end(), [](const Cand& a, const Cand& b) { return a.score > b.score; });
      worst.back() = c;
      std::push_heap(worst.begin(), worst.end(), [](const Cand& a, const Cand& b) { return a.score > b.score; });
    }
  };
  out.elements = m * n;
  out.mismatches = 0;
  out.nan_count = 0;
  out.magnitude_excused = 0;
  out.max_abs_err = 0;
  out.max_rel_err = 0;
  out.tolerance = tol;
  double sum_d2 = 0, sum_w2 = 0;
  const int64_t total = m * n;
  for (int64_t idx = 0; idx < total; ++idx) {
    const double g = load_as_f32(got, c_type, static_cast<size_t>(idx));
    const double w = want[idx];
    const double mag_term = magnitude ? tol.mag_tol * magnitude[idx] : 0.0;
    const double limit = tol.base_tol + tol.rel_tol * std::fabs(w) + mag_term;
    const bool fails = element_fails(g, w, tol.base_tol, tol.rel_tol, mag_term);
    if (!std::isfinite(g)) {
      ++out.nan_count;
    } else {
      const double d = std::fabs(g - w);
      out.max_abs_err = std::max(out.max_abs_err, d);
      if (std::fabs(w) >= tol.base_tol) out.max_rel_err = std::max(out.max_rel_err, d / std::fabs(w));
      sum_d2 += d * d;
    }
    sum_w2 += w * w;
    if (fails) ++out.mismatches;
    else if (mag_term > 0 && element_fails(g, w, tol.base_tol, tol.rel_tol)) ++out.magnitude_excused;
    const double score = std::isfinite(g) ? std::fabs(g - w) / limit : std::numeric_limits<double>::infinity();
    push_worst({score, idx, g, w});
  }
  out.normwise_rel_err = sum_w2 > 0 ? std::sqrt(sum_d2 / sum_w2) : (sum_d2 > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  std::sort(worst.begin(), worst.end(), [](const Cand& a, const Cand& b) {
    return a.score != b.score ? a.score > b.score : a.idx < b.idx;
  });
  out.worst.clear();
  for (const auto& c : worst) out.worst.push_back({c.idx / n, c.idx % n, c.got, c.want});
  decide_passed(out);
}

}  // namespace croq
