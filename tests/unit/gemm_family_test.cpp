// The GEMM kernel families (hopper_gemm, ampere_gemm): their parameter spaces, the constraint
// checkers over every configuration the search can produce, default configurations for the
// seeds' typical shapes, rendering and build flags. Compiling rendered sources with nvcc is
// tested in tests/nvcc (label nvcc).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "croq/search/ampere_gemm_family.hpp"
#include "croq/search/family.hpp"
#include "croq/search/gemm_family_common.hpp"
#include "croq/search/hopper_gemm_family.hpp"
#include "support/hopper_gpu_sample.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"
#include "support/family_walk.hpp"
#include "support/hopper_blockscaled.hpp"

namespace croq {
namespace {

using test::for_each_config;

struct Shape {
  int64_t m, n, k;
};

// The seeds' 14 typical shapes (ai-tune-from-scratch) and the two large squares.
const std::vector<Shape> k_typical = {
    {768, 768, 768},     {12288, 12288, 12288}, {512, 8192, 8192},    {16384, 8192, 8192},
    {4096, 1024, 8192},  {4096, 32768, 8192},   {4096, 8192, 512},    {4096, 8192, 32768},
    {1024, 1024, 4096},  {12288, 12288, 4096},  {1024, 8192, 1024},   {12288, 8192, 12288},
    {4096, 1024, 1024},  {12288, 4096, 4096},   {4096, 4096, 4096},   {8192, 8192, 8192}};

const std::vector<std::string> k_dtypes = {"f16f32", "f16", "bf16f32", "bf16"};

FamilyProblem problem(Shape s, const std::string& dtype, bool col, const std::string& arch) {
  FamilyProblem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.dtype = parse_dtype_pair_or_throw(dtype);
  p.b_col_major = col;
  p.arch = arch;
  return p;
}

// The block-scaled operator's problem on sm_90a (A per 1x128, B per 128x128, e4m3 -> bf16).
FamilyProblem blockscaled(Shape s, const std::string& dtype = "e4m3bf16") {
  FamilyProblem p = problem(s, dtype, false, "sm_90a");
  p.op = "blockscaled";
  return p;
}

// Each named parameter of c has the value given.
void expect_params(const FamilyConfig& c, const std::map<std::string, std::string>& want) {
  for (const auto& [name, value] : want) EXPECT_EQ(c.at(name), value) << name;
}

int iv(const FamilyConfig& c, const char* name) { return gemm::int_param(c, name).value(); }

// What a legal Hopper configuration must satisfy, computed here from the hardware's rules rather
// than through the family's own helpers.
void expect_hopper_invariants(const FamilyConfig& c, const FamilyProblem& p) {
  const int bm = iv(c, "BM"), bn = iv(c, "BN"), bk = iv(c, "BK"), stages = iv(c, "STAGES");
  const int consumers = iv(c, "CONSUMERS"), sw = iv(c, "SWIZZLE"), cm = iv(c, "CLUSTER_M"), cn = iv(c, "CLUSTER_N");
  // WGMMA: N a multiple of 8 up to 256 (the template's register lists come in 32s), M in 64s.
  EXPECT_TRUE(bn % 32 == 0 && bn >= 32 && bn <= 256) << bn;
  const int rows_per_consumer = iv(c, "PINGPONG") == 1 ? bm : bm / consumers;
  if (iv(c, "PINGPONG") == 1) {
    EXPECT_EQ(consumers, 2);
  }
  EXPECT_EQ(rows_per_consumer % 64, 0);
  EXPECT_EQ(bm % consumers, 0);
  // 16-bit operands: K per instruction is 16; a stage is whole swizzle rows.
  EXPECT_EQ(bk % 16, 0);
  EXPECT_EQ(bk % (sw / 2), 0);
  if (!p.b_col_major) {
    EXPECT_EQ(bn % (sw / 2), 0);
  }
  // Accumulators: 64 x BN f32 per m64 atom spread over 128 threads, within what ptxas gives a
  // consumer thread without spilling (GemmTemplatesCompile.HopperAccumulatorLimitsCompileWithoutSpills):
  // 192 with one or two consumers (160 with split-K, 128 with stream-K), 96 with three (128
  // registers each; 64 with either).
  const bool splits = iv(c, "SPLIT_K") > 1, streams = iv(c, "STREAM_K") == 1;
  const int acc_limit = consumers == 3 ? (splits || streams ? 64 : 96) : streams ? 128 : splits ? 160 : 192;
  EXPECT_LE((rows_per_consumer / 64) * (64 * bn / 128), acc_limit) << config_to_json(c).dump();
  EXPECT_TRUE(consumers >= 1 && consumers <= 3);
  // Shared memory: stages of A and B tiles, epilogue slots, barriers, alignment slack.
  long long smem = 1024 + static_cast<long long>(stages) * (bm * bk + bn * bk) * 2 + 2 * stages * 8;
  if (iv(c, "EPILOGUE") == 1) smem += consumers * 2 * 64 * 32 * 4;
  EXPECT_LE(smem, 227 * 1024) << config_to_json(c).dump();
  // Clusters: at most the tile grid; multicast slices whole 8-row swizzle atoms.
  EXPECT_LE(cm, (p.m + bm - 1) / bm);
  EXPECT_LE(cn, (p.n + bn - 1) / bn);
  EXPECT_EQ((bm / cn) % 8, 0);
  EXPECT_EQ((p.b_col_major ? bn / cm : bk / cm) % 8, 0);
  // The quad-transposed register epilogue exists for 16-bit outputs only.
  if (iv(c, "EPILOGUE") == 2) {
    EXPECT_NE(p.dtype.output, ScalarType::f32);
  }
  // Stream-K: spin-waits between CTAs need a persistent grid; the cooperative consumers' loop; no
  // split-K besides.
  if (iv(c, "STREAM_K") == 1) {
    EXPECT_EQ(iv(c, "PERSISTENT"), 1);
    EXPECT_EQ(iv(c, "PINGPONG"), 0);
    EXPECT_EQ(iv(c, "SPLIT_K"), 1);
  }
  // Split-K: spin-waits between CTAs need a persistent grid; no empty slice; bounded partial sums
  // (f32 tiles of every slice but the last, for every CTA tile including cluster padding).
  const int split = iv(c, "SPLIT_K");
  if (split > 1) {
    EXPECT_EQ(iv(c, "PERSISTENT"), 1);
    EXPECT_LE(split, (p.k + bk - 1) / bk);
    const long long tiles = ((p.m + bm - 1) / bm + cm - 1) / cm * cm * (((p.n + bn - 1) / bn + cn - 1) / cn * cn);
    EXPECT_LE(tiles * (split - 1) * bm * bn * 4, 512LL << 20) << config_to_json(c).dump();
  }
}

TEST(GemmFamilies, BothAreRegistered) {
  ASSERT_NE(find_family("hopper_gemm"), nullptr);
  ASSERT_NE(find_family("ampere_gemm"), nullptr);
  EXPECT_EQ(find_family("hopper_gemm")->dsl(), "cuda");
}

TEST(GemmFamilies, ParametersHaveValuesCategoriesAndBothKinds) {
  const std::set<std::string> categories = {"tiling", "pipeline", "memory", "compute", "misc"};
  for (const auto& f : {find_family("hopper_gemm"), find_family("ampere_gemm")}) {
    bool structural = false, macro = false;
    std::set<std::string> names;
    for (const auto& s : f->params()) {
      EXPECT_FALSE(s.values.empty()) << s.name;
      EXPECT_TRUE(categories.count(s.category)) << s.name << " " << s.category;
      EXPECT_FALSE(s.description.empty()) << s.name;
      EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
      (s.structural ? structural : macro) = true;
    }
    EXPECT_TRUE(structural && macro) << f->name();
  }
}

TEST(GemmFamilies, BottleneckParametersAreParametersOfTheFamily) {
  for (const auto& f : {find_family("hopper_gemm"), find_family("ampere_gemm")}) {
    std::set<std::string> names;
    for (const auto& s : f->params()) names.insert(s.name);
    for (const char* b : {"memory_bound", "compute_bound", "latency_bound", "launch_bound", "mixed"}) {
      auto list = f->params_for_bottleneck(b);
      EXPECT_FALSE(list.empty()) << f->name() << " " << b;
      for (const auto& n : list) EXPECT_TRUE(names.count(n)) << f->name() << " " << b << " " << n;
    }
  }
}

TEST(HopperGemmFamily, DefaultConfigIsLegalForTheTypicalShapes) {
  HopperGemmFamily f;
  for (const auto& s : k_typical)
    for (const auto& dt : k_dtypes)
      for (bool col : {false, true}) {
        auto p = problem(s, dt, col, "sm_90a");
        ASSERT_TRUE(f.supports(p));
        auto c = f.default_config(p);
        auto why = f.violation(c, p);
        EXPECT_FALSE(why) << s.m << "x" << s.n << "x" << s.k << " " << dt << ": " << *why;
        if (!why) expect_hopper_invariants(c, p);
      }
}

// The alternatives the search tries before single steps: legal, complete, distinct from the
// default and from each other, for every typical shape, dtype and layout; the big archetypes
// (ping-pong, clusters) where the tiles fill the GPU, other tile and split-K choices where not.
TEST(HopperGemmFamily, AlternativesAreLegalDistinctArchetypes) {
  HopperGemmFamily f;
  const auto names = [&] {
    std::set<std::string> n;
    for (const auto& s : f.params()) n.insert(s.name);
    return n;
  }();
  for (const auto& s : k_typical)
    for (const auto& dt : k_dtypes)
      for (bool col : {false, true}) {
        auto p = problem(s, dt, col, "sm_90a");
        const auto def = f.default_config(p);
        auto alts = f.alternatives(p);
        SCOPED_TRACE(fmt::format("{}x{}x{} {} {}", s.m, s.n, s.k, dt, col ? "col" : "row"));
        EXPECT_GE(alts.size(), 2u);
        EXPECT_LE(alts.size(), 6u);
        std::set<std::string> seen;
        for (const auto& a : alts) {
          EXPECT_FALSE(a.name.empty());
          EXPECT_FALSE(a.tag.empty());
          auto why = f.violation(a.config, p);
          EXPECT_FALSE(why) << a.name << ": " << why.value_or("");
          if (!why) expect_hopper_invariants(a.config, p);
          EXPECT_NE(a.config, def) << a.name;
          EXPECT_TRUE(seen.insert(config_to_json(a.config).dump()).second) << "duplicate " << a.name;
          std::set<std::string> keys;
          for (const auto& [k, v] : a.config) keys.insert(k);
          EXPECT_EQ(keys, names) << a.name << " is not a complete configuration";
        }
      }
  // A large problem with many waves of 256x192 tiles is offered that tile first (the fastest of the
  // family on the H200 at 16384x8192x8192 and 12288x8192x12288)...
  auto big = f.alternatives(problem({16384, 8192, 8192}, "f16f32", false, "sm_90a"));
  ASSERT_FALSE(big.empty());
  EXPECT_EQ(big.front().config.at("BM"), "256");
  EXPECT_EQ(big.front().config.at("BN"), "192");
  EXPECT_EQ(big.front().config.at("CONSUMERS"), "2");
  EXPECT_EQ(big.front().config.at("PINGPONG"), "0");
  auto offered = [](const std::vector<Alternative>& alts, const std::map<std::string, std::string>& want) {
    return std::any_of(alts.begin(), alts.end(), [&](const Alternative& a) {
      return std::all_of(want.begin(), want.end(), [&](const auto& kv) { return a.config.at(kv.first) == kv.second; });
    });
  };
  // ...then the ping-pong 128x192 kernel (the fastest at 12288x12288x4096), cuBLAS's 192x192 with
  // three consumers and a 2x1 cluster, and the probe's fastest.
  ASSERT_GE(big.size(), 2u);
  EXPECT_EQ(big[1].config.at("BM"), "128");
  EXPECT_EQ(big[1].config.at("BN"), "192");
  EXPECT_EQ(big[1].config.at("PINGPONG"), "1");
  EXPECT_EQ(big[1].config.at("EPILOGUE"), "1");
  EXPECT_TRUE(offered(big, {{"BM", "192"}, {"BN", "192"}, {"CONSUMERS", "3"}, {"CLUSTER_M", "2"}}));
  EXPECT_TRUE(offered(big, {{"BM", "128"}, {"BN", "128"}, {"PINGPONG", "1"}, {"CLUSTER_M", "2"}}));
  // One with a wave of 128x256 tiles but few of 256x192 starts from the probe's fastest, the
  // ping-pong 128x128 kernel with a 2x1 cluster, and is still offered the larger tiles later.
  auto short_k = f.alternatives(problem({1024, 8192, 1024}, "f16f32", false, "sm_90a"));
  ASSERT_FALSE(short_k.empty());
  EXPECT_EQ(short_k.front().config.at("PINGPONG"), "1");
  EXPECT_EQ(short_k.front().config.at("CLUSTER_M"), "2");
  EXPECT_TRUE(offered(short_k, {{"BM", "256"}, {"BN", "192"}}));
  // A mid-sized one (a wave of 128x128 tiles, not of 128x256; the default ping-pong) is offered
  // cuBLAS's 256x128 with a cluster and no tile with more area than 128x256.
  const std::vector<Shape> mids = {{4096, 1024, 8192}, {4096, 1024, 1024}, {512, 8192, 8192}};
  for (Shape s : mids) {
    auto mid = f.alternatives(problem(s, "f16f32", false, "sm_90a"));
    EXPECT_EQ(f.default_config(problem(s, "f16f32", false, "sm_90a")).at("PINGPONG"), "1");
    EXPECT_TRUE(offered(mid, {{"BM", "256"}, {"BN", "128"}, {"CLUSTER_M", "2"}})) << s.m << "x" << s.n;
    for (const auto& a : mid) EXPECT_LE(iv(a.config, "BM") * iv(a.config, "BN"), 128 * 256) << a.name;
  }
  // Stream-K lost to the same tile without it wherever it was measured, the one-wave shapes
  // included (docs/results/gemm-configs-wide-h200.md, gemm-configs-sk-h200.md,
  // gemm-configs-sk-onewave-h200.md): no alternative uses it; it stays one step from the 128x256
  // default.
  for (const auto& s : k_typical) {
    for (const auto& a : f.alternatives(problem(s, "f16f32", false, "sm_90a")))
      EXPECT_EQ(a.config.at("STREAM_K"), "0") << s.m << "x" << s.n << "x" << s.k << " " << a.name;
  }
  // A small one is offered other tiles and split-K choices, and nothing with more tiles than it has.
  auto small = f.alternatives(problem({768, 768, 768}, "f16f32", false, "sm_90a"));
  ASSERT_FALSE(small.empty());
  for (const auto& a : small) EXPECT_EQ(a.config.at("PINGPONG"), "0") << a.name;
  // ...and the deepest pipeline that fits a 128x64 tile, which single steps reach slowly.
  auto k_long = f.alternatives(problem({1024, 1024, 4096}, "f16f32", false, "sm_90a"));
  EXPECT_TRUE(std::any_of(k_long.begin(), k_long.end(), [](const Alternative& a) {
    return a.config.at("BN") == "64" && a.config.at("STAGES") == "8" && a.config.at("SPLIT_K") == "1";
  }));
}

// What the GPU test verifies on the H200 (tests/gpu/gemm_family_gpu_test.cpp) is checked here on
// every run: each configuration legal for its odd shape, and every case covering the deepest
// pipeline, three consumers, and two consumers at the 192-accumulator limit.
TEST(HopperGemmFamily, TheGpuTestsSampleIsLegalAndCoversTheWidestConsumers) {
  HopperGemmFamily f;
  std::mt19937 rng(20261129);
  const auto cases = test::hopper_gpu_cases();
  size_t total = 0;
  bool split_three = false;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const auto p = test::hopper_gpu_problem(cases[ci]);
    SCOPED_TRACE(fmt::format("case {}: {}x{}x{} {}", ci, p.m, p.n, p.k, cases[ci].dtype));
    const auto sample = test::hopper_gpu_sample(f, p, rng, ci);
    bool deep = false, three = false, wide_two = false, wide_pingpong = false, streamed = false;
    for (const auto& c : sample) {
      auto why = f.violation(c, p);
      EXPECT_FALSE(why) << config_to_json(c).dump() << ": " << why.value_or("");
      if (why) continue;
      expect_hopper_invariants(c, p);
      deep |= iv(c, "STAGES") >= 7;
      three |= iv(c, "CONSUMERS") == 3;
      split_three |= iv(c, "CONSUMERS") == 3 && iv(c, "SPLIT_K") > 1;
      wide_two |= iv(c, "CONSUMERS") == 2 && HopperGemmFamily::accumulator_registers(c) == 192;
      wide_pingpong |= iv(c, "PINGPONG") == 1 && HopperGemmFamily::accumulator_registers(c) == 192;
      streamed |= iv(c, "STREAM_K") == 1;
    }
    EXPECT_TRUE(deep);
    EXPECT_TRUE(three);
    EXPECT_TRUE(wide_two);
    EXPECT_TRUE(wide_pingpong);
    EXPECT_TRUE(streamed);
    EXPECT_GE(sample.size(), 9u);
    total += sample.size();
  }
  EXPECT_TRUE(split_three);
  EXPECT_GE(total, 36u);
}

// Tunes recorded before STREAM_K existed resume: their configurations are read with STREAM_K=0
// (the template's behaviour without it), are legal, and count as measured under their new name.
TEST(HopperGemmFamily, ConfigurationsRecordedBeforeStreamKReadAsWithoutIt) {
  HopperGemmFamily f;
  const auto p = problem({4096, 4096, 4096}, "f16f32", false, "sm_90a");
  FamilyConfig old = f.default_config(p);
  old.erase("STREAM_K");
  EXPECT_NE(f.violation(old, p).value_or("").find("STREAM_K is missing"), std::string::npos);
  const FamilyConfig read = with_recorded_defaults(f, old);
  EXPECT_EQ(read.at("STREAM_K"), "0");
  EXPECT_FALSE(f.violation(read, p));
  EXPECT_EQ(read, f.default_config(p));
  // A value that is there is kept; a parameter without a recorded default stays missing.
  FamilyConfig streamed = f.default_config(p);
  streamed["STREAM_K"] = "1";
  EXPECT_EQ(with_recorded_defaults(f, streamed).at("STREAM_K"), "1");
  FamilyConfig no_bm = old;
  no_bm.erase("BM");
  EXPECT_EQ(with_recorded_defaults(f, no_bm).count("BM"), 0u);
  // Every recorded default is one of the parameter's values.
  for (const auto& spec : f.params()) {
    if (spec.recorded_default.empty()) continue;
    EXPECT_NE(std::find(spec.values.begin(), spec.values.end(), spec.recorded_default), spec.values.end()) << spec.name;
  }
}

TEST(HopperGemmFamily, DefaultConfigIsLegalForOddAndTinyShapes) {
  HopperGemmFamily f;
  for (Shape s : std::vector<Shape>{{1, 1, 1}, {17, 33, 9}, {1000, 1000, 1000}, {4096, 4100, 520}, {64, 8192, 64}})
    for (bool col : {false, true}) {
      auto p = problem(s, "f16f32", col, "sm_90a");
      auto why = f.violation(f.default_config(p), p);
      EXPECT_FALSE(why) << s.m << "x" << s.n << "x" << s.k << ": " << *why;
    }
}

TEST(HopperGemmFamily, DefaultsUseTheLargeTileWhenThereAreEnoughTiles) {
  HopperGemmFamily f;
  auto big = f.default_config(problem({8192, 8192, 8192}, "f16f32", false, "sm_90a"));
  EXPECT_EQ(big.at("BM"), "128");
  EXPECT_EQ(big.at("BN"), "256");
  EXPECT_EQ(big.at("CONSUMERS"), "2");
  EXPECT_EQ(big.at("SPLIT_K"), "1");
  // Fewer than 132 tiles of 128 x 256 but enough of 128 x 128: the ping-pong kernel.
  auto mid = f.default_config(problem({4096, 1024, 1024}, "f16f32", false, "sm_90a"));
  EXPECT_EQ(mid.at("BN"), "128");
  EXPECT_EQ(mid.at("PINGPONG"), "1");
  EXPECT_EQ(mid.at("SPLIT_K"), "1");
}

// Work units (tiles x slices) the default gives a problem, for 132 SMs.
long long default_units(const HopperGemmFamily& f, Shape s) {
  auto p = problem(s, "f16f32", false, "sm_90a");
  auto c = f.default_config(p);
  return ((s.m + iv(c, "BM") - 1) / iv(c, "BM")) * ((s.n + iv(c, "BN") - 1) / iv(c, "BN")) *
         HopperGemmFamily::effective_split(c, p);
}

TEST(HopperGemmFamily, DefaultsSplitKWhenTilesCannotFillTheGpuAndKIsLong) {
  HopperGemmFamily f;
  // 1024 x 1024 x 4096: 64 tiles of 128 x 128 would leave half the SMs idle for 64 k blocks.
  auto c = f.default_config(problem({1024, 1024, 4096}, "f16f32", false, "sm_90a"));
  EXPECT_GT(iv(c, "SPLIT_K"), 1) << config_to_json(c).dump();
  EXPECT_GE(default_units(f, {1024, 1024, 4096}), 100);
  EXPECT_LE(default_units(f, {1024, 1024, 4096}), 132);
  // A short K is not split below one k block per slice, and small problems still get >= 100 units.
  auto tiny_k = problem({1024, 1024, 64}, "f16f32", false, "sm_90a");
  EXPECT_EQ(HopperGemmFamily::effective_split(f.default_config(tiny_k), tiny_k), 1);
  EXPECT_GE(default_units(f, {768, 768, 768}), 64);
  // Large problems are never split.
  for (Shape s : std::vector<Shape>{{4096, 4096, 4096}, {12288, 12288, 12288}, {4096, 8192, 512}})
    EXPECT_EQ(f.default_config(problem(s, "f16f32", true, "sm_90a")).at("SPLIT_K"), "1");
}

TEST(HopperGemmFamily, DefaultEpilogueFollowsTheOutputType) {
  HopperGemmFamily f;
  for (Shape s : std::vector<Shape>{{4096, 1024, 1024}, {1024, 1024, 4096}, {768, 768, 768}}) {
    EXPECT_NE(f.default_config(problem(s, "f16f32", false, "sm_90a")).at("EPILOGUE"), "2");
    EXPECT_EQ(f.default_config(problem(s, "bf16", false, "sm_90a")).at("EPILOGUE"), "2");
  }
}

// Every configuration the search can produce, for problems that exercise the layout- and
// shape-dependent rules: either legal (and then the hardware invariants hold) or refused with a
// reason. The tile order (RASTER, GROUP) enters no constraint (next test), so it is held fixed
// here to keep the walk short.
TEST(HopperGemmFamily, EveryConfigurationIsLegalOrRefusedWithAReason) {
  HopperGemmFamily f;
  const std::vector<FamilyProblem> problems = {problem({4096, 4096, 4096}, "f16f32", false, "sm_90a"),
                                             problem({100, 4100, 520}, "bf16", true, "sm_90a")};
  for (const auto& p : problems) {
    long long legal = 0, refused = 0;
    std::set<std::string> reasons;
    for_each_config(f, [&](const FamilyConfig& c) {
      auto why = f.violation(c, p);
      if (why) {
        ++refused;
        EXPECT_FALSE(why->empty());
        if (reasons.size() < 64) reasons.insert(why->substr(0, 24));
      } else {
        ++legal;
        expect_hopper_invariants(c, p);
      }
    }, {{"RASTER", "1"}, {"GROUP", "8"}, {"MMA_DEPTH", "1"}, {"PROMOTE_EVERY", "1"}});
    EXPECT_GT(legal, 1000);
    EXPECT_GT(refused, 1000);
    EXPECT_GT(reasons.size(), 4u);
  }
}

// Split-K and the epilogue against the problem: the same configurations change legality with K,
// the output type and the problem size.
TEST(HopperGemmFamily, SplitKAndEpilogueLegalityFollowTheProblem) {
  HopperGemmFamily f;
  size_t split_legal = 0;
  for (const auto& p : {problem({1024, 1024, 4096}, "f16f32", true, "sm_90a"),
                        problem({768, 768, 96}, "bf16", false, "sm_90a"),
                        problem({16384, 16384, 8192}, "f16", true, "sm_90a")}) {
    for_each_config(f, [&](const FamilyConfig& c) {
      if (!f.violation(c, p)) {
        expect_hopper_invariants(c, p);
        split_legal += iv(c, "SPLIT_K") > 1;
      }
    }, {{"RASTER", "1"}, {"GROUP", "8"}, {"MMA_DEPTH", "1"}, {"PROMOTE_EVERY", "1"}, {"SWIZZLE", "128"}, {"BK", "64"}, {"CLUSTER_N", "1"}});
  }
  EXPECT_GT(split_legal, 100u);
}

TEST(HopperGemmFamily, TileOrderNeverDecidesLegality) {
  HopperGemmFamily f;
  const auto p = problem({1000, 3000, 700}, "f16", false, "sm_90a");
  std::vector<bool> reference;
  // MMA_DEPTH enters no constraint either; SPLIT_K is held at 2 (legal for this K) to keep the
  // walk short.
  for_each_config(f, [&](const FamilyConfig& c) { reference.push_back(!f.violation(c, p)); },
                  {{"RASTER", "1"}, {"GROUP", "8"}, {"MMA_DEPTH", "1"}, {"PROMOTE_EVERY", "1"}, {"SPLIT_K", "2"}, {"STREAM_K", "0"}});
  for (auto [raster, group] : std::vector<std::pair<const char*, const char*>>{{"0", "1"}, {"2", "16"}, {"3", "4"}}) {
    size_t i = 0, differ = 0;
    for_each_config(f, [&](const FamilyConfig& c) { differ += reference.at(i++) != !f.violation(c, p); },
                    {{"RASTER", raster}, {"GROUP", group}, {"MMA_DEPTH", "1"}, {"PROMOTE_EVERY", "1"}, {"SPLIT_K", "2"}, {"STREAM_K", "0"}});
    EXPECT_EQ(i, reference.size());
    EXPECT_EQ(differ, 0u) << raster << "/" << group;
  }
}

TEST(HopperGemmFamily, RefusesImpossibleConfigurationsSayingWhy) {
  HopperGemmFamily f;
  const auto p = problem({4096, 4096, 4096}, "f16f32", false, "sm_90a");
  const FamilyConfig good = f.default_config(p);
  ASSERT_FALSE(f.violation(good, p));
  auto with = [&](std::map<std::string, std::string> changes) {
    FamilyConfig c = good;
    for (auto& [k, v] : changes) c[k] = v;
    auto why = f.violation(c, p);
    return why ? *why : std::string("legal");
  };
  EXPECT_NE(with({{"STAGES", "6"}, {"BN", "256"}, {"BM", "128"}}).find("shared memory"), std::string::npos);
  EXPECT_NE(with({{"BM", "64"}, {"CONSUMERS", "2"}}).find("consumer"), std::string::npos);
  EXPECT_NE(with({{"BM", "128"}, {"BN", "256"}, {"CONSUMERS", "1"}, {"STAGES", "2"}}).find("accumulators"),
            std::string::npos);
  EXPECT_NE(with({{"BK", "32"}, {"SWIZZLE", "128"}}).find("swizzle"), std::string::npos);
  EXPECT_NE(with({{"BN", "96"}, {"SWIZZLE", "128"}}).find("N-major"), std::string::npos);
  EXPECT_NE(with({{"BM", "9"}}).find("not one of"), std::string::npos);
  EXPECT_NE(with({{"PINGPONG", "1"}, {"CONSUMERS", "1"}}).find("CONSUMERS=2"), std::string::npos);
  EXPECT_NE(with({{"PINGPONG", "1"}, {"BM", "128"}, {"BN", "256"}}).find("accumulators"), std::string::npos);
  // Two consumers hold up to 192 accumulators (160 with split-K), three up to 96.
  EXPECT_EQ(with({{"BM", "256"}, {"BN", "192"}, {"STAGES", "3"}}), "legal");
  EXPECT_NE(with({{"BM", "256"}, {"BN", "192"}, {"STAGES", "3"}, {"SPLIT_K", "2"}}).find("reduction"),
            std::string::npos);
  EXPECT_NE(with({{"BM", "256"}, {"BN", "192"}, {"STAGES", "3"}, {"STREAM_K", "1"}}).find("reduction"),
            std::string::npos);
  // Stream-K: a persistent grid, cooperative consumers, no split-K besides.
  EXPECT_EQ(with({{"STREAM_K", "1"}}), "legal");
  EXPECT_NE(with({{"STREAM_K", "1"}, {"PERSISTENT", "0"}}).find("PERSISTENT=1"), std::string::npos);
  EXPECT_NE(with({{"STREAM_K", "1"}, {"BN", "128"}, {"PINGPONG", "1"}}).find("PINGPONG=0"), std::string::npos);
  EXPECT_NE(with({{"STREAM_K", "1"}, {"SPLIT_K", "2"}}).find("choose one"), std::string::npos);
  EXPECT_EQ(with({{"BM", "192"}, {"BN", "192"}, {"CONSUMERS", "3"}, {"STAGES", "3"}}), "legal");
  EXPECT_NE(with({{"BM", "192"}, {"BN", "224"}, {"CONSUMERS", "3"}, {"STAGES", "3"}}).find("three consumers"),
            std::string::npos);
  EXPECT_NE(with({{"BM", "128"}, {"CONSUMERS", "3"}}).find("consumer warpgroups"), std::string::npos);
  EXPECT_NE(with({{"BM", "192"}, {"CONSUMERS", "3"}, {"PINGPONG", "1"}}).find("CONSUMERS=2"), std::string::npos);
  EXPECT_NE(with({{"UNROLL", "2"}}).find("unknown parameter"), std::string::npos);
  EXPECT_NE(with({{"SPLIT_K", "2"}, {"PERSISTENT", "0"}}).find("PERSISTENT=1"), std::string::npos);
  EXPECT_NE(with({{"EPILOGUE", "2"}}).find("16-bit"), std::string::npos);  // f16 -> f32
  EXPECT_EQ(with({{"SPLIT_K", "2"}, {"BN", "128"}, {"PINGPONG", "1"}, {"STAGES", "4"}}), "legal");
  const auto short_k = problem({4096, 4096, 100}, "f16", false, "sm_90a");
  FamilyConfig sk = f.default_config(short_k);
  sk["SPLIT_K"] = "2";
  EXPECT_FALSE(f.violation(sk, short_k));                 // 2 k blocks of 64
  sk["SPLIT_K"] = "3";
  EXPECT_NE(f.violation(sk, short_k).value_or("").find("k blocks"), std::string::npos);
  sk["EPILOGUE"] = "2";
  sk["SPLIT_K"] = "1";
  EXPECT_FALSE(f.violation(sk, short_k));                 // 16-bit output
  const auto huge = problem({16384, 16384, 8192}, "f16f32", false, "sm_90a");
  FamilyConfig hg = f.default_config(huge);
  hg["SPLIT_K"] = "8";
  EXPECT_NE(f.violation(hg, huge).value_or("").find("workspace"), std::string::npos);
  FamilyConfig missing = good;
  missing.erase("STAGES");
  EXPECT_NE(f.violation(missing, p).value_or("").find("missing"), std::string::npos);

  const auto tiny = problem({64, 64, 64}, "f16f32", false, "sm_90a");
  FamilyConfig c = f.default_config(tiny);
  c["CLUSTER_M"] = "2";
  EXPECT_NE(f.violation(c, tiny).value_or("").find("CLUSTER_M"), std::string::npos);
  EXPECT_TRUE(f.violation(good, problem({4096, 4096, 4096}, "f16f32", false, "sm_80")));
  EXPECT_TRUE(f.violation(good, problem({4096, 4096, 4096}, "e4m3", false, "sm_90a")));
  EXPECT_FALSE(f.supports(problem({4096, 4096, 4096}, "f32", false, "sm_90a")));
}

TEST(HopperGemmFamily, RenderedSourceCarriesTheConfigurationAndTheTemplate) {
  HopperGemmFamily f;
  const auto p = problem({1000, 1000, 1000}, "bf16", true, "sm_90a");
  auto c = f.default_config(p);
  c["STAGES"] = "3";
  const std::string src = f.render_source(c, p);
  EXPECT_NE(src.find("#define CROQ_STAGES 3\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_BM " + c.at("BM") + "\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_CLUSTER_M " + c.at("CLUSTER_M") + "\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_DTYPES 8\n"), std::string::npos);   // bf16 -> bf16
  EXPECT_NE(src.find("#define CROQ_BLAYOUTS 2\n"), std::string::npos); // B stored N x K
  EXPECT_NE(src.find("wgmma.mma_async"), std::string::npos);
  EXPECT_NE(src.find("CROQ_EXPORT croq_status croq_matmul"), std::string::npos);
  EXPECT_LT(src.find("#define CROQ_STAGES"), src.find("#ifndef CROQ_STAGES"));
  const auto flags = f.build_flags(c, p);
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-gencode=arch=compute_90a,code=sm_90a"), flags.end());
}

// e4m3 (per-tensor scales, f16 or bf16 out): the family supports it on sm_90a with K a multiple of
// 16 (TMA rows), checks and renders it with B "row.col" (the only layout FP8 WGMMA reads), BK in
// one-byte elements (128 = one 128-byte swizzle row), and its defaults and alternatives are legal
// for every typical shape.
TEST(HopperGemmFamily, E4m3IsComputedWithOneByteElementsAndBColumnMajor) {
  HopperGemmFamily f;
  for (const char* dt : {"e4m3f16", "e4m3bf16"}) {
    for (const auto& s : k_typical) {
      auto p = problem(s, dt, false, "sm_90a");  // tune's problem: the layout is the runner's choice
      ASSERT_TRUE(f.supports(p)) << dt;
      auto c = f.default_config(p);
      auto why = f.violation(c, p);
      ASSERT_FALSE(why) << s.m << "x" << s.n << "x" << s.k << " " << dt << ": " << *why;
      EXPECT_EQ(c.at("BK"), "128");
      EXPECT_LE(HopperGemmFamily::smem_bytes(c, 1), HopperGemmFamily::k_smem_limit);
      for (const auto& a : f.alternatives(p)) {
        EXPECT_FALSE(f.violation(a.config, p)) << a.name << ": " << *f.violation(a.config, p);
        EXPECT_NE(a.config, c) << a.name;
      }
    }
  }
  const auto p = problem({1000, 1000, 1024}, "e4m3bf16", false, "sm_90a");
  auto c = f.default_config(p);
  const std::string src = f.render_source(c, p);
  EXPECT_NE(src.find("#define CROQ_ELEM_BYTES 1\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_DTYPES 32\n"), std::string::npos);  // e4m3 -> bf16
  EXPECT_NE(src.find("#define CROQ_BLAYOUTS 2\n"), std::string::npos);
  EXPECT_NE(src.find("k32.f32.e4m3.e4m3"), std::string::npos);
  EXPECT_NE(src.find("CROQ_EXPORT croq_status croq_gemm"), std::string::npos);
  // Half a swizzle row of one-byte elements, and K whose rows are not 16-byte aligned, are refused.
  auto half = c;
  half["BK"] = "64";
  ASSERT_TRUE(f.violation(half, p));
  EXPECT_NE(f.violation(half, p)->find("swizzle"), std::string::npos);
  auto odd = problem({1000, 1000, 1000}, "e4m3bf16", false, "sm_90a");
  EXPECT_FALSE(f.supports(odd));
  ASSERT_TRUE(f.violation(c, odd));
  EXPECT_NE(f.violation(c, odd)->find("multiple of 16"), std::string::npos);
  // The same configuration with 16-bit inputs needs twice the shared memory per stage.
  EXPECT_GT(HopperGemmFamily::smem_bytes(c, 2), HopperGemmFamily::smem_bytes(c, 1));
  // Long K: two-level accumulation (each stage's WGMMA sums promoted into f32 registers).
  auto longk = problem({4096, 8192, 32768}, "e4m3bf16", false, "sm_90a");
  auto lc = f.default_config(longk);
  ASSERT_FALSE(f.violation(lc, longk));
  EXPECT_EQ(lc.at("PROMOTE_EVERY"), "16");  // with a WGMMA group in flight between promotions
  EXPECT_EQ(lc.at("MMA_DEPTH"), "1");
  EXPECT_NE(f.render_source(lc, longk).find("#define CROQ_PROMOTE 1\n"), std::string::npos);
  EXPECT_EQ(src.find("#define CROQ_PROMOTE 1"), std::string::npos);
  // Where the unpromoted kernels failed verification on the H200 (8192^3) the default promotes;
  // where they passed (K = 4096) it does not.
  auto k8 = problem({8192, 8192, 8192}, "e4m3bf16", false, "sm_90a");
  EXPECT_NE(f.render_source(f.default_config(k8), k8).find("#define CROQ_PROMOTE 1\n"), std::string::npos);
  auto k4 = problem({4096, 4096, 4096}, "e4m3bf16", false, "sm_90a");
  EXPECT_EQ(f.render_source(f.default_config(k4), k4).find("#define CROQ_PROMOTE 1"), std::string::npos);
  auto deep = lc;
  deep["PROMOTE_EVERY"] = "1";  // promoting every stage waits for its WGMMAs
  ASSERT_TRUE(f.violation(deep, longk));
  EXPECT_NE(f.violation(deep, longk)->find("two-level"), std::string::npos);
  // Other families do not claim e4m3 matmul.
  EXPECT_FALSE(AmpereGemmFamily().supports(problem({1024, 1024, 1024}, "e4m3bf16", true, "sm_80")));
}

// Promotion every 2 to 16 k blocks (PROMOTE_EVERY): where dense e4m3 promotes, draining every
// stage's WGMMAs (PROMOTE_EVERY=1, MMA_DEPTH=0) cost 0.57-0.65 x cuBLASLt at 8192^3 on the H200; the
// intervals keep a WGMMA group in flight between promotions. The default promotes every 16 (0.955,
// against 0.934 every 8 and 0.892 every 4, all with two consumers of 64x192); every 32 failed
// verification at K = 32768 and is not a value. Elsewhere the parameter is 1, and a configuration
// recorded before it existed reads as 1.
TEST(HopperGemmFamily, LongKE4m3PromotesEverySixteenKBlocks) {
  HopperGemmFamily f;
  const auto p = problem({8192, 8192, 8192}, "e4m3bf16", false, "sm_90a");
  const FamilyConfig def = f.default_config(p);
  ASSERT_FALSE(f.violation(def, p));
  EXPECT_EQ(def.at("PROMOTE_EVERY"), "16");
  EXPECT_EQ(def.at("MMA_DEPTH"), "1");
  EXPECT_EQ(def.at("BM"), "128");
  EXPECT_EQ(def.at("BN"), "192");  // two consumers of 64x192: the tile the tunes kept on large shapes
  EXPECT_EQ(def.at("CONSUMERS"), "2");
  // The first alternatives: every 8 and every 4 (nearer the library's error), then the 128x128 tile.
  const auto alts = f.alternatives(p);
  ASSERT_GE(alts.size(), 3u);
  EXPECT_EQ(alts[0].tag, "prom8");
  EXPECT_EQ(alts[1].tag, "prom4");
  EXPECT_EQ(alts[2].tag, "co128x128_prom16");
  EXPECT_EQ(alts[0].config.at("PROMOTE_EVERY"), "8");
  EXPECT_EQ(alts[1].config.at("PROMOTE_EVERY"), "4");
  EXPECT_EQ(alts[2].config.at("BN"), "128");
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(alts[i].name);
    EXPECT_FALSE(f.violation(alts[i].config, p));
    EXPECT_EQ(alts[i].config.at("MMA_DEPTH"), "1");
    EXPECT_LE(2 * HopperGemmFamily::accumulator_registers(alts[i].config),
              HopperGemmFamily::max_accumulators(alts[i].config));
  }
  const std::string src = f.render_source(def, p);
  EXPECT_NE(src.find("#define CROQ_PROMOTE 1\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_PROMOTE_EVERY 16\n"), std::string::npos);
  for (const auto& a : f.alternatives(p)) EXPECT_FALSE(f.violation(a.config, p)) << a.name;
  // Where a partial last wave of 128x192 tiles fills the GPU worse than 128x128 (512x8192x8192:
  // 1.3 waves against 1.9, where the tune kept 128x128), the default stays 128x128.
  const auto thin = problem({512, 8192, 8192}, "e4m3bf16", false, "sm_90a");
  EXPECT_EQ(f.default_config(thin).at("BN"), "128");
  EXPECT_EQ(f.default_config(thin).at("PROMOTE_EVERY"), "16");
  bool wide_alt = false;
  for (const auto& a : f.alternatives(thin)) wide_alt |= a.tag == "co128x192_prom16";
  EXPECT_TRUE(wide_alt);
  // Every stage a promotion: its WGMMAs are waited for, so MMA_DEPTH=0 (or a longer interval).
  FamilyConfig every1_depth1 = def;
  every1_depth1["PROMOTE_EVERY"] = "1";
  ASSERT_TRUE(f.violation(every1_depth1, p));
  EXPECT_NE(f.violation(every1_depth1, p)->find("PROMOTE_EVERY=2 or more"), std::string::npos);
  FamilyConfig every16_depth0 = def;
  every16_depth0["MMA_DEPTH"] = "0";
  EXPECT_FALSE(f.violation(every16_depth0, p));
  FamilyConfig every1_depth0 = every1_depth1;
  every1_depth0["MMA_DEPTH"] = "0";
  EXPECT_FALSE(f.violation(every1_depth0, p));
  // Every 2, 4, 8 and 16 k blocks of 128 (at most 2048 of K on the tensor cores' accumulators);
  // 32 failed verification at K = 32768 on the H200 and is not a value.
  for (const char* every : {"2", "4", "8", "16"}) {
    FamilyConfig longer = def;
    longer["PROMOTE_EVERY"] = every;
    EXPECT_FALSE(f.violation(longer, p)) << every;
    EXPECT_NE(f.render_source(longer, p).find(fmt::format("#define CROQ_PROMOTE_EVERY {}\n", every)), std::string::npos);
  }
  FamilyConfig every32 = def;
  every32["PROMOTE_EVERY"] = "32";
  ASSERT_TRUE(f.violation(every32, p));
  EXPECT_NE(f.violation(every32, p)->find("not one of"), std::string::npos);
  // No promotion (16-bit inputs; e4m3 with K <= 4096), or every stage (block-scaled): 1 only.
  for (auto q : {problem({8192, 8192, 8192}, "f16f32", false, "sm_90a"),
                 problem({4096, 4096, 4096}, "e4m3bf16", false, "sm_90a")}) {
    FamilyConfig c = f.default_config(q);
    EXPECT_EQ(c.at("PROMOTE_EVERY"), "1");
    c["PROMOTE_EVERY"] = "2";
    ASSERT_TRUE(f.violation(c, q));
    EXPECT_NE(f.violation(c, q)->find("PROMOTE_EVERY=1"), std::string::npos);
    EXPECT_EQ(f.render_source(f.default_config(q), q).find("#define CROQ_PROMOTE 1"), std::string::npos);
    for (const auto& a : f.alternatives(q)) EXPECT_EQ(a.config.at("PROMOTE_EVERY"), "1") << a.name;
  }
  auto bs = blockscaled({4096, 7168, 7168});
  FamilyConfig b = f.default_config(bs);
  b["PROMOTE_EVERY"] = "2";
  b["MMA_DEPTH"] = "1";
  ASSERT_TRUE(f.violation(b, bs));
  EXPECT_NE(f.violation(b, bs)->find("PROMOTE_EVERY=1"), std::string::npos);
  // Recorded before the parameter existed: read as promoting every stage, as such a kernel ran.
  FamilyConfig old = every1_depth0;
  old.erase("PROMOTE_EVERY");
  EXPECT_NE(f.violation(old, p).value_or("").find("PROMOTE_EVERY is missing"), std::string::npos);
  EXPECT_EQ(with_recorded_defaults(f, old), every1_depth0);
}

FamilyConfig drained_of(FamilyConfig c) {
  c["MMA_DEPTH"] = "0";
  return c;
}

using test::overlapped_blockscaled;

// The block-scaled operator (e4m3 -> bf16, scales per 1x128 of A and 128x128 of B): the same
// template with CROQ_BLOCKSCALE=1, promoting each 128-deep k block's WGMMA sums into a second set
// of f32 registers; its defaults and alternatives are legal for every typical shape, and what the
// promotion forbids is refused saying why.
// SCALE_STAGE: the block-scaled kernel's scales staged in shared memory with each stage. Only that
// operator has scales to stage; the slots (BM A scales and BN/128 + 2 B scales a stage, 16-byte
// steps) count in the shared memory, as the template's SCALE_SLOT_BYTES does, so 6 stages of 128x128
// with the TMA epilogue no longer fit: the family's default stages them (on the H200 0.939 / 0.954 x
// cuBLASLt against 0.870 / 0.882 with the scales read from global memory) with 5 stages, and its
// last alternative reads them from global memory with 6. Configurations recorded before the
// parameter read as SCALE_STAGE=0.
TEST(HopperGemmFamily, ScaleStageIsTheBlockScaledOperatorsAndCountsItsSlots) {
  HopperGemmFamily f;
  auto dense = problem({4096, 4096, 4096}, "e4m3bf16", true, "sm_90a");
  FamilyConfig d = f.default_config(dense);
  EXPECT_EQ(d.at("SCALE_STAGE"), "0");
  d["SCALE_STAGE"] = "1";
  ASSERT_TRUE(f.violation(d, dense));
  EXPECT_NE(f.violation(d, dense)->find("SCALE_STAGE=0"), std::string::npos) << *f.violation(d, dense);
  auto p = blockscaled({8192, 8192, 8192});
  EXPECT_EQ(f.default_config(p).at("SCALE_STAGE"), "1");
  const FamilyConfig def = overlapped_blockscaled(f, p);
  EXPECT_EQ(def.at("SCALE_STAGE"), "1");
  EXPECT_EQ(def.at("STAGES"), "5");
  EXPECT_EQ(def.at("EPILOGUE"), "1");
  EXPECT_NE(f.render_source(def, p).find("#define CROQ_SCALE_STAGE 1\n"), std::string::npos);
  FamilyConfig direct = def;
  direct["SCALE_STAGE"] = "0";
  EXPECT_EQ(HopperGemmFamily::smem_bytes(def, 1) - HopperGemmFamily::smem_bytes(direct, 1), 5 * 528);
  FamilyConfig six = def;
  six["STAGES"] = "6";
  ASSERT_TRUE(f.violation(six, p));
  EXPECT_NE(f.violation(six, p)->find("shared memory"), std::string::npos) << *f.violation(six, p);
  const auto alts = f.alternatives(p);
  ASSERT_FALSE(alts.empty());
  EXPECT_EQ(alts.back().tag, "bs_direct_scales");
  EXPECT_EQ(alts.back().config.at("SCALE_STAGE"), "0");
  EXPECT_EQ(alts.back().config.at("STAGES"), "6");
  EXPECT_FALSE(f.violation(alts.back().config, p));
  // Every block-scaled default stages its scales where 4 stages or more fit (3 for the waves of
  // 256x128): the drained ones of split-K too.
  for (const auto& s : k_typical) {
    auto q = blockscaled(s);
    const FamilyConfig c = f.default_config(q);
    EXPECT_EQ(c.at("SCALE_STAGE"), "1") << s.m << "x" << s.n << "x" << s.k;
    // (the waves of 256x128 tiles: 3 stages of 48 KB)
    EXPECT_GE(std::stoi(c.at("STAGES")), HopperGemmFamily::blockscaled_waves(c) ? 3 : 4)
        << s.m << "x" << s.n << "x" << s.k;
    EXPECT_GE(std::stoi(overlapped_blockscaled(f, q).at("STAGES")), 4) << s.m << "x" << s.n << "x" << s.k;
  }
  FamilyConfig recorded_before = def;  // a record from before the parameter
  recorded_before.erase("SCALE_STAGE");
  EXPECT_NE(f.violation(recorded_before, p).value_or("").find("SCALE_STAGE is missing"), std::string::npos);
  EXPECT_EQ(with_recorded_defaults(f, recorded_before), direct);
}

TEST(HopperGemmFamily, BlockScaledConfigurationsPromotePerScaleBlock) {
  HopperGemmFamily f;
  std::vector<Shape> shapes = k_typical;
  shapes.push_back({4096, 7168, 7168});
  for (const auto& s : shapes) {
    auto p = blockscaled(s);
    ASSERT_TRUE(f.supports(p));
    auto c = f.default_config(p);
    auto why = f.violation(c, p);
    ASSERT_FALSE(why) << s.m << "x" << s.n << "x" << s.k << ": " << *why;
    EXPECT_EQ(c.at("BK"), "128");
    // Each k block promoted while the next one's WGMMAs run (three sets of registers, 64-row
    // consumers) where they fit, else drained (split-K's reduction leaves room for two sets only).
    // 256x128 tiles in waves (drained, one atom's WGMMA sums at a time) hold 64 + 128.
    const int acc = HopperGemmFamily::accumulator_registers(c), limit = HopperGemmFamily::max_accumulators(c);
    EXPECT_EQ(c.at("MMA_DEPTH"), 3 * acc <= limit ? "1" : "0") << s.m << "x" << s.n << "x" << s.k;
    if (HopperGemmFamily::blockscaled_waves(c))
      EXPECT_LE(acc + std::stoi(c.at("BN")) / 2, limit);
    else
      EXPECT_LE((c.at("MMA_DEPTH") == "1" ? 3 : 2) * acc, limit);
    for (const auto& a : f.alternatives(p)) {
      EXPECT_FALSE(f.violation(a.config, p)) << a.name;
      const int a_acc = HopperGemmFamily::accumulator_registers(a.config);
      const bool fits = a.config.at("PINGPONG") == "0" && 3 * a_acc <= HopperGemmFamily::max_accumulators(a.config);
      EXPECT_EQ(a.config.at("MMA_DEPTH"), fits ? "1" : "0") << a.name;
    }
  }
  auto p = blockscaled({4096, 7168, 7168});
  auto c = overlapped_blockscaled(f, p);
  const std::string src = f.render_source(c, p);
  EXPECT_NE(src.find("#define CROQ_BLOCKSCALE 1\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_ELEM_BYTES 1\n"), std::string::npos);
  // MMA_DEPTH=1: the promotion of one k block overlaps the next block's WGMMAs, which needs a second
  // set of WGMMA sums: legal where three sets fit (64 x 128 per consumer), the default there; the
  // drained kernel stays legal.
  EXPECT_EQ(c.at("MMA_DEPTH"), "1");
  // B multicast to a 2x1 cluster: `croq tune` kept it on the H200 at both goal shapes (0.850 and
  // 0.849 x cuBLASLt against 0.832 and 0.823 without).
  EXPECT_EQ(c.at("CLUSTER_M"), "2");
  // The chunked TMA-store epilogue, whose slots fit beside 5 stages and the staged scales: on the
  // H200 0.910 / 0.914 x cuBLASLt at 8192^3 / 4096x7168x7168 against 0.885 / 0.902 with the
  // register epilogue (both with the scales read from global memory).
  EXPECT_EQ(c.at("EPILOGUE"), "1");
  EXPECT_EQ(c.at("STAGES"), "5");
  EXPECT_EQ(c.at("SCALE_STAGE"), "1");
  {
    auto cube = blockscaled({8192, 8192, 8192});
    EXPECT_EQ(f.default_config(cube).at("EPILOGUE"), "1");
    EXPECT_EQ(overlapped_blockscaled(f, cube).at("EPILOGUE"), "1");
  }
  EXPECT_EQ(f.default_config(blockscaled({128, 7168, 7168})).at("CLUSTER_M"), "1");  // one tile row: no cluster
  // After the waves default's own (stream-K over the partial last wave, the overlapped 128x128, the
  // waves with a 2x1 cluster), no large tile of the dense kernel holds three sets: the overlapped
  // kernel's own archetypes, then it with its scales read from global memory.
  std::vector<std::string> tags;
  const auto alts = f.alternatives(p);
  for (const auto& a : alts) tags.push_back(a.tag);
  EXPECT_EQ(tags, (std::vector<std::string>{"bs_w_sk", "bs_o128x128", "bs_w_c21", "bs_d128x192", "bs_c11",
                                            "bs_pp128x64", "bs_direct_scales"}));
  // The drained kernel holds up to 2 x 96 sums (one FFMA per sum: 128x160 and 128x192 no longer
  // spill); ptxas spills the overlapped one with ping-pong consumers.
  ASSERT_EQ(alts.size(), 7u);
  EXPECT_EQ(alts[1].config, c);
  const auto& d192 = alts[3].config;
  EXPECT_EQ(d192.at("BN"), "192");
  EXPECT_EQ(d192.at("MMA_DEPTH"), "0");
  EXPECT_EQ(d192.at("CLUSTER_M"), "2");
  EXPECT_EQ(d192.at("EPILOGUE"), "2");  // 5 stages of 128x192: no room for the TMA epilogue
  auto wide_drained = drained_of(c);
  wide_drained["SCALE_STAGE"] = "0";
  wide_drained["STAGES"] = "6";
  wide_drained["BN"] = "160";
  wide_drained["EPILOGUE"] = "2";  // 6 stages of 128x160 leave no room for the TMA epilogue's slots
  EXPECT_FALSE(f.violation(wide_drained, p));
  wide_drained["EPILOGUE"] = "1";
  EXPECT_NE(f.violation(wide_drained, p).value_or("").find("shared memory"), std::string::npos);
  auto pp = c;
  pp["BN"] = "64";
  pp["PINGPONG"] = "1";
  ASSERT_TRUE(f.violation(pp, p));
  EXPECT_NE(f.violation(pp, p)->find("PINGPONG=0 or MMA_DEPTH=0"), std::string::npos) << *f.violation(pp, p);
  pp["MMA_DEPTH"] = "0";
  EXPECT_FALSE(f.violation(pp, p));
  auto drained = c;
  drained["MMA_DEPTH"] = "0";
  EXPECT_FALSE(f.violation(drained, p));
  // A default with split-K drains; its first alternative is one slice per tile, overlapped.
  auto small = blockscaled({1024, 1024, 4096});
  const auto sd = f.default_config(small);
  ASSERT_NE(sd.at("SPLIT_K"), "1");
  EXPECT_EQ(sd.at("MMA_DEPTH"), "0");
  const auto small_alts = f.alternatives(small);
  ASSERT_FALSE(small_alts.empty());
  EXPECT_EQ(small_alts.front().tag, "bs_overlap");
  EXPECT_EQ(small_alts.front().config.at("SPLIT_K"), "1");
  EXPECT_EQ(small_alts.front().config.at("MMA_DEPTH"), "1");
  auto depth_wide = c;
  depth_wide["BN"] = "192";
  ASSERT_TRUE(f.violation(depth_wide, p));
  EXPECT_NE(f.violation(depth_wide, p)->find("3 x 96 registers"), std::string::npos) << *f.violation(depth_wide, p);
  EXPECT_NE(f.violation(depth_wide, p)->find("MMA_DEPTH=0"), std::string::npos);
  auto wide = drained;
  wide["BN"] = "256";
  ASSERT_TRUE(f.violation(wide, p));
  EXPECT_NE(f.violation(wide, p)->find("promotion"), std::string::npos);
  auto f16 = blockscaled({4096, 7168, 7168}, "e4m3f16");
  EXPECT_FALSE(f.supports(f16));
}

// 256x128 tiles in waves: the block-scaled default where their grid fills the GPU's waves as well as
// 128x128's and splits the rows evenly (since 2026-12-06; on an H100 0.997 x cuBLASLt at 8192^3
// against 0.960 for the overlapped 128x128, docs/fp8.md). Each consumer's two m64 atoms are drained
// and promoted in turn, so one set of WGMMA sums serves both (64 + 128 registers, what the
// overlapped 128x128 holds); A multicast to a 1x2 cluster; 3 stages beside two TMA-epilogue slots per
// consumer (4 stages leave room for one: the template's EPI_SLOTS, 0.990 there). Elsewhere the
// overlapped 128x128 stays the default and the waves come last among its alternatives.
TEST(HopperGemmFamily, BlockScaledWavesOf256x128Tiles) {
  HopperGemmFamily f;
  for (const Shape& s : {Shape{8192, 8192, 8192}, Shape{4096, 7168, 7168}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k));
    auto p = blockscaled(s);
    const FamilyConfig c = f.default_config(p);
    expect_params(c, {{"BM", "256"},
                      {"BN", "128"},
                      {"MMA_DEPTH", "0"},
                      {"CLUSTER_M", "1"},
                      {"CLUSTER_N", "2"},
                      {"STAGES", "3"},
                      {"EPILOGUE", "1"},
                      {"SCALE_STAGE", "1"},
                      {"SPLIT_K", "1"}});
    ASSERT_TRUE(HopperGemmFamily::blockscaled_waves(c));
    ASSERT_FALSE(f.violation(c, p)) << *f.violation(c, p);
    // 3 stages of 48 KB and their 1040-byte scale slots, two 8 KB slots per consumer, the barriers.
    EXPECT_EQ(HopperGemmFamily::smem_bytes(c, 1), 1024 + 3 * 49152 + 4 * 8192 + 3 * 1040 + 128);
    FamilyConfig four = c;  // 4 stages: one slot per consumer
    four["STAGES"] = "4";
    EXPECT_FALSE(f.violation(four, p));
    EXPECT_EQ(HopperGemmFamily::smem_bytes(four, 1), 1024 + 4 * 49152 + 2 * 8192 + 4 * 1040 + 128);
    FamilyConfig five = c;
    five["STAGES"] = "5";
    EXPECT_NE(f.violation(five, p).value_or("").find("shared memory"), std::string::npos);
    // The template picks the waves itself (CROQ_BS_WAVES is not rendered).
    const std::string src = f.render_source(c, p);
    EXPECT_EQ(src.substr(0, src.find("#line")).find("CROQ_BS_WAVES"), std::string::npos);
    FamilyConfig overlapped = c;
    overlapped["MMA_DEPTH"] = "1";
    EXPECT_NE(f.violation(overlapped, p).value_or("").find("3 x 128 registers"), std::string::npos);
    FamilyConfig direct = c;  // scales from global memory: the drained kernel without waves
    direct["SCALE_STAGE"] = "0";
    EXPECT_FALSE(HopperGemmFamily::blockscaled_waves(direct));
    EXPECT_NE(f.violation(direct, p).value_or("").find("2 x 128 registers"), std::string::npos);
    FamilyConfig wide = c;
    wide["BN"] = "192";
    wide["STAGES"] = "3";
    EXPECT_NE(f.violation(wide, p).value_or("").find("in waves keeps one m64 atom's WGMMA sums besides the promoted "
                                                     "sums: 192 + 96 registers"),
              std::string::npos)
        << f.violation(wide, p).value_or("");
    // Both shapes leave the last wave of 66 clusters partial (15.5 and 6.8 waves): stream-K over it
    // first, on the same tile (its 192 accumulators fit with stream-K in the waves).
    const auto alts = f.alternatives(p);
    ASSERT_GE(alts.size(), 3u);
    EXPECT_EQ(alts[0].tag, "bs_w_sk");
    FamilyConfig sk = c;
    sk["STREAM_K"] = "1";
    EXPECT_EQ(alts[0].config, sk);
    EXPECT_EQ(HopperGemmFamily::max_accumulators(sk), 192);
    EXPECT_EQ(alts[1].tag, "bs_o128x128");
    expect_params(alts[1].config, {{"MMA_DEPTH", "1"}, {"BM", "128"}});
    EXPECT_EQ(alts[2].tag, "bs_w_c21");
    expect_params(alts[2].config, {{"CLUSTER_M", "2"}, {"CLUSTER_N", "1"}});
    for (const auto& a : alts) EXPECT_NE(a.tag, "bs_w256x128");
  }
  // Whole waves of cluster tiles (8192x8448: 1056 of them, 16 waves of 66): no stream-K alternative,
  // and stream-K elsewhere than in the waves keeps its limit of 128 accumulators.
  {
    auto whole = blockscaled({8192, 8448, 8192});
    ASSERT_TRUE(HopperGemmFamily::blockscaled_waves(f.default_config(whole)));
    for (const auto& a : f.alternatives(whole)) EXPECT_NE(a.tag, "bs_w_sk");
    FamilyConfig o128 = f.default_config(blockscaled({8192, 8192, 8192}));
    o128["BM"] = "128";
    o128["STREAM_K"] = "1";
    EXPECT_FALSE(HopperGemmFamily::blockscaled_waves(o128));
    EXPECT_EQ(HopperGemmFamily::max_accumulators(o128), 128);
    // The waves with stream-K on the small shapes of the FP8 GPU test (tests/gpu/fp8_family_gpu_test.cpp).
    for (const Shape& s : {Shape{1000, 1000, 1040}, Shape{512, 640, 4160}}) {
      const auto small = blockscaled(s);
      FamilyConfig w = f.default_config(small);
      for (const auto& [k, v] : std::initializer_list<std::pair<const char*, const char*>>{
               {"BM", "256"}, {"BN", "128"}, {"CONSUMERS", "2"}, {"PINGPONG", "0"}, {"MMA_DEPTH", "0"},
               {"SCALE_STAGE", "1"}, {"STAGES", "3"}, {"EPILOGUE", "1"}, {"SPLIT_K", "1"}, {"STREAM_K", "1"},
               {"PERSISTENT", "1"}})
        w[k] = v;
      EXPECT_TRUE(HopperGemmFamily::blockscaled_waves(w));
      EXPECT_FALSE(f.violation(w, small)) << f.violation(w, small).value_or("");
    }
  }
  // One tile row (the waves would leave half of each tile empty), 2176 rows (17 rows of 128, 9 of
  // 256: the waves would compute 128 rows more) and K below 4096 (measured from 7168): the overlapped
  // 128x128, the waves last among its alternatives where there are two tile rows of 128.
  auto one_row = blockscaled({128, 7168, 7168});
  EXPECT_EQ(f.default_config(one_row).at("BM"), "128");
  for (const auto& a : f.alternatives(one_row)) EXPECT_NE(a.tag, "bs_w256x128");
  auto short_k = blockscaled({8192, 8192, 2048});
  EXPECT_EQ(f.default_config(short_k).at("BM"), "128");
  ASSERT_FALSE(f.alternatives(short_k).empty());
  EXPECT_EQ(f.alternatives(short_k).back().tag, "bs_w256x128");
  auto k4096 = short_k;
  k4096.k = 4096;
  EXPECT_TRUE(HopperGemmFamily::blockscaled_waves(f.default_config(k4096)));
  auto uneven = blockscaled({2176, 8192, 8192});
  const FamilyConfig ud = f.default_config(uneven);
  EXPECT_EQ(ud.at("BM"), "128");
  EXPECT_EQ(ud.at("MMA_DEPTH"), "1");
  const auto ualts = f.alternatives(uneven);
  ASSERT_FALSE(ualts.empty());
  EXPECT_EQ(ualts.back().tag, "bs_w256x128");
  expect_params(ualts.back().config, {{"BM", "256"}, {"STAGES", "3"}});
  EXPECT_FALSE(f.violation(ualts.back().config, uneven));
}

// The configurations measured by hand (bench/gpu/gemm_configs.sh: gemm_configs.txt and
// gemm_configs_wide.txt) are changes from a fixed base; each must name family parameters with
// listed values and be legal for its shape, in both B layouts.
TEST(HopperGemmFamily, HandMeasuredConfigurationsAreLegalForTheirShapes) {
  HopperGemmFamily f;
  const FamilyConfig base{{"BM", "128"},      {"BN", "256"},     {"BK", "64"},        {"STAGES", "4"},
                          {"CONSUMERS", "2"}, {"PINGPONG", "0"}, {"MMA_DEPTH", "1"},  {"CLUSTER_M", "1"},
                          {"CLUSTER_N", "1"}, {"PERSISTENT", "1"}, {"RASTER", "1"},   {"GROUP", "8"},
                          {"SPLIT_K", "1"},   {"STREAM_K", "0"}, {"EPILOGUE", "0"}, {"SWIZZLE", "128"},
                          {"PROMOTE_EVERY", "1"}, {"SCALE_STAGE", "0"}};
  int checked = 0;
  for (const char* list : {"gemm_configs.txt", "gemm_configs_wide.txt", "gemm_configs_large.txt", "gemm_configs_sk.txt",
                           "gemm_configs_sk_onewave.txt"}) {
    const auto text = read_file(find_project_dir("bench") / "gpu" / list);
    ASSERT_TRUE(text) << list;
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
      line = line.substr(0, line.find('#'));
      std::istringstream words(line);
      std::string key, name, kv;
      if (!(words >> key >> name)) continue;
      FamilyConfig c = base;
      while (words >> kv) {
        auto eq = kv.find('=');
        ASSERT_NE(eq, std::string::npos) << list << ": " << line;
        ASSERT_TRUE(c.count(kv.substr(0, eq))) << list << ": unknown parameter in " << line;
        c[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      const ShapeKey k = parse_shape_key(key);
      for (bool col : {false, true}) {
        FamilyProblem p;
        p.m = k.m();
        p.n = k.n();
        p.k = k.k();
        p.dtype = parse_dtype_pair_or_throw(k.dtype_token);
        p.b_col_major = col;
        p.arch = "sm_90a";
        auto why = f.violation(c, p);
        EXPECT_FALSE(why) << list << " " << key << " " << name << (col ? " col" : " row") << ": " << *why;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 30);
}

// The GPU probe (bench/gpu/gemm_probe_configs.txt) writes its configurations by hand: each must
// name every parameter of the family with a listed value, and be legal for the shapes it is timed
// on (a refused configuration would measure something the search can never produce). The odd
// check shapes go beyond the checker on purpose (a split larger than the k blocks, a cluster
// larger than the tile grid): the kernel must still be correct there.
TEST(HopperGemmFamily, ProbeConfigurationsAreLegalForTheirTimedShapes) {
  HopperGemmFamily f;
  const auto text = read_file(find_project_dir("bench") / "gpu" / "gemm_probe_configs.txt");
  ASSERT_TRUE(text);
  const std::map<std::string, std::vector<std::pair<Shape, std::string>>> groups = {
      {"small", {{{768, 768, 768}, "f16f32"}, {{1024, 1024, 4096}, "f16f32"}}},
      {"big",
       {{{512, 8192, 8192}, "f16f32"},
        {{4096, 8192, 512}, "f16f32"},
        {{4096, 32768, 8192}, "f16f32"},
        {{16384, 8192, 8192}, "f16f32"},
        {{12288, 8192, 12288}, "f16f32"}}},
      {"sq",
       {{{4096, 4096, 4096}, "f16f32"},
        {{8192, 8192, 8192}, "f16f32"},
        {{4096, 4096, 4096}, "bf16f32"},
        {{8192, 8192, 8192}, "bf16f32"}}},
      {"out16", {{{4096, 4096, 4096}, "bf16"}, {{4096, 4096, 4096}, "f16"}, {{8192, 8192, 8192}, "bf16"}}}};
  std::istringstream lines(*text);
  std::string line;
  std::set<std::string> labels;
  int hopper = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string label, family, group_list, kv;
    words >> label >> family >> group_list;
    EXPECT_TRUE(labels.insert(label).second) << "duplicate label " << label;
    if (family != "hopper") continue;
    ++hopper;
    FamilyConfig c;
    while (words >> kv) {
      auto eq = kv.find('=');
      ASSERT_NE(eq, std::string::npos) << line;
      c[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    c = with_recorded_defaults(f, c);  // lines written before a parameter existed read as without it
    EXPECT_FALSE(gemm::check_listed_values(c, f.params())) << label << ": " << *gemm::check_listed_values(c, f.params());
    std::istringstream gs(group_list);
    std::string g;
    while (std::getline(gs, g, ',')) {
      ASSERT_TRUE(groups.count(g)) << label << ": unknown group " << g;
      for (const auto& [s, dt] : groups.at(g))
        for (bool col : {false, true}) {
          auto p = problem(s, dt, col, "sm_90a");
          auto why = f.violation(c, p);
          EXPECT_FALSE(why) << label << " " << s.m << "x" << s.n << "x" << s.k << " " << dt << ": " << *why;
        }
    }
  }
  EXPECT_GE(hopper, 10);
}

TEST(AmpereGemmFamily, DefaultConfigIsLegalOnEveryArchitecture) {
  AmpereGemmFamily f;
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90a"})
    for (const auto& s : k_typical)
      for (const auto& dt : k_dtypes)
        for (bool col : {false, true}) {
          auto p = problem(s, dt, col, arch);
          ASSERT_TRUE(f.supports(p));
          auto why = f.violation(f.default_config(p), p);
          EXPECT_FALSE(why) << arch << " " << s.m << "x" << s.n << "x" << s.k << ": " << *why;
        }
}

TEST(AmpereGemmFamily, EveryConfigurationIsLegalOrRefusedWithAReason) {
  AmpereGemmFamily f;
  for (const char* arch : {"sm_80", "sm_86", "sm_90a"}) {
    const auto p = problem({1000, 1000, 1000}, "f16f32", false, arch);
    long long legal = 0, refused = 0;
    for_each_config(f, [&](const FamilyConfig& c) {
      auto why = f.violation(c, p);
      if (why) {
        ++refused;
        EXPECT_FALSE(why->empty());
        return;
      }
      ++legal;
      const int bm = iv(c, "BM"), bn = iv(c, "BN"), bk = iv(c, "BK");
      const int wm = bm / iv(c, "WARPS_M"), wn = bn / iv(c, "WARPS_N");
      const int threads = iv(c, "WARPS_M") * iv(c, "WARPS_N") * 32;
      EXPECT_EQ(wm % 16, 0);
      EXPECT_EQ(wn % 16, 0);
      EXPECT_LE((wm / 16) * (wn / 8) * 4, 128);  // f32 accumulators per thread
      EXPECT_LE(threads, 512);
      EXPECT_LE((wm / 16) * (wn / 8) * 4, 65536 / threads);
      EXPECT_LE(static_cast<long long>(iv(c, "STAGES")) * (bm + bn) * bk * 2, AmpereGemmFamily::smem_limit(arch));
    });
    EXPECT_GT(legal, 100) << arch;
    EXPECT_GT(refused, 100) << arch;
  }
}

TEST(AmpereGemmFamily, SharedMemoryLimitDependsOnTheArchitecture) {
  AmpereGemmFamily f;
  FamilyConfig c{{"BM", "128"},    {"BN", "128"},   {"BK", "64"},     {"WARPS_M", "2"},
                 {"WARPS_N", "2"}, {"STAGES", "5"}, {"RASTER", "1"}, {"GROUP", "8"}};  // 160 KiB
  EXPECT_FALSE(f.violation(c, problem({4096, 4096, 4096}, "f16f32", false, "sm_80")));
  EXPECT_NE(f.violation(c, problem({4096, 4096, 4096}, "f16f32", false, "sm_86")).value_or("").find("shared memory"),
            std::string::npos);
  EXPECT_FALSE(f.violation(c, problem({4096, 4096, 4096}, "f16f32", false, "sm_90a")));
  EXPECT_FALSE(f.supports(problem({4096, 4096, 4096}, "f16f32", false, "cpu")));
}

TEST(AmpereGemmFamily, RenderedSourceAndFlagsFollowTheTarget) {
  AmpereGemmFamily f;
  auto p = problem({4096, 4096, 4096}, "f16", false, "sm_86");
  auto c = f.default_config(p);
  const std::string src = f.render_source(c, p);
  EXPECT_NE(src.find("#define CROQ_WARPS_M 2\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_DTYPES 2\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_BLAYOUTS 1\n"), std::string::npos);
  EXPECT_NE(src.find("mma.sync.aligned.m16n8k16"), std::string::npos);
  auto flags = f.build_flags(c, p);
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-gencode=arch=compute_86,code=sm_86"), flags.end());
  p.arch = "sm_90a";
  flags = f.build_flags(c, p);
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-gencode=arch=compute_90,code=sm_90"), flags.end());
}

}  // namespace
}  // namespace croq
