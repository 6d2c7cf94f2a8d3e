// The verification rule: the tolerance table, the element formula at its boundary, the host
// comparison's figures, and the narrow-type conversions it reads outputs with.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "croq/measure/numeric.hpp"
#include "croq/measure/portable.hpp"
#include "croq/measure/tolerance.hpp"

namespace croq {
namespace {

TEST(MeasureTolerance, TheTableHasTheSeedsValues) {
  ToleranceSpec f16 = tolerance_for(*parse_dtype_pair("f16f32"));
  EXPECT_DOUBLE_EQ(f16.base_tol, 1.0);
  EXPECT_DOUBLE_EQ(f16.rel_tol, 0.01);
  ToleranceSpec bf16 = tolerance_for(*parse_dtype_pair("bf16"));
  EXPECT_DOUBLE_EQ(bf16.base_tol, 1.0);
  EXPECT_DOUBLE_EQ(bf16.rel_tol, 0.01);
  ToleranceSpec fp8 = tolerance_for(*parse_dtype_pair("e4m3f16"));
  EXPECT_DOUBLE_EQ(fp8.base_tol, 0.5);
  EXPECT_DOUBLE_EQ(fp8.rel_tol, 0.01);
  ToleranceSpec acc16 = f16_accumulate_tolerance();
  EXPECT_DOUBLE_EQ(acc16.base_tol, 16.0);
  EXPECT_DOUBLE_EQ(acc16.rel_tol, 0.05);
  // A silent drop to tf32 must not pass an f32 problem's normwise limit.
  EXPECT_LT(tolerance_for(*parse_dtype_pair("f32")).normwise, 3e-4);
  EXPECT_GT(tolerance_for(*parse_dtype_pair("tf32")).normwise, 1e-3);
}

TEST(MeasureTolerance, AnElementFailsOnlyBeyondBasePlusRelativeTimesWant) {
  // |got - want| <= base + rel * |want| passes, exactly at the boundary too.
  EXPECT_FALSE(element_fails(102.0, 100.0, 1.0, 0.01));
  EXPECT_TRUE(element_fails(102.0001, 100.0, 1.0, 0.01));
  EXPECT_FALSE(element_fails(-98.0, -100.0, 1.0, 0.01));
  EXPECT_TRUE(element_fails(std::nan(""), 1.0, 1.0, 0.01));
  EXPECT_TRUE(element_fails(std::numeric_limits<double>::infinity(), 1.0, 1.0, 0.01));
}

TEST(MeasureTolerance, HostComparisonCountsMismatchesNansAndListsTheWorst) {
  const int64_t m = 3, n = 4;
  std::vector<float> want = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<float> got = want;
  got[5] = 60;                                      // (1,1): off by 54
  got[10] = std::numeric_limits<float>::quiet_NaN(); // (2,2): poison left
  got[0] = 1.5f;                                    // within tolerance
  Verification v;
  compare_host(got.data(), ScalarType::f32, want.data(), m, n, tolerance_for(*parse_dtype_pair("f32")), v, 4);
  EXPECT_EQ(v.elements, 12);
  EXPECT_EQ(v.mismatches, 2);
  EXPECT_EQ(v.nan_count, 1);
  EXPECT_DOUBLE_EQ(v.max_abs_err, 54.0);
  EXPECT_FALSE(*v.passed);
  ASSERT_GE(v.worst.size(), 2u);
  EXPECT_EQ(v.worst[0].i, 2);  // NaN first: infinitely far outside its tolerance
  EXPECT_EQ(v.worst[0].j, 2);
  EXPECT_EQ(v.worst[1].i, 1);
  EXPECT_EQ(v.worst[1].j, 1);
  EXPECT_DOUBLE_EQ(v.worst[1].got, 60.0);
}

// The block-scaled operator's rule adds 2^-10 x sum|a b| (scaled) to the element limit: an element
// whose scaled products cancel to near zero may err by a rounding of the magnitude, not more; the
// dense e4m3 rule and every other row have no such term.
TEST(MeasureTolerance, TheBlockScaledLimitGrowsWithTheElementsMagnitude) {
  const DtypePair d = *parse_dtype_pair("e4m3bf16");
  const ToleranceSpec block = tolerance_for(d, "blockscaled");
  EXPECT_DOUBLE_EQ(block.mag_tol, 1.0 / 1024);
  EXPECT_DOUBLE_EQ(tolerance_for(d, "matmul").mag_tol, 0.0);
  EXPECT_DOUBLE_EQ(tolerance_for(*parse_dtype_pair("f16f32")).mag_tol, 0.0);
  // Element 0: want 2, magnitude 2e5 (limit 0.5 + 0.02 + 195.3); element 1: the same error, no magnitude.
  const std::vector<float> want = {2.0f, 2.0f}, mag = {2e5f, 0.0f};
  std::vector<float> got = {2.0f + 150.0f, 2.0f};
  Verification v;
  compare_host(got.data(), ScalarType::f32, want.data(), 1, 2, block, v, 4, mag.data());
  EXPECT_EQ(v.mismatches, 0);
  EXPECT_EQ(v.magnitude_excused, 1);  // element 0 passes only through the magnitude term
  got = {2.0f + 250.0f, 2.0f + 150.0f};
  compare_host(got.data(), ScalarType::f32, want.data(), 1, 2, block, v, 4, mag.data());
  EXPECT_EQ(v.mismatches, 2);  // beyond 2^-10 x 2e5, and no magnitude to excuse the other
  // Without the magnitude (a rule that has none), the first error fails too.
  got = {2.0f + 150.0f, 2.0f};
  compare_host(got.data(), ScalarType::f32, want.data(), 1, 2, block, v, 4, nullptr);
  EXPECT_EQ(v.mismatches, 1);
  EXPECT_FALSE(element_fails(152.0, 2.0, 0.5, 0.01, 195.3125));
  EXPECT_TRUE(element_fails(252.0, 2.0, 0.5, 0.01, 195.3125));
}

TEST(MeasureTolerance, NormwiseErrorCatchesASmallErrorEverywhere) {
  const int64_t m = 10, n = 10;
  std::vector<float> want(100), got(100);
  for (int i = 0; i < 100; ++i) {
    want[i] = 10.0f + i;
    got[i] = want[i] * 1.005f;  // inside every element's tolerance, 5e-3 normwise
  }
  Verification v;
  compare_host(got.data(), ScalarType::f32, want.data(), m, n, tolerance_for(*parse_dtype_pair("f16f32")), v);
  EXPECT_EQ(v.mismatches, 0);
  EXPECT_NEAR(v.normwise_rel_err, 5e-3, 1e-5);
  EXPECT_FALSE(*v.passed);
}

TEST(MeasureTolerance, SixteenBitOutputsAreReadAsTheirValues) {
  std::vector<float> want = {1.0f, -2.5f, 1000.0f};
  std::vector<uint16_t> h = {f32_to_f16(1.0f), f32_to_f16(-2.5f), f32_to_f16(1000.0f)};
  Verification v;
  compare_host(h.data(), ScalarType::f16, want.data(), 1, 3, tolerance_for(*parse_dtype_pair("f16")), v);
  EXPECT_TRUE(*v.passed);
  std::vector<uint16_t> poisoned = {0xFFFF, 0xFFFF, 0xFFFF};
  compare_host(poisoned.data(), ScalarType::bf16, want.data(), 1, 3, tolerance_for(*parse_dtype_pair("bf16")), v);
  EXPECT_EQ(v.nan_count, 3);
}

TEST(MeasureNumeric, ConversionsRoundToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);                // rounds to infinity
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3C00);      // tie: to even
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048), 0x3C02);      // tie: to even (up)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);   // smallest subnormal
  EXPECT_FLOAT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_FLOAT_EQ(bf16_to_f32(f32_to_bf16(3.140625f)), 3.140625f);
  EXPECT_FLOAT_EQ(e4m3_to_f32(f32_to_e4m3(448.0f)), 448.0f);
  EXPECT_FLOAT_EQ(e4m3_to_f32(f32_to_e4m3(1000.0f)), 448.0f);  // saturates
  EXPECT_FLOAT_EQ(e4m3_to_f32(f32_to_e4m3(-0.3f)), -0.3125f);
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7F)));
  for (int code = 0; code < 0x7F; ++code) {
    EXPECT_EQ(f32_to_e4m3(e4m3_to_f32(static_cast<uint8_t>(code))), code) << code;
  }
}

TEST(MeasureRandomInputs, ValuesAreUniformInMinusOneToOneAndNeverAllZero) {
  double sum = 0;
  int zeros = 0;
  float lo = 1, hi = -1;
  for (uint64_t i = 0; i < 100000; ++i) {
    float x = random_uniform(7, k_stream_a, i);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
    zeros += x == 0.0f;
  }
  EXPECT_GE(lo, -1.0f);
  EXPECT_LT(hi, 1.0f);
  EXPECT_LT(lo, -0.99f);
  EXPECT_GT(hi, 0.99f);
  EXPECT_NEAR(sum / 100000, 0.0, 0.01);
  EXPECT_LT(zeros, 5);
  EXPECT_NE(random_uniform(7, k_stream_a, 0), random_uniform(8, k_stream_a, 0));
  EXPECT_NE(random_uniform(7, k_stream_a, 0), random_uniform(7, k_stream_b, 0));
  EXPECT_NE(second_seed(7), 7u);
}

}  // namespace
}  // namespace croq
