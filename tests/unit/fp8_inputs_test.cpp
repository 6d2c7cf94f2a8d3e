// The FP8 inputs and scales croq draws (portable.hpp): e4m3 values over the format's whole normal
// range, not only small ones; per-tensor and per-block scales spanning orders of magnitude while
// the scaled product keeps the size the tolerance table is made for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "croq/measure/numeric.hpp"
#include "croq/measure/portable.hpp"

namespace croq {
namespace {

TEST(Fp8Inputs, ValuesSpanTheE4m3Range) {
  std::set<uint8_t> codes;
  float lo = 1e9f, hi = 0.f;
  int negative = 0;
  const int count = 100000;
  for (int i = 0; i < count; ++i) {
    const float v = fp8_scaled_value(7, k_stream_a, static_cast<uint64_t>(i));
    const uint8_t code = f32_to_e4m3(v);
    const float q = e4m3_to_f32(code);
    ASSERT_TRUE(std::isfinite(q));
    lo = std::min(lo, std::fabs(q));
    hi = std::max(hi, std::fabs(q));
    negative += q < 0;
    codes.insert(code);
  }
  EXPECT_LE(lo, 0.5f);
  EXPECT_GE(hi, 416.f);
  EXPECT_LE(hi, 448.f);
  EXPECT_GT(codes.size(), 140u);  // of e4m3's 254 finite non-zero codes
  EXPECT_GT(negative, count / 3);
  EXPECT_LT(negative, 2 * count / 3);
}

TEST(Fp8Inputs, ScalesSpanOrdersOfMagnitudeAndKeepTheProductsSize) {
  float a_lo = 1e30f, a_hi = 0.f;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const float sa = fp8_tensor_scale(seed, 0), sb = fp8_tensor_scale(seed, 1);
    ASSERT_GT(sa, 0.f);
    ASSERT_GT(sb, 0.f);
    a_lo = std::min(a_lo, sa);
    a_hi = std::max(a_hi, sa);
    // The product stays within a factor of two of 1/49152 (128 x 384): inputs of RMS ~120 then give
    // scaled products of RMS ~0.3, as unscaled inputs in [-1, 1) do.
    const double prod = static_cast<double>(sa) * sb * 49152.0;
    EXPECT_GT(prod, 0.5) << seed;
    EXPECT_LT(prod, 1.7) << seed;
  }
  EXPECT_GT(a_hi / a_lo, 1e5f);
  float b_lo = 1e30f, b_hi = 0.f;
  for (uint64_t i = 0; i < 2000; ++i) {
    const float s = fp8_block_scale(3, 1, i);
    b_lo = std::min(b_lo, s);
    b_hi = std::max(b_hi, s);
  }
  // Block scales span a factor of 16 (x 1.25 of the jitter) per tensor: wide enough that another
  // block's scale is wrong, narrow enough that every block's share of a sum is felt.
  EXPECT_GT(b_hi / b_lo, 12.f);
  EXPECT_LT(b_hi / b_lo, 16.f * 1.25f / 0.75f);
  // Different seeds, different scales (the second seed catches scales cached by a candidate).
  EXPECT_NE(fp8_tensor_scale(1, 0), fp8_tensor_scale(second_seed(1), 0));
  EXPECT_NE(fp8_block_scale(1, 0, 5), fp8_block_scale(second_seed(1), 0, 5));
}

}  // namespace
}  // namespace croq
