// Rendered hopper_gemm_sp sources compile with the real nvcc for sm_90a (ptxas only: -cubin, no GPU
// needed) without register spills, the family's accumulator limits are what ptxas allocates, a
// configuration the family refuses is refused by the template's static_asserts too, and the
// prepared-A layout hands every sparse WGMMA the metadata the PTX ISA expects (a host program built
// from the template). Label nvcc; skipped where no nvcc is installed.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "croq/build/builder.hpp"
#include "croq/build/symbols.hpp"
#include "croq/measure/elf_scan.hpp"
#include "croq/search/hopper_gemm_sp_family.hpp"
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

FamilyProblem problem(int64_t m, int64_t n, int64_t k, const std::string& dtype) {
  FamilyProblem p;
  p.op = "gemm_sp";
  p.m = m;
  p.n = n;
  p.k = k;
  p.dtype = parse_dtype_pair_or_throw(dtype);
  p.b_col_major = true;
  p.arch = "sm_90a";
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
  std::regex spill("([0-9]+) bytes spill stores");
  int reports = 0;
  for (auto it = std::sregex_iterator(c.log.begin(), c.log.end(), spill); it != std::sregex_iterator(); ++it, ++reports)
    EXPECT_EQ((*it)[1].str(), "0") << c.log;
  EXPECT_GT(reports, 0) << c.log;
  EXPECT_EQ(c.log.find("serialized"), std::string::npos) << c.log;  // no wgmma serialization warning
}

FamilyConfig with(FamilyConfig c, const std::map<std::string, std::string>& changes) {
  for (const auto& [k, v] : changes) c[k] = v;
  return c;
}

TEST(GemmSpTemplatesCompile, DefaultsForTheReferenceShape) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmSpFamily f;
  for (const char* dt : {"f16", "e4m3f16", "f16f32"}) {
    SCOPED_TRACE(dt);
    auto p = problem(4096, 8192, 8192, dt);
    auto c = f.default_config(p);
    ASSERT_FALSE(f.violation(c, p));
    auto r = compile(f, c, p);
    ASSERT_TRUE(r.ok) << r.log;
    expect_no_spills(r);
  }
}

// The accumulator limits (HopperGemmSpFamily::max_accumulators) are what ptxas compiles without
// spilling, for the variants that hold the most registers beside the accumulators (two metadata
// register sets prefetched from L2, hoisted or loaded per WGMMA, the quad-transposed and TMA
// epilogues, split-K, clusters), and one step beyond is refused by the family and by the template's
// static_assert alike. (With the second metadata set, ptxas spilled 4-12 bytes at 192 accumulators
// with META 0 and in a ping-pong kernel with META 2.)
TEST(GemmSpTemplatesCompile, AccumulatorLimitsCompileWithoutSpills) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmSpFamily f;
  const FamilyConfig base{{"BM", "256"},       {"BN", "192"},       {"BK", "64"},       {"STAGES", "2"},
                          {"CONSUMERS", "2"},  {"PINGPONG", "0"},   {"PERSISTENT", "1"}, {"RASTER", "1"},
                          {"GROUP", "8"},      {"CLUSTER_M", "1"},  {"CLUSTER_N", "1"},  {"EPILOGUE", "2"},
                          {"SWIZZLE_A", "64"}, {"SWIZZLE_B", "128"}, {"MMA_DEPTH", "1"}, {"META", "2"},
                          {"SPLIT_K", "1"},    {"SPLIT_TAIL", "0"}, {"PROMOTE", "0"},    {"PROMOTE_SUB", "0"}};
  struct Case {
    FamilyConfig config;
    const char* dtype;
    int accumulators;
  };
  const std::vector<Case> at_limit = {
      {base, "f16", 192},
      {with(base, {{"META", "1"}, {"EPILOGUE", "1"}}), "f16", 192},
      {with(base, {{"BK", "128"}, {"CLUSTER_M", "2"}}), "e4m3f16", 192},
      {with(base, {{"BN", "160"}, {"BK", "128"}, {"META", "1"}, {"SWIZZLE_A", "128"}}), "f16", 160},
      {with(base, {{"BN", "160"}, {"BK", "128"}, {"EPILOGUE", "1"}, {"SWIZZLE_A", "128"}}), "f16f32", 160},
      {with(base, {{"BM", "128"}, {"BN", "160"}, {"PINGPONG", "1"}, {"META", "1"}}), "f16", 160},
      {with(base, {{"BM", "128"}, {"BN", "160"}, {"PINGPONG", "1"}, {"META", "0"}}), "f16", 160},
      {with(base, {{"BN", "160"}, {"META", "0"}}), "f16", 160},
      {with(base, {{"BM", "128"}, {"PINGPONG", "1"}, {"EPILOGUE", "1"}, {"BK", "128"}, {"META", "1"}}), "e4m3f16", 192},
      {with(base, {{"BM", "128"}, {"BN", "160"}, {"PINGPONG", "1"}, {"EPILOGUE", "1"}, {"BK", "128"}}), "e4m3f16", 160},
      {with(base, {{"BN", "160"}, {"SPLIT_K", "2"}}), "f16", 160},
      // split-K of the last wave only (the same reduction, whole tiles before it), in a 2x1 cluster
      {with(base, {{"BN", "160"}, {"SPLIT_K", "5"}, {"SPLIT_TAIL", "1"}, {"CLUSTER_M", "2"}, {"META", "1"},
                   {"EPILOGUE", "1"}}),
       "f16", 160},
      {with(base, {{"BN", "128"}, {"BK", "128"}, {"SPLIT_K", "2"}, {"META", "1"}, {"SWIZZLE_A", "128"}}), "f16",
       128},
  };
  for (const auto& [c, dt, acc] : at_limit) {
    const auto p = problem(4096, 8192, 8192, dt);
    SCOPED_TRACE(std::string(dt) + " " + config_to_json(c).dump());
    ASSERT_FALSE(f.violation(c, p)) << *f.violation(c, p);
    EXPECT_EQ(HopperGemmSpFamily::accumulator_registers(c), acc);
    EXPECT_EQ(HopperGemmSpFamily::max_accumulators(c, p.dtype), acc);
    auto r = compile(f, c, p);
    ASSERT_TRUE(r.ok) << r.log;
    expect_no_spills(r);
  }
  const std::vector<std::pair<FamilyConfig, const char*>> beyond = {
      {with(base, {{"BK", "128"}, {"META", "1"}, {"SWIZZLE_A", "128"}}), "f16"},
      {with(base, {{"BM", "128"}, {"PINGPONG", "1"}, {"META", "1"}}), "f16"},
      {with(base, {{"SPLIT_K", "2"}}), "e4m3f16"},
      {with(base, {{"META", "0"}}), "f16"},
      {with(base, {{"BM", "128"}, {"PINGPONG", "1"}, {"EPILOGUE", "1"}, {"BK", "128"}}), "e4m3f16"},
  };
  for (const auto& [c, dt] : beyond) {
    const auto p = problem(4096, 8192, 8192, dt);
    SCOPED_TRACE(std::string(dt) + " " + config_to_json(c).dump());
    auto why = f.violation(c, p);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("accumulators"), std::string::npos) << *why;
    auto r = compile(f, c, p);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.log.find("too many accumulators per consumer thread"), std::string::npos) << r.log;
  }
}

// Promotion (PROMOTE, e4m3 two-level accumulation): every configuration the family's defaults and
// alternatives choose for e4m3 at long K compiles without spills, as do the variants holding the
// most registers beside the promoted accumulators (metadata from L2, the TMA and register
// epilogues, split-K, a ping-pong kernel), and a tile whose promoted accumulators exceed the limit is
// refused by the family and the template alike.
TEST(GemmSpTemplatesCompile, PromotedConfigurationsCompileWithoutSpills) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmSpFamily f;
  std::vector<std::pair<FamilyConfig, FamilyProblem>> todo;
  std::set<std::string> seen;
  auto take = [&](const FamilyConfig& c, const FamilyProblem& p) {
    if (c.at("PROMOTE") == "0") return;
    if (seen.insert(config_to_json(c).dump()).second) todo.emplace_back(c, p);
  };
  // The from-scratch sweep's typical shapes with K > 1024, and the shapes of the H200 finding: the
  // promoted defaults and alternatives where the k slices need promotion, and elsewhere the default
  // with promotion added (a configuration the search may try).
  const std::vector<std::array<int64_t, 3>> shapes = {
      {12288, 12288, 12288}, {512, 8192, 8192}, {16384, 8192, 8192}, {4096, 1024, 8192}, {4096, 32768, 8192},
      {4096, 8192, 32768},   {1024, 1024, 4096}, {12288, 12288, 4096}, {12288, 8192, 12288}, {12288, 4096, 4096},
      {4096, 8192, 8192},    {4096, 8192, 4096}, {256, 512, 32768}};
  for (const auto& s : shapes) {
    const auto p = problem(s[0], s[1], s[2], "e4m3f16");
    const auto def = f.default_config(p);
    EXPECT_EQ(def.at("PROMOTE") != "0",
              HopperGemmSpFamily::needs_promotion(p, HopperGemmSpFamily::effective_split(def, p)))
        << s[0] << "x" << s[1] << "x" << s[2];
    take(def, p);
    if (const auto w = HopperGemmSpFamily::with_promotion(def, p.dtype); w && !f.violation(*w, p)) take(*w, p);
    for (const auto& a : f.alternatives(p)) take(a.config, p);
  }
  const auto p = problem(4096, 8192, 32768, "e4m3f16");
  FamilyConfig whole = f.default_config(p);
  for (const auto& [k, v] : std::map<std::string, std::string>{{"BM", "128"}, {"BN", "192"}, {"PROMOTE", "1"},
                                                               {"PROMOTE_SUB", "0"}, {"MMA_DEPTH", "1"},
                                                               {"PINGPONG", "0"}, {"CONSUMERS", "2"}, {"STAGES", "4"}})
    whole[k] = v;
  take(with(whole, {{"META", "2"}, {"EPILOGUE", "1"}, {"CLUSTER_M", "2"}}), p);
  take(with(whole, {{"META", "1"}, {"EPILOGUE", "2"}, {"PROMOTE", "4"}}), p);
  take(with(whole, {{"BN", "160"}, {"SPLIT_K", "2"}, {"PROMOTE", "2"}}), p);
  take(with(whole, {{"BM", "64"}, {"PINGPONG", "1"}, {"EPILOGUE", "1"}, {"META", "1"}}), p);
  const FamilyConfig sub = with(whole, {{"BN", "256"}, {"PROMOTE_SUB", "1"}, {"MMA_DEPTH", "0"}});
  take(with(sub, {{"META", "2"}, {"EPILOGUE", "2"}}), p);
  take(with(sub, {{"META", "0"}, {"EPILOGUE", "1"}, {"BN", "192"}}), p);
  take(with(sub, {{"BN", "192"}, {"SPLIT_K", "2"}}), p);
  EXPECT_GE(todo.size(), 8u);
  for (const auto& [c, prob] : todo) {
    SCOPED_TRACE(fmt::format("{}x{}x{} {}", prob.m, prob.n, prob.k, config_to_json(c).dump()));
    ASSERT_FALSE(f.violation(c, prob)) << *f.violation(c, prob);
    auto r = compile(f, c, prob);
    ASSERT_TRUE(r.ok) << r.log;
    expect_no_spills(r);
  }
  // Beyond the limit: twice 128 accumulators (128x256 promoted whole), 128 + 64 per sub-tile with
  // META 0 (limit 160), twice 96 with META 0.
  for (const auto& c : {with(sub, {{"PROMOTE_SUB", "0"}, {"MMA_DEPTH", "1"}}), with(sub, {{"META", "0"}}),
                        with(whole, {{"META", "0"}})}) {
    SCOPED_TRACE(config_to_json(c).dump());
    auto why = f.violation(c, p);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("accumulators"), std::string::npos) << *why;
    auto r = compile(f, c, p);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.log.find("too many accumulators per consumer thread"), std::string::npos) << r.log;
  }
}

TEST(GemmSpTemplatesCompile, SmallTilesOneConsumerNarrowSwizzles) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmSpFamily f;
  auto p = problem(777, 1000, 520, "e4m3f16");
  FamilyConfig c{{"BM", "64"},        {"BN", "96"},        {"BK", "64"},        {"STAGES", "8"},
                 {"CONSUMERS", "1"},  {"PINGPONG", "0"},   {"PERSISTENT", "0"}, {"RASTER", "2"},
                 {"GROUP", "2"},      {"CLUSTER_M", "2"},  {"CLUSTER_N", "2"},  {"EPILOGUE", "1"},
                 {"SWIZZLE_A", "32"}, {"SWIZZLE_B", "64"}, {"MMA_DEPTH", "0"},  {"META", "0"},
                 {"SPLIT_K", "1"},    {"SPLIT_TAIL", "0"}, {"PROMOTE", "0"},    {"PROMOTE_SUB", "0"}};
  ASSERT_FALSE(f.violation(c, p)) << *f.violation(c, p);
  auto r = compile(f, c, p);
  ASSERT_TRUE(r.ok) << r.log;
  expect_no_spills(r);
}

TEST(GemmSpTemplatesCompile, ConfigurationsTheFamilyRefusesDoNotCompileEither) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmSpFamily f;
  auto p = problem(4096, 8192, 8192, "f16");
  auto big = f.default_config(p);
  big["STAGES"] = "8";
  auto why = f.violation(big, p);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("shared memory"), std::string::npos);
  auto r = compile(f, big, p);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("227 KB of shared memory"), std::string::npos) << r.log;

  auto split = f.default_config(p);
  split["BN"] = "128";
  split["SPLIT_K"] = "2";
  split["PERSISTENT"] = "0";
  why = f.violation(split, p);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("PERSISTENT=1"), std::string::npos);
  r = compile(f, split, p);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("CROQ_PERSISTENT=1"), std::string::npos) << r.log;
}

// A rendered candidate built by croq build passes croq's purity scan: no vendor library, and no
// synchronising or host-reading CUDA call anywhere, croq_gemm_prepare included (it only enqueues its
// kernels). And it composes: it exports only the ABI's version-2 entry points and has no
// STB_GNU_UNIQUE symbol (two sparse kernels of one process never share the template's statics).
TEST(GemmSpTemplatesCompile, CandidatesPassThePurityScanAndExportOnlyTheAbi) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmSpFamily f;
  auto p = problem(4096, 8192, 8192, "e4m3f16");
  auto c = f.default_config(p);
  test::TempDir dir;
  Workspace ws(dir.path());
  const TaskRef task = make_task("sm90_NVIDIA_H200", "cuda", "gemm_sp_e4m3fp16_4096x8192x8192", "symbols");
  const auto src = ws.kind_dir(task, ArtifactKind::srcs) / "iter001_sp.cu";
  std::filesystem::create_directories(src.parent_path());
  atomic_write(src, f.render_source(c, p), false);
  BuildOptions o;
  o.flags = f.build_flags(c, p);
  o.use_cache = false;
  Toolchain tc = Toolchain::from_env();
  tc.nvcc = nvcc_path()->string();
  CompilerVersions versions;
  const json doc = build_target(ws, locate_build_target(ws, task, "iter001_sp"), o, tc, versions);
  ASSERT_EQ(doc.value("verdict", ""), "OK") << doc.dump(2).substr(0, 3000);
  const auto so = ws.kind_dir(task, ArtifactKind::bin) / "iter001_sp.so";
  const PurityReport scan = scan_candidate(so);
  EXPECT_TRUE(scan.clean());
  EXPECT_TRUE(scan.synchronising.empty()) << scan.synchronising_summary();
  ASSERT_TRUE(doc.contains("symbols")) << doc.dump(2).substr(0, 2000);
  EXPECT_TRUE(doc["symbols"]["unique"].empty()) << doc["symbols"].dump();
  EXPECT_TRUE(doc["symbols"]["exported_extra"].empty()) << doc["symbols"].dump();
  EXPECT_EQ(doc["symbols"]["entry_points"], json::array({"croq_gemm", "croq_gemm_prepare", "croq_gemm_prepared_bytes",
                                                         "croq_gemm_workspace_bytes", "croq_kernel_info"}));
  EXPECT_FALSE(doc.contains("warnings") && !doc["warnings"].empty()) << doc["warnings"].dump();
  EXPECT_TRUE(scan_symbols(so).clean());
}

std::filesystem::path sp_template_dir() { return find_project_dir("kernels") / "cuda" / "gemm_sp" / "hopper"; }

// The template's work schedule (whole units, split-K slices, the split tail), built from the
// template itself into a host program (tests/nvcc/gemm_sp_schedule_check.cu) and run on the CPU:
// every k block once, one writer per unit, the partial-sum slots inside the workspace; and the
// family's mirror of the tail choice (HopperGemmSpFamily::tail_dp_units) agrees with the template's.
TEST(GemmSpTemplatesCompile, WorkScheduleCoversEveryKBlockOnce) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  for (const std::vector<std::string>& defines :
       {std::vector<std::string>{"-DCROQ_SPLIT_K=5", "-DCROQ_SPLIT_TAIL=1"},
        {"-DCROQ_SPLIT_K=3", "-DCROQ_SPLIT_TAIL=1", "-DCROQ_CLUSTER_M=2"}, {"-DCROQ_SPLIT_K=3"}, {"-DCROQ_SPLIT_K=1"}}) {
    SCOPED_TRACE(defines.front());
    std::vector<std::string> all = {"-DCROQ_DTYPES=2"};
    all.insert(all.end(), defines.begin(), defines.end());
    const auto c = test::run_host_check(*nvcc_path(), "gemm_sp_schedule_check", sp_template_dir(), all);
    ASSERT_TRUE(c.built) << c.build_log;
    const ProcessResult& r = c.run;
    EXPECT_TRUE(r.ok()) << r.out.substr(0, 4000) << r.err;
    EXPECT_NE(r.out.find("schedule ok"), std::string::npos) << r.out.substr(0, 4000);
    if (defines.size() < 2) continue;  // the tail choice, with SPLIT_TAIL only
    std::istringstream lines(r.out);
    std::string word;
    int units = 0, split = 0, clusters = 0, dp = 0, compared = 0;
    while (lines >> word) {
      if (word != "dp" || !(lines >> units >> split >> clusters >> dp)) continue;
      EXPECT_EQ(HopperGemmSpFamily::tail_dp_units(units, split, clusters), dp)
          << units << " units, split " << split << ", " << clusters << " clusters";
      ++compared;
    }
    EXPECT_GT(compared, 1000);
  }
}

// The prepared A (compressed values + metadata words) and the consumer's reading of it, played on
// the CPU by tests/nvcc/gemm_sp_layout_check.cu against the PTX ISA's sparse-metadata layout.
TEST(GemmSpTemplatesCompile, PreparedLayoutMatchesTheWgmmaMetadataOrder) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  const auto c = test::run_host_check(*nvcc_path(), "gemm_sp_layout_check", sp_template_dir(), {"-DCROQ_DTYPES=2"});
  ASSERT_TRUE(c.built) << c.build_log;
  const ProcessResult& r = c.run;
  EXPECT_TRUE(r.ok()) << r.out << r.err;
  EXPECT_NE(r.out.find("layout ok"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace croq
