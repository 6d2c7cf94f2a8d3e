// The timing-roofline CPU profile: each class from a measurement whose rate sits in its band of the
// machine's peak, the evidence it reports, and the refusal of a measurement without timing.
#include <gtest/gtest.h>

#include "croq/profile/cpu_profile.hpp"
#include "croq/util/error.hpp"

using croq::json;
using croq::profile::classify_cpu_measurement;
using croq::profile::CpuMachine;

namespace {

CpuMachine machine_100_gflops() {
  CpuMachine m;
  m.cores = 1;
  m.mhz = 3125;
  m.f32_flop_per_cycle = 32;  // 100 GFLOPS
  m.isa = "avx2";
  m.dram_gbps = 20;
  return m;
}

// A 512^3 f32 GEMM (268.4 MFLOP) that ran at `gflops`.
json measured_at(double gflops) {
  const double flops = 2.0 * 512 * 512 * 512;
  return {{"problem", {{"m", 512}, {"n", 512}, {"k", 512}}}, {"timing", {{"median_ms", flops / (gflops * 1e6)}}}};
}

TEST(CpuProfile, NearPeakIsComputeBound) {
  json d = classify_cpu_measurement(measured_at(70), machine_100_gflops(), "iter003_x");
  EXPECT_EQ(d["bottleneck"], "compute_bound");
  EXPECT_EQ(d["method"], "cpu-timing");
  EXPECT_NEAR(d["metrics"]["pct_of_peak"].get<double>(), 70.0, 0.2);
  EXPECT_EQ(d["kernel"], "iter003_x");
}

TEST(CpuProfile, FarBelowPeakIsMemoryBound) {
  json d = classify_cpu_measurement(measured_at(5), machine_100_gflops(), "k");
  EXPECT_EQ(d["bottleneck"], "memory_bound");
  ASSERT_FALSE(d["hints"].empty());
}

TEST(CpuProfile, BetweenTheLinesIsLatencyBound) {
  json d = classify_cpu_measurement(measured_at(35), machine_100_gflops(), "k");
  EXPECT_EQ(d["bottleneck"], "latency_bound");
}

TEST(CpuProfile, TinyCallsAreLaunchBound) {
  json m = {{"problem", {{"m", 8}, {"n", 8}, {"k", 8}}}, {"timing", {{"median_ms", 0.001}}}};
  json d = classify_cpu_measurement(m, machine_100_gflops(), "k");
  EXPECT_EQ(d["bottleneck"], "launch_bound");
}

TEST(CpuProfile, ConfidenceIsNeverHighAndRulesAreReported) {
  for (double g : {1.0, 20.0, 35.0, 49.0, 95.0}) {
    json d = classify_cpu_measurement(measured_at(g), machine_100_gflops(), "k");
    EXPECT_NE(d["confidence"], "high") << g;
    EXPECT_NE(d["bottleneck"], "unknown") << g;
    EXPECT_EQ(d["evidence"]["rules"].size(), 4u);
  }
}

TEST(CpuProfile, AMeasurementWithoutTimingIsRefused) {
  json m = {{"problem", {{"m", 8}, {"n", 8}, {"k", 8}}}, {"verdict", "VERIFY_FAIL"}};
  EXPECT_THROW(classify_cpu_measurement(m, machine_100_gflops(), "k"), croq::Error);
}

TEST(CpuProfile, ThisMachineHasAPositivePeak) {
  CpuMachine m = croq::profile::this_cpu();
  EXPECT_GE(m.cores, 1);
  EXPECT_GT(m.peak_gflops(), 0);
}

}  // namespace
