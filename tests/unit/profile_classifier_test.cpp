// The bottleneck classifier on the real H200 cuBLAS profile (compute bound) and on synthetic rows
// built from that same raw page with the deciding metrics replaced, one per class, so every class
// and its evidence is covered until the H200 fixtures of bench/gpu/profile_fixtures.sh are in.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "croq/profile/classifier.hpp"
#include "croq/profile/classify_csv.hpp"
#include "croq/profile/ncu_csv.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"

using namespace croq::profile;

namespace {

const std::string k_raw = std::string(CROQ_TEST_DATA_DIR) + "/ncu/h200/cublas_nvjet_f16_4096_full_raw.csv";
const std::string k_sol = std::string(CROQ_TEST_DATA_DIR) + "/ncu/h200/cublas_nvjet_sol_section.csv";

KernelProfile fixture_kernel() { return parse_ncu_csv(croq::read_file_or_throw(k_raw), "fixture").kernels.at(0); }

// The fixture's kernel with metrics replaced (numbers only; units stay the fixture's).
KernelProfile synthetic(const std::map<std::string, double>& values, const std::string& name) {
  KernelProfile k = fixture_kernel();
  k.name = name;
  for (const auto& [metric, v] : values) {
    auto it = k.metrics.find(metric);
    if (it == k.metrics.end()) {
      ADD_FAILURE() << "the fixture has no metric " << metric;
      continue;
    }
    it->second.number = v;
    it->second.text = std::to_string(v);
  }
  return k;
}

const RuleResult* rule(const Classification& c, const std::string& name) {
  for (const auto& r : c.rules) {
    if (r.rule == name) return &r;
  }
  return nullptr;
}

std::map<std::string, double> base(double sm, double mem, double dram, double tensor, double fma, double ctas,
                                   double duration_us) {
  return {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", sm},
          {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", mem},
          {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", dram},
          {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", tensor},
          {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed", fma},
          {"launch__grid_size", ctas},
          {"gpu__time_duration.sum", duration_us}};
}

}  // namespace

TEST(Classifier, CublasH200ProfileIsComputeBoundOnTheTensorPipe) {
  ProfileMetrics m = extract_metrics(fixture_kernel());
  EXPECT_DOUBLE_EQ(*m.sm_throughput_pct, 86.920222);
  EXPECT_EQ(m.sm_throughput_pct.source, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_DOUBLE_EQ(*m.memory_throughput_pct, 68.054116);
  EXPECT_DOUBLE_EQ(*m.dram_throughput_pct, 22.461456);
  EXPECT_DOUBLE_EQ(*m.tensor_pipe_pct, 86.920222);
  EXPECT_DOUBLE_EQ(*m.duration_us, 189.696);
  EXPECT_DOUBLE_EQ(*m.grid_ctas, 132);
  EXPECT_DOUBLE_EQ(*m.sm_count, 132);
  EXPECT_DOUBLE_EQ(*m.registers_per_thread, 168);
  EXPECT_DOUBLE_EQ(*m.shared_bytes_per_block, 214180);  // 214.18 Kbyte/block
  EXPECT_DOUBLE_EQ(*m.achieved_occupancy_pct, 14.621678);
  EXPECT_DOUBLE_EQ(*m.theoretical_occupancy_pct, 18.75);
  EXPECT_EQ(m.occupancy_limiter, "registers+shared_mem");
  EXPECT_NEAR(m.stall_pct_of_samples.at("barrier"), 6047.0 / 17911 * 100, 1e-9);
  EXPECT_NEAR(m.stall_per_issue.at("long_scoreboard"), 4.036303, 1e-9);
  EXPECT_NEAR(*m.sm_frequency_hz, 1.541690e9, 1);

  ClassifyOptions opt;
  ShapeWork w = shape_work("matmul_f16fp32_4096x4096x4096");
  opt.flops = w.flops;
  opt.dtype = w.dtype;
  Classification c = classify(m, opt);
  EXPECT_EQ(c.bottleneck, Bottleneck::compute_bound);
  EXPECT_EQ(c.confidence, "high");
  EXPECT_TRUE(rule(c, "sm_busy")->fired);
  EXPECT_TRUE(rule(c, "memory_busy")->fired);
  EXPECT_TRUE(rule(c, "compute_dominates")->fired);
  EXPECT_TRUE(rule(c, "tensor_pipe_busy")->fired);
  EXPECT_FALSE(rule(c, "dram_busy")->fired);
  EXPECT_FALSE(rule(c, "grid_underfills_gpu")->fired);
  EXPECT_EQ(rule(c, "tensor_pipe_busy")->metric, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed");
  // 2*4096^3 flop in 189.696 us = 724.5 TFLOPS; peak 4096 x 132 x 1.5417 GHz = 833.6 -> 86.9 % (= the tensor pipe).
  EXPECT_NEAR(*c.achieved_tflops, 724.5, 0.1);
  EXPECT_NEAR(*c.pct_of_peak, 86.9, 0.1);
  ASSERT_FALSE(c.hints.empty());
  EXPECT_EQ(c.hints[0].menu, "cuda IDEA menu: Compute-bound");

  croq::json j = classification_json(m, c);
  EXPECT_EQ(j["bottleneck"], "compute_bound");
  EXPECT_EQ(j["evidence"]["key_metrics"]["tensor_pipe_pct"], 86.92);
  EXPECT_EQ(j["metrics"]["occupancy_limiter"], "registers+shared_mem");
  EXPECT_EQ(j["metrics"]["warp_stalls"]["barrier"], 33.76);
  EXPECT_TRUE(j["metrics"]["warp_stalls_unit"].get<std::string>().find("PC samples") != std::string::npos);
}

TEST(Classifier, SpeedOfLightSectionAloneGivesTheSameClassWithLessConfidence) {
  KernelProfile k = parse_ncu_csv(croq::read_file_or_throw(k_sol), "sol").kernels.at(0);
  ProfileMetrics m = extract_metrics(k);
  EXPECT_DOUBLE_EQ(*m.duration_us, 189.6);  // 189,600 ns
  EXPECT_EQ(m.sm_throughput_pct.source, "GPU Speed Of Light Throughput/Compute (SM) Throughput");
  Classification c = classify(m, {});
  EXPECT_EQ(c.bottleneck, Bottleneck::compute_bound);
  EXPECT_EQ(c.confidence, "medium");  // no tensor-pipe figure to corroborate
  EXPECT_FALSE(rule(c, "tensor_pipe_busy")->value.has_value());
}

TEST(Classifier, StreamingKernelIsMemoryBoundOnDram) {
  auto v = base(24.0, 92.5, 91.8, 0, 4.0, 8448, 2400);
  Classification c = classify(extract_metrics(synthetic(v, "copy_f32x4")), {});
  EXPECT_EQ(c.bottleneck, Bottleneck::memory_bound);
  EXPECT_EQ(c.confidence, "high");
  EXPECT_TRUE(rule(c, "memory_dominates")->fired);
  EXPECT_TRUE(rule(c, "dram_busy")->fired);
  EXPECT_EQ(c.hints.at(0).menu, "cuda IDEA menu: Memory-bound");
}

TEST(Classifier, FmaLoopIsComputeBoundOnTheFmaPipe) {
  auto v = base(93.1, 2.5, 0.4, 0, 92.7, 1056, 800);
  Classification c = classify(extract_metrics(synthetic(v, "fma_chain")), {});
  EXPECT_EQ(c.bottleneck, Bottleneck::compute_bound);
  EXPECT_EQ(c.confidence, "high");
  EXPECT_TRUE(rule(c, "fma_pipe_busy")->fired);
  EXPECT_FALSE(rule(c, "tensor_pipe_busy")->fired);
}

TEST(Classifier, DependentLoadsAreLatencyBoundWithLongScoreboardEvidence) {
  auto v = base(6.0, 21.0, 19.5, 0, 0.5, 2112, 1500);
  v["smsp__pcsamp_warps_issue_stalled_long_scoreboard"] = 15500;
  v["smsp__pcsamp_warps_issue_stalled_barrier"] = 10;
  v["smsp__pcsamp_warps_issue_stalled_warpgroup_arrive"] = 0;
  v["sm__issue_active.avg.pct_of_peak_sustained_elapsed"] = 3.0;
  Classification c = classify(extract_metrics(synthetic(v, "pointer_chase")), {});
  EXPECT_EQ(c.bottleneck, Bottleneck::latency_bound);
  EXPECT_EQ(c.confidence, "high");
  const RuleResult* r = rule(c, "latency_stall_dominates");
  EXPECT_TRUE(r->fired);
  EXPECT_NE(r->meaning.find("long_scoreboard"), std::string::npos);
  EXPECT_TRUE(rule(c, "issue_slots_low")->fired);
  EXPECT_NE(c.reason.find("long_scoreboard"), std::string::npos) << c.reason;
}

TEST(Classifier, TinyGridIsLaunchBound) {
  auto v = base(1.2, 0.9, 0.3, 0, 1.0, 2, 3.1);
  Classification c = classify(extract_metrics(synthetic(v, "tiny_grid")), ClassifyOptions{"triton", {}, {}});
  EXPECT_EQ(c.bottleneck, Bottleneck::launch_bound);
  EXPECT_EQ(c.confidence, "high");
  EXPECT_TRUE(rule(c, "grid_underfills_gpu")->fired);
  EXPECT_TRUE(rule(c, "kernel_too_short")->fired);
  EXPECT_EQ(c.hints.at(0).menu, "triton IDEA menu: Launch-bound");
  EXPECT_EQ(c.hints.at(0).idea, "Persistent kernel: grid-stride loop; operator fusion");
}

TEST(Classifier, BusyComputeAndMemoryWithinTenPointsIsMixed) {
  auto v = base(74.0, 79.0, 78.0, 0, 70.0, 4224, 950);
  Classification c = classify(extract_metrics(synthetic(v, "fma_stream_48")), ClassifyOptions{"croqtile", {}, {}});
  EXPECT_EQ(c.bottleneck, Bottleneck::mixed);
  EXPECT_FALSE(rule(c, "compute_dominates")->fired);
  EXPECT_FALSE(rule(c, "memory_dominates")->fired);
  ASSERT_GE(c.hints.size(), 2u);
  EXPECT_EQ(c.hints[0].menu, "croqtile IDEA menu: Memory-bound");
  EXPECT_EQ(c.hints[1].menu, "croqtile IDEA menu: Compute-bound");
}

TEST(Classifier, NearTheThresholdConfidenceDrops) {
  auto v = base(61.5, 20.0, 5.0, 0, 10.0, 1056, 500);
  Classification c = classify(extract_metrics(synthetic(v, "edge")), {});
  EXPECT_EQ(c.bottleneck, Bottleneck::compute_bound);
  EXPECT_EQ(c.confidence, "low");
  EXPECT_LT(c.score, 0.5);
}

TEST(Classifier, ConditionalHintsForSpillsBankConflictsAndL2Thrash) {
  auto v = base(20.0, 88.0, 86.0, 0, 5.0, 4096, 1200);
  v["smsp__sass_inst_executed_op_local_ld.sum"] = 4096;
  v["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"] = 5e6;  // of 26,242,124 wavefronts: 19 %
  v["lts__t_sector_hit_rate.pct"] = 31.0;
  Classification c = classify(extract_metrics(synthetic(v, "spilly")), ClassifyOptions{"croqtile", {}, {}});
  EXPECT_EQ(c.bottleneck, Bottleneck::memory_bound);
  std::vector<std::string> menus;
  for (const auto& h : c.hints) menus.push_back(h.menu);
  EXPECT_NE(std::find(menus.begin(), menus.end(), "croqtile IDEA menu: Register pressure"), menus.end());
  EXPECT_NE(std::find(menus.begin(), menus.end(), "croqtile IDEA menu: Bank conflicts"), menus.end());
  EXPECT_NE(std::find(menus.begin(), menus.end(), "croqtile IDEA menu: L2 thrash"), menus.end());
}

TEST(Classifier, ProfileWithoutThroughputFiguresIsRefusedNotGuessed) {
  KernelProfile k;
  k.name = "k";
  k.metrics["gpu__time_duration.sum"] = MetricValue{"12", "us", 12.0};
  try {
    classify(extract_metrics(k), {});
    FAIL() << "classified a profile without throughput figures";
  } catch (const croq::Error& e) {
    EXPECT_EQ(e.code(), croq::ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("sm__throughput"), std::string::npos);
  }
}

TEST(Classifier, UnknownUnitLeavesTheFigureOutWithAWarning) {
  KernelProfile k = fixture_kernel();
  k.metrics["gpu__time_duration.sum"].unit = "fortnight";
  ProfileMetrics m = extract_metrics(k);
  EXPECT_FALSE(m.duration_us.value.has_value());
  ASSERT_FALSE(m.warnings.empty());
  EXPECT_NE(m.warnings[0].find("fortnight"), std::string::npos);
}

TEST(Classifier, UnitConversions) {
  EXPECT_DOUBLE_EQ(*to_microseconds(189600, "ns"), 189.6);
  EXPECT_DOUBLE_EQ(*to_microseconds(1.5, "msecond"), 1500);
  EXPECT_DOUBLE_EQ(*to_bytes(214.18, "Kbyte/block"), 214180);
  EXPECT_DOUBLE_EQ(*to_bytes(2, "KiB"), 2048);
  EXPECT_DOUBLE_EQ(*to_hertz(1.5, "Ghz"), 1.5e9);
  EXPECT_DOUBLE_EQ(*to_hertz(1543251582.28, "hz"), 1543251582.28);
  EXPECT_FALSE(to_bytes(1, "furlong"));
}

TEST(Classifier, PeakRates) {
  EXPECT_EQ(*peak_flop_per_clock_per_sm("9.0", "f16f32"), 4096);
  EXPECT_EQ(*peak_flop_per_clock_per_sm("9.0", "e4m3f16"), 8192);
  EXPECT_EQ(*peak_flop_per_clock_per_sm("9.0", "f32"), 256);
  EXPECT_FALSE(peak_flop_per_clock_per_sm("7.5", "f16f32"));
}
