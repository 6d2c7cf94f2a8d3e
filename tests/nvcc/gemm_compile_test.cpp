// Rendered GEMM sources compile with the real nvcc for their targets (ptxas only: -cubin, no
// GPU needed), without register spills, and a configuration the family refuses is also refused
// by the template's own static_asserts. Label nvcc; skipped where no nvcc is installed. A handful
// of configurations only: each compile takes tens of seconds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "croq/search/ampere_gemm_family.hpp"
#include "croq/search/hopper_gemm_family.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/host_check_run.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

std::optional<std::filesystem::path> nvcc_path() {
  if (const char* e = std::getenv("CROQ_NVCC"); e && *e) return std::filesystem::path(e);
  if (std::filesystem::exists("/usr/local/cuda/bin/nvcc")) return std::filesystem::path("/usr/local/cuda/bin/nvcc");
  return find_executable("nvcc");
}

FamilyProblem problem(int64_t m, int64_t n, int64_t k, const std::string& dtype, bool col, const std::string& arch) {
  FamilyProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.dtype = parse_dtype_pair_or_throw(dtype);
  p.b_col_major = col;
  p.arch = arch;
  return p;
}

struct Compiled {
  bool ok = false;
  std::string log;
};

Compiled compile(const KernelFamily& f, const FamilyConfig& c, const FamilyProblem& p) {
  test::TempDir dir;
  const auto src = dir / "candidate.cu";
  atomic_write(src, f.render_source(c, p), false);
  ProcessSpec spec;
  spec.argv = {nvcc_path()->string()};
  for (const auto& flag : f.build_flags(c, p)) spec.argv.push_back(flag);
  spec.argv.insert(spec.argv.end(), {"-I" + find_project_dir("include").string(), "-cubin", "-Xptxas", "-v", "-o",
                                     (dir / "candidate.cubin").string(), src.string()});
  spec.timeout = std::chrono::milliseconds(900000);
  ProcessResult r = process_runner().run(spec);
  return {r.ok(), r.out + r.err};
}

void expect_no_spills(const Compiled& c) {
  EXPECT_NE(c.log.find("registers"), std::string::npos) << c.log;
  std::smatch m;
  std::regex spill("([0-9]+) bytes spill stores");
  auto begin = std::sregex_iterator(c.log.begin(), c.log.end(), spill);
  int reports = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it, ++reports) EXPECT_EQ((*it)[1].str(), "0") << c.log;
  EXPECT_GT(reports, 0) << c.log;
}

TEST(GemmTemplatesCompile, HopperDefaultForALargeSquare) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  auto p = problem(4096, 4096, 4096, "f16f32", false, "sm_90a");
  auto c = f.default_config(p);
  ASSERT_FALSE(f.violation(c, p));
  auto r = compile(f, c, p);
  ASSERT_TRUE(r.ok) << r.log;
  expect_no_spills(r);
}

TEST(GemmTemplatesCompile, HopperClusterOfFourRegisterEpilogueNarrowSwizzle) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  auto p = problem(1000, 4100, 520, "bf16", true, "sm_90a");
  FamilyConfig c{{"BM", "64"},        {"BN", "224"},      {"BK", "32"},        {"STAGES", "6"},
                 {"CONSUMERS", "1"},  {"PINGPONG", "0"},  {"PERSISTENT", "0"}, {"RASTER", "2"},     {"GROUP", "4"},
                 {"CLUSTER_M", "2"},  {"CLUSTER_N", "2"},  {"EPILOGUE", "0"},   {"SWIZZLE", "32"},
                 {"MMA_DEPTH", "0"},  {"SPLIT_K", "1"}, {"STREAM_K", "0"}, {"PROMOTE_EVERY", "1"}, {"SCALE_STAGE", "0"}};
  ASSERT_FALSE(f.violation(c, p)) << *f.violation(c, p);
  auto r = compile(f, c, p);
  ASSERT_TRUE(r.ok) << r.log;
  expect_no_spills(r);
}

TEST(GemmTemplatesCompile, HopperSplitKClusterQuadTransposedEpilogue) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  auto p = problem(1024, 1024, 4096, "bf16", true, "sm_90a");
  FamilyConfig c{{"BM", "128"},       {"BN", "256"},      {"BK", "64"},        {"STAGES", "4"},
                 {"CONSUMERS", "2"},  {"PINGPONG", "0"},  {"PERSISTENT", "1"}, {"RASTER", "3"},     {"GROUP", "4"},
                 {"CLUSTER_M", "2"},  {"CLUSTER_N", "1"},  {"EPILOGUE", "2"},   {"SWIZZLE", "128"},
                 {"MMA_DEPTH", "1"},  {"SPLIT_K", "4"}, {"STREAM_K", "0"}, {"PROMOTE_EVERY", "1"}, {"SCALE_STAGE", "0"}};
  ASSERT_FALSE(f.violation(c, p)) << *f.violation(c, p);
  auto r = compile(f, c, p);
  ASSERT_TRUE(r.ok) << r.log;
  expect_no_spills(r);
}

TEST(GemmTemplatesCompile, HopperPingPongSplitKTmaEpilogue) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  auto p = problem(768, 768, 768, "f16", false, "sm_90a");
  FamilyConfig c{{"BM", "128"},       {"BN", "128"},      {"BK", "64"},        {"STAGES", "6"},
                 {"CONSUMERS", "2"},  {"PINGPONG", "1"},  {"PERSISTENT", "1"}, {"RASTER", "1"},     {"GROUP", "8"},
                 {"CLUSTER_M", "1"},  {"CLUSTER_N", "1"},  {"EPILOGUE", "1"},   {"SWIZZLE", "128"},
                 {"MMA_DEPTH", "1"},  {"SPLIT_K", "3"}, {"STREAM_K", "0"}, {"PROMOTE_EVERY", "1"}, {"SCALE_STAGE", "0"}};
  ASSERT_FALSE(f.violation(c, p)) << *f.violation(c, p);
  auto r = compile(f, c, p);
  ASSERT_TRUE(r.ok) << r.log;
  expect_no_spills(r);
}

// The accumulator limits of the family (HopperGemmFamily::max_accumulators) are what ptxas
// compiles without spilling: the largest tile of each kind at its limit builds clean, and one step
// beyond is refused by the family and by the template's static_assert alike.
TEST(GemmTemplatesCompile, HopperAccumulatorLimitsCompileWithoutSpills) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  auto p = problem(4096, 4096, 4096, "f16f32", true, "sm_90a");
  FamilyConfig base{{"BM", "256"},      {"BN", "192"},     {"BK", "64"},        {"STAGES", "3"},
                    {"CONSUMERS", "2"}, {"PINGPONG", "0"}, {"PERSISTENT", "1"}, {"RASTER", "1"},    {"GROUP", "8"},
                    {"CLUSTER_M", "1"}, {"CLUSTER_N", "1"}, {"EPILOGUE", "1"},  {"SWIZZLE", "128"},
                    {"MMA_DEPTH", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", "0"}, {"PROMOTE_EVERY", "1"}, {"SCALE_STAGE", "0"}};
  auto with = [&](std::map<std::string, std::string> changes) {
    FamilyConfig c = base;
    for (auto& [k, v] : changes) c[k] = v;
    return c;
  };
  struct Case {
    FamilyConfig config;
    int accumulators;
  };
  const std::vector<Case> at_limit = {
      {base, 192},                                                                    // 2 consumers of 128 x 192
      {with({{"BM", "128"}, {"BN", "160"}, {"PINGPONG", "1"}, {"SPLIT_K", "2"}}), 160},  // ping-pong, split-K
      {with({{"BM", "192"}, {"CONSUMERS", "3"}, {"CLUSTER_M", "2"}}), 96},              // 3 consumers of 64 x 192
      {with({{"BM", "192"}, {"BN", "128"}, {"CONSUMERS", "3"}, {"SPLIT_K", "2"}}), 64},
      {with({{"BN", "128"}, {"STREAM_K", "1"}, {"CLUSTER_M", "2"}}), 128},                   // stream-K
      {with({{"BM", "192"}, {"BN", "128"}, {"CONSUMERS", "3"}, {"STREAM_K", "1"}, {"CLUSTER_M", "2"}}), 64},
  };
  for (const auto& [c, acc] : at_limit) {
    SCOPED_TRACE(config_to_json(c).dump());
    ASSERT_FALSE(f.violation(c, p)) << *f.violation(c, p);
    EXPECT_EQ(HopperGemmFamily::accumulator_registers(c), acc);
    EXPECT_EQ(HopperGemmFamily::max_accumulators(c), acc);
    auto r = compile(f, c, p);
    ASSERT_TRUE(r.ok) << r.log;
    expect_no_spills(r);
  }
  for (const auto& c : {with({{"SPLIT_K", "2"}}), with({{"BM", "192"}, {"BN", "224"}, {"CONSUMERS", "3"}}),
                        with({{"BN", "160"}, {"STREAM_K", "1"}})}) {
    SCOPED_TRACE(config_to_json(c).dump());
    auto why = f.violation(c, p);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("accumulators"), std::string::npos) << *why;
    auto r = compile(f, c, p);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.log.find("too many accumulators per consumer thread"), std::string::npos) << r.log;
  }
}

// The template's work schedule (data-parallel units, split-K slices, the stream-K region), built
// from the template itself into a host program (tests/nvcc/hopper_schedule_check.cu) and run on
// the CPU for many problems and cluster counts: every k block once, one writer per tile, partial
// sums published before anyone waits for them.
TEST(GemmTemplatesCompile, HopperWorkScheduleCoversEveryKBlockOnce) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  const auto tmpl = find_project_dir("kernels") / "cuda" / "matmul" / "hopper";
  for (const std::vector<std::string>& defines :
       {std::vector<std::string>{"-DCROQ_STREAM_K=1"}, {"-DCROQ_STREAM_K=1", "-DCROQ_CLUSTER_M=2", "-DCROQ_CLUSTER_N=2"},
        {"-DCROQ_STREAM_K=1", "-DCROQ_SK_ORDER=1"}, {"-DCROQ_STREAM_K=1", "-DCROQ_SK_ORDER=1", "-DCROQ_CLUSTER_N=2"},
        {"-DCROQ_STREAM_K=1", "-DCROQ_SK_FULL_WAVES=0"},
        {"-DCROQ_STREAM_K=1", "-DCROQ_SK_ORDER=1", "-DCROQ_SK_FULL_WAVES=0", "-DCROQ_CLUSTER_N=2"},
        {"-DCROQ_STREAM_K=1", "-DCROQ_SK_ORDER=1", "-DCROQ_SK_FULL_WAVES=2"}, {"-DCROQ_SPLIT_K=3"},
        {"-DCROQ_SPLIT_K=1"}}) {
    std::string trace;
    for (const auto& d : defines) trace += (trace.empty() ? "" : " ") + d;
    SCOPED_TRACE(trace);
    std::vector<std::string> all = {"-DCROQ_DTYPES=1", "-DCROQ_BLAYOUTS=1"};
    all.insert(all.end(), defines.begin(), defines.end());
    const auto c = test::run_host_check(*nvcc_path(), "hopper_schedule_check", tmpl, all);
    ASSERT_TRUE(c.built) << c.build_log;
    const ProcessResult& r = c.run;
    EXPECT_TRUE(r.ok()) << r.out << r.err;
    EXPECT_NE(r.out.find("schedule ok"), std::string::npos) << r.out;
  }
}

TEST(GemmTemplatesCompile, AmpereDefaultForSm80) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  AmpereGemmFamily f;
  auto p = problem(4096, 4096, 4096, "bf16f32", true, "sm_80");
  auto c = f.default_config(p);
  ASSERT_FALSE(f.violation(c, p));
  auto r = compile(f, c, p);
  ASSERT_TRUE(r.ok) << r.log;
  expect_no_spills(r);
}

TEST(GemmTemplatesCompile, AConfigurationTheFamilyRefusesDoesNotCompileEither) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  auto p = problem(4096, 4096, 4096, "f16f32", false, "sm_90a");
  auto c = f.default_config(p);
  c["BM"] = "128";
  c["BN"] = "256";
  c["STAGES"] = "6";
  auto why = f.violation(c, p);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("shared memory"), std::string::npos);
  auto r = compile(f, c, p);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("227 KB of shared memory"), std::string::npos) << r.log;
}

TEST(GemmTemplatesCompile, SplitKWithoutAPersistentGridIsRefusedByBoth) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  auto p = problem(1024, 1024, 4096, "f16f32", false, "sm_90a");
  auto c = f.default_config(p);
  c["SPLIT_K"] = "2";
  c["PERSISTENT"] = "0";
  auto why = f.violation(c, p);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("PERSISTENT=1"), std::string::npos);
  auto r = compile(f, c, p);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("CROQ_PERSISTENT=1"), std::string::npos) << r.log;
}

}  // namespace
}  // namespace croq
