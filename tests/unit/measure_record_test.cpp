// The measurement record (croq-measurement-v1): written and read back field for field, the
// refusal of other documents, and the runner's flags built and parsed symmetrically.
#include <gtest/gtest.h>

#include <cmath>

#include "croq/measure/measurement.hpp"
#include "croq/measure/runner_options.hpp"
#include "croq/util/error.hpp"
#include "support/runner_options_sample.hpp"

namespace croq {
namespace {

Measurement sample() {
  Measurement m;
  m.croq_version = "0.1.0";
  m.croq_git = "abc123";
  m.created_at = "2026-11-29T07:12:50.123Z";
  m.kind = "candidate";
  m.verdict = Verdict::PASS;
  m.reason = "ok";
  m.candidate_path = "/w/tuning/sm90_NVIDIA_H200/cuda/bin/k/m/iter004_x.so";
  m.candidate_sha256 = std::string(64, 'a');
  m.candidate_info = {{"name", "tile128"}};
  m.problem.m = 4096;
  m.problem.n = 4096;
  m.problem.k = 4096;
  m.problem.dtype = "f16f32";
  m.problem.a_type = m.problem.b_type = "f16";
  m.problem.c_type = "f32";
  m.problem.compute_type = "f32";
  m.problem.b_layout = "col";
  m.device.name = "NVIDIA H200";
  m.device.uuid = "GPU-1234";
  m.device.key = "sm90_NVIDIA_H200";
  m.device.compute_cap = "9.0";
  m.device.driver = "580.159.04";
  m.device.sm_clock_mhz = 1980;
  m.device.peak_tflops = 989.4;
  m.seed = (uint64_t{1} << 52) + 5;
  m.second_seed = 99;
  m.verification.passed = true;
  m.verification.elements = 4096 * 4096;
  m.verification.max_abs_err = 0.0078;
  m.verification.normwise_rel_err = 3e-7;
  m.verification.tolerance = {1.0, 0.01, 1e-3, "f16/bf16 in, f32 accumulate"};
  m.verification.worst = {{1, 2, std::nan(""), 3.5}};
  m.verification.rechecked_after_timing = true;
  m.verification.second_seed_passed = true;
  Timing t;
  t.method = "cuda_events";
  t.reps = 3;
  t.warmup = 10;
  t.median_ms = 0.2;
  t.cv = 0.004;
  t.robust_cv = 0.0074;
  t.stop_reason = "cv_target";
  t.warmup_ms = 201.5;
  t.timed_ms = 104.25;
  t.wall_check_ms = 0.21;
  t.rest_ratio = 1.0;
  t.rest_ms = 98.5;
  t.samples_ms = {0.2, 0.201, 0.199};
  m.timing = t;
  m.tflops = 687.2;
  m.flags = {"near_peak"};
  m.phases = json::array({{{"phase", "check (first seed)"}, {"ms", 12.5}}, {{"phase", "timing"}, {"ms", 310.0}}});
  return m;
}

TEST(MeasureRecord, RoundTripsEveryField) {
  Measurement m = sample();
  json j = m.to_json();
  EXPECT_EQ(j["schema"], "croq-measurement-v1");
  EXPECT_EQ(j["verification"]["worst"][0]["got"], "nan");
  auto back = Measurement::from_json(json::parse(j.dump()));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->to_json().dump(), j.dump());
  EXPECT_EQ(*back->seed, (uint64_t{1} << 52) + 5);
  EXPECT_TRUE(std::isnan(back->verification.worst[0].got));
  EXPECT_EQ(back->problem.b_layout, "col");
  EXPECT_EQ(*back->device.sm_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(*back->timing->warmup_ms, 201.5);
  EXPECT_DOUBLE_EQ(*back->timing->timed_ms, 104.25);
  EXPECT_DOUBLE_EQ(*back->timing->rest_ratio, 1.0);
  EXPECT_DOUBLE_EQ(*back->timing->rest_ms, 98.5);
  EXPECT_EQ(back->phases.size(), 2u);
  EXPECT_EQ(back->phases[1]["phase"], "timing");
}

TEST(MeasureRecord, ARecordFromBeforeTheRobustSpreadGetsItFromItsSamples) {
  json j = sample().to_json();
  EXPECT_DOUBLE_EQ(j["timing"]["robust_cv"].get<double>(), 0.0074);
  j["timing"].erase("robust_cv");
  auto back = Measurement::from_json(j);
  ASSERT_TRUE(back && back->timing && back->timing->robust_cv);
  // Samples 0.199, 0.2, 0.201: MAD 0.001 around the median 0.2.
  EXPECT_NEAR(*back->timing->robust_cv, 1.4826 * 0.001 / 0.2, 1e-9);
  // Without samples either, it stays unknown.
  j["timing"].erase("samples_ms");
  back = Measurement::from_json(j);
  ASSERT_TRUE(back && back->timing);
  EXPECT_FALSE(back->timing->robust_cv);
}

TEST(MeasureRecord, AFailedMeasurementHasNullTimingAndTflops) {
  Measurement m = sample();
  m.verdict = Verdict::SEGFAULT;
  m.reason = "crashed";
  m.timing.reset();
  m.tflops.reset();
  json j = m.to_json();
  EXPECT_TRUE(j["timing"].is_null());
  EXPECT_TRUE(j["tflops"].is_null());
  auto back = Measurement::from_json(j);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->verdict, Verdict::SEGFAULT);
  EXPECT_FALSE(back->timing);
}

TEST(MeasureRecord, OtherDocumentsAreRefusedWithAReason) {
  std::string why;
  EXPECT_FALSE(Measurement::from_json(json::array(), &why));
  EXPECT_FALSE(Measurement::from_json(json{{"tflops", 5}}, &why));
  EXPECT_NE(why.find("schema"), std::string::npos);
  json j = sample().to_json();
  j["verdict"] = "GREAT";
  EXPECT_FALSE(Measurement::from_json(j, &why));
  EXPECT_NE(why.find("GREAT"), std::string::npos);
  j = sample().to_json();
  j["tflops"] = nullptr;
  EXPECT_FALSE(Measurement::from_json(j, &why));  // a PASS needs its figure
}

TEST(MeasureRunnerOptions, FlagsRoundTripThroughTheCommandLine) {
  RunnerOptions o = test::every_runner_option_set();
  RunnerOptions back = parse_runner_options(runner_arguments(o));
  EXPECT_EQ(runner_arguments(back), runner_arguments(o));
  EXPECT_EQ(back.seed, 77u);
  EXPECT_EQ(back.mode, RunMode::verify);
  EXPECT_FALSE(back.l2_flush);
  EXPECT_DOUBLE_EQ(back.cv_target, 0.02);
  EXPECT_DOUBLE_EQ(back.warmup_ms, 350);
  EXPECT_DOUBLE_EQ(back.min_time_ms, 75);
  EXPECT_DOUBLE_EQ(back.rest_ratio, 1.5);
  EXPECT_DOUBLE_EQ(back.rest_window_ms, 25);
  EXPECT_EQ(back.cusparselt, "/opt/cusparselt/lib");
  o.op = "gemm_sp";  // the 2:4 sparse operator travels too
  EXPECT_EQ(parse_runner_options(runner_arguments(o)).op, "gemm_sp");
}

TEST(MeasureRunnerOptions, BadFlagsAreUsageErrorsNamingTheFlag) {
  auto expect_usage = [](std::vector<std::string> args, const std::string& part) {
    try {
      parse_runner_options(args);
      ADD_FAILURE() << "accepted: " << part;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::usage);
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  const std::vector<std::string> ok = {"--library", "cublas", "--m", "1", "--n", "1", "--k", "1", "--dtype", "f16"};
  EXPECT_NO_THROW(parse_runner_options(ok));
  expect_usage({"--m", "1", "--n", "1", "--k", "1", "--dtype", "f16"}, "--candidate");
  expect_usage({"--library", "x", "--m", "-3", "--n", "1", "--k", "1", "--dtype", "f16"}, "--m");
  expect_usage({"--library", "x", "--m", "1", "--n", "1", "--k", "1", "--dtype", "f16", "--mode", "fast"}, "--mode");
  expect_usage({"--library", "x", "--m", "1", "--n", "1", "--k", "1", "--dtype", "f16", "--bogus"}, "--bogus");
  expect_usage({"--library", "x", "--m", "1", "--n", "1", "--k", "1", "--dtype", "f16", "--seed", "-1"}, "--seed");
  expect_usage({"--library", "x", "--m", "1", "--n", "1", "--k", "1", "--dtype", "f16", "--op", "conv"}, "conv");
  expect_usage({"--library", "x", "--m"}, "needs a value");
}

}  // namespace
}  // namespace croq

// The clock limits seen during the timed section survive the record's JSON, with their names.
TEST(MeasurementRecord, ClockLimitReasonsRoundTripWithTheirNames) {
  croq::Measurement m;
  m.device.name = "NVIDIA H200";
  m.device.sm_clock_mhz = 1980;
  m.device.min_sm_clock_mhz = 1500;
  m.device.clock_limit_reasons = 0x4 | 0x1;
  m.device.clock_samples = 40;
  m.device.limited_samples = 9;
  croq::json j = m.to_json();
  EXPECT_EQ(j["device"]["clock_limit_reasons"], croq::json({"gpu_idle", "sw_power_cap"}));
  EXPECT_EQ(j["device"]["min_sm_clock_mhz"], 1500);
  EXPECT_EQ(j["device"]["limited_samples"], 9);
  auto parsed = croq::Measurement::from_json(j);
  ASSERT_TRUE(parsed);
  const croq::Measurement& back = *parsed;
  ASSERT_TRUE(back.device.clock_limit_reasons);
  EXPECT_EQ(*back.device.clock_limit_reasons, 0x5u);
  EXPECT_EQ(back.device.min_sm_clock_mhz, 1500);
  EXPECT_EQ(back.device.clock_samples, 40);
  EXPECT_EQ(back.device.limited_samples, 9);
  EXPECT_EQ(croq::clock_reason_names(0x80 | 0x20), (std::vector<std::string>{"sw_thermal_slowdown", "hw_power_brake_slowdown"}));
  EXPECT_EQ(croq::k_limiting_clock_reasons & 0x1, 0u);  // idle is not a limit
}
