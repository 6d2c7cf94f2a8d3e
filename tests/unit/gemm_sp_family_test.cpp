// The hopper_gemm_sp kernel family (2:4 sparse GEMM on sm_90a): its parameter space, the
// constraint checker over every configuration the search can produce (against limits recomputed
// here from the hardware's rules), defaults and alternatives for the from-scratch sweep's typical
// shapes, rendering, the GPU test's sample and the bench script's configurations. Compiling
// rendered sources with nvcc is tested in tests/nvcc (label nvcc).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "croq/search/family.hpp"
#include "croq/search/gemm_family_common.hpp"
#include "croq/search/hopper_gemm_sp_family.hpp"
#include "croq/util/paths.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/hopper_sp_gpu_sample.hpp"
#include "support/family_walk.hpp"

namespace croq {
namespace {

using test::for_each_config;

struct Shape {
  int64_t m, n, k;
};

// The from-scratch sweep's 14 typical shapes, the reference shape and two squares.
const std::vector<Shape> k_typical = {
    {768, 768, 768},    {12288, 12288, 12288}, {512, 8192, 8192},   {16384, 8192, 8192}, {4096, 1024, 8192},
    {4096, 32768, 8192}, {4096, 8192, 512},    {4096, 8192, 32768}, {1024, 1024, 4096},  {12288, 12288, 4096},
    {1024, 8192, 1024}, {12288, 8192, 12288},  {4096, 1024, 1024},  {12288, 4096, 4096}, {4096, 8192, 8192},
    {4096, 4096, 4096}, {8192, 8192, 8192}};

const std::vector<std::string> k_dtypes = {"f16", "f16f32", "e4m3f16", "bf16", "e4m3bf16"};

FamilyProblem problem(Shape s, const std::string& dtype, const std::string& arch = "sm_90a") {
  FamilyProblem p;
  p.op = "gemm_sp";
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.dtype = parse_dtype_pair_or_throw(dtype);
  p.b_col_major = true;
  p.arch = arch;
  return p;
}

int iv(const FamilyConfig& c, const char* name) { return gemm::int_param(c, name).value(); }

// What a legal configuration must satisfy, recomputed here from the hardware's rules.
void expect_invariants(const FamilyConfig& c, const FamilyProblem& p) {
  const int es = p.dtype.input == ScalarType::e4m3 ? 1 : 2;
  const int bm = iv(c, "BM"), bn = iv(c, "BN"), bk = iv(c, "BK"), stages = iv(c, "STAGES");
  const int consumers = iv(c, "CONSUMERS"), cm = iv(c, "CLUSTER_M"), cn = iv(c, "CLUSTER_N");
  const bool pingpong = iv(c, "PINGPONG") == 1;
  const std::string what = config_to_json(c).dump();
  // Sparse WGMMA: M 64 per instruction, N a multiple of 8 up to 256 (32s in the template), K 32
  // (16-bit) or 64 (e4m3) logical per instruction: a stage holds whole instructions.
  EXPECT_TRUE(bn % 32 == 0 && bn >= 32 && bn <= 256) << what;
  const int rows = pingpong ? bm : bm / consumers;
  if (pingpong) {
    EXPECT_EQ(consumers, 2) << what;
  }
  EXPECT_EQ(rows % 64, 0) << what;
  EXPECT_EQ(bk % (es == 2 ? 32 : 64), 0) << what;
  // Swizzles: a TMA box row is at most the swizzle width and no wider than the tile row; B's at
  // least the 64 bytes of K one sparse WGMMA reads.
  const int a_row = bk / 2 * es, b_row = bk * es;
  EXPECT_LE(iv(c, "SWIZZLE_A"), a_row) << what;
  EXPECT_LE(iv(c, "SWIZZLE_B"), b_row) << what;
  EXPECT_GE(iv(c, "SWIZZLE_B"), 64) << what;
  EXPECT_EQ(a_row % iv(c, "SWIZZLE_A"), 0) << what;
  // Accumulators within what ptxas gives a consumer without spilling.
  const int acc = (rows / 64) * (64 * bn / 128);
  // (gemm_sp_compile_test: ptxas spills the metadata register sets held beside 192 accumulators at
  // 16-bit BK 128, beside a ping-pong kernel's quad transpose or META 2 prefetch, and with META 0.)
  int limit = iv(c, "SPLIT_K") > 1 ? 160 : 192;
  const bool out16 = p.dtype.output != ScalarType::f32;
  const int meta = iv(c, "META");
  if ((es == 2 && bk == 128) || (pingpong && iv(c, "EPILOGUE") == 2 && out16) || meta == 0 || (meta == 2 && pingpong))
    limit -= 32;
  // Promotion (e4m3 only): twice the tile's accumulators, or per sub-tile the tile's plus BN/4
  // (BN/2 a multiple of 32, one m64 atom per consumer, MMA_DEPTH 0, two cooperative consumers,
  // every k block).
  int held = acc;
  if (iv(c, "PROMOTE") > 0) {
    EXPECT_EQ(es, 1) << what;
    if (iv(c, "PROMOTE_SUB") == 1) {
      EXPECT_EQ(iv(c, "PROMOTE"), 1) << what;
      EXPECT_EQ(iv(c, "MMA_DEPTH"), 0) << what;
      EXPECT_EQ(consumers, 2) << what;
      EXPECT_FALSE(pingpong) << what;
      EXPECT_EQ(bn / 2 % 32, 0) << what;
      EXPECT_EQ(bm, 128) << what;  // one m64 atom per consumer
      held = acc + bn / 4;
    } else {
      held = 2 * acc;
    }
  }
  EXPECT_EQ(HopperGemmSpFamily::accumulator_registers(c, p.dtype), held) << what;
  EXPECT_LE(held, limit) << what;
  // Shared memory: per stage compressed A (BM x BK/2), B (BN x BK), metadata (BM/64 x BK/64 x 512
  // bytes, none when read from L2); epilogue slots; barriers; alignment slack; 16 bytes per consumer
  // thread where the metadata registers are stored once their WGMMAs are retired.
  long long stage = static_cast<long long>(bm) * bk / 2 * es + static_cast<long long>(bn) * bk * es;
  if (iv(c, "META") != 2) stage += (bm / 64) * (bk / 64) * 512;
  long long smem = 1024 + stages * stage + (2 * stages + 2) * 8 + consumers * 128 * 16;
  if (iv(c, "EPILOGUE") == 1) smem += consumers * 2 * 8192;
  EXPECT_LE(smem, 227 * 1024) << what;
  // TMA boxes: at most 256 rows; the metadata box at most 256 words wide.
  EXPECT_LE(bm / cn, 256);
  EXPECT_LE(bn / cm, 256);
  EXPECT_LE(bk / 64 * 128, 256);
  EXPECT_EQ((bm / cn) % 8, 0);
  EXPECT_EQ((bn / cm) % 8, 0);
  EXPECT_LE(cm, (p.m + bm - 1) / bm);
  EXPECT_LE(cn, (p.n + bn - 1) / bn);
  if (iv(c, "EPILOGUE") == 2) {
    EXPECT_NE(p.dtype.output, ScalarType::f32);
  }
  if (iv(c, "SPLIT_K") > 1) {
    EXPECT_EQ(iv(c, "PERSISTENT"), 1);
    EXPECT_LE(iv(c, "SPLIT_K"), (p.k + bk - 1) / bk);
  }
}

TEST(HopperGemmSpFamily, IsRegisteredForTheSparseOperatorOnly) {
  auto f = find_family("hopper_gemm_sp");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->dsl(), "cuda");
  EXPECT_TRUE(f->supports(problem({4096, 8192, 8192}, "f16")));
  EXPECT_TRUE(f->supports(problem({4096, 8192, 8192}, "e4m3f16")));
  EXPECT_TRUE(f->supports(problem({1000, 3000, 2048}, "f16f32", "")));
  FamilyProblem dense = problem({4096, 8192, 8192}, "f16");
  dense.op = "matmul";
  EXPECT_FALSE(f->supports(dense));
  EXPECT_FALSE(f->supports(problem({4096, 8192, 8192}, "f16", "sm_80")));
  EXPECT_FALSE(f->supports(problem({4096, 8192, 8192}, "f32")));
  EXPECT_FALSE(f->supports(problem({4096, 8192, 8190}, "f16")));  // K not a multiple of 8
  // The dense families leave the sparse operator alone: croq's search picks this one for it.
  for (const char* dense_family : {"hopper_gemm", "ampere_gemm"}) {
    EXPECT_FALSE(find_family(dense_family)->supports(problem({4096, 8192, 8192}, "f16"))) << dense_family;
  }
  std::shared_ptr<KernelFamily> chosen;
  for (auto& x : kernel_families())
    if (!chosen && x->dsl() == "cuda" && x->supports(problem({4096, 8192, 8192}, "e4m3f16"))) chosen = x;
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(chosen->name(), "hopper_gemm_sp");
}

TEST(HopperGemmSpFamily, ParametersHaveValuesCategoriesAndBothKinds) {
  HopperGemmSpFamily f;
  const std::set<std::string> categories = {"tiling", "pipeline", "memory", "compute", "misc"};
  bool structural = false, macro = false;
  std::set<std::string> names;
  for (const auto& s : f.params()) {
    EXPECT_FALSE(s.values.empty()) << s.name;
    EXPECT_TRUE(categories.count(s.category)) << s.name;
    EXPECT_FALSE(s.description.empty()) << s.name;
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
    (s.structural ? structural : macro) = true;
  }
  EXPECT_TRUE(structural && macro);
  // The parameter space: warp specialization 1-2 consumers, 2-4 stages and beyond, BK 64
  // or 128, swizzles, metadata hoisting, clusters, persistent tiles.
  for (const char* n : {"CONSUMERS", "STAGES", "BK", "SWIZZLE_A", "SWIZZLE_B", "META", "CLUSTER_M", "CLUSTER_N",
                        "PERSISTENT", "PINGPONG", "SPLIT_K", "EPILOGUE"})
    EXPECT_TRUE(names.count(n)) << n;
  for (const char* b : {"memory_bound", "compute_bound", "latency_bound", "launch_bound", "mixed"}) {
    auto list = f.params_for_bottleneck(b);
    EXPECT_FALSE(list.empty()) << b;
    for (const auto& n : list) EXPECT_TRUE(names.count(n)) << b << " " << n;
  }
}

TEST(HopperGemmSpFamily, DefaultConfigIsLegalForTheTypicalShapes) {
  HopperGemmSpFamily f;
  for (const auto& s : k_typical)
    for (const auto& dt : k_dtypes) {
      auto p = problem(s, dt);
      ASSERT_TRUE(f.supports(p));
      auto c = f.default_config(p);
      auto why = f.violation(c, p);
      EXPECT_FALSE(why) << s.m << "x" << s.n << "x" << s.k << " " << dt << ": " << *why;
      if (!why) expect_invariants(c, p);
    }
  // Odd and tiny shapes too.
  for (Shape s : std::vector<Shape>{{1000, 3000, 2048}, {1, 1, 8}, {777, 1000, 520}, {64, 64, 64}, {100000, 8, 16}})
    for (const auto& dt : k_dtypes) {
      auto p = problem(s, dt);
      auto c = f.default_config(p);
      EXPECT_FALSE(f.violation(c, p)) << s.m << "x" << s.n << "x" << s.k << " " << dt << ": "
                                      << f.violation(c, p).value_or("");
    }
}

TEST(HopperGemmSpFamily, DefaultsFollowTheProblem) {
  HopperGemmSpFamily f;
  // Many tiles: a cooperative tile of two consumers (256 x 192, 256 x 128 or 128 x 256, whichever
  // the cost model prefers: the partial last wave and the operand traffic decide), in a 2x1 cluster
  // with the TMA-store epilogue, hoisted metadata, one WGMMA group in flight, BK 64 for 16-bit
  // inputs and 128 for e4m3 (two sparse WGMMAs per stage either way), the widest swizzles, as many
  // stages as fit.
  auto huge = f.default_config(problem({16384, 8192, 8192}, "f16"));  // 20.8 waves of 256 x 192
  EXPECT_EQ(huge.at("BM"), "256");
  EXPECT_EQ(huge.at("BN"), "192");
  EXPECT_EQ(huge.at("CONSUMERS"), "2");
  EXPECT_EQ(huge.at("PINGPONG"), "0");
  EXPECT_EQ(huge.at("BK"), "64");
  EXPECT_EQ(huge.at("SWIZZLE_A"), "64");
  EXPECT_EQ(huge.at("SWIZZLE_B"), "128");
  EXPECT_EQ(huge.at("STAGES"), "4");
  EXPECT_EQ(huge.at("EPILOGUE"), "1");
  EXPECT_EQ(huge.at("CLUSTER_M"), "2");
  EXPECT_EQ(huge.at("MMA_DEPTH"), "1");
  EXPECT_EQ(huge.at("META"), "1");
  // 4096 x 8192 x 8192: 5.2 waves of 256 x 192 tiles (the sixth 21 % full), 7.8 of 128 x 256, which
  // in a 2x1 cluster reads no more per FLOP than 256 x 128 (measured: 1146, 1128 and 1105 TFLOPS).
  auto ref16 = f.default_config(problem({4096, 8192, 8192}, "f16"));
  EXPECT_EQ(ref16.at("BM"), "128");
  EXPECT_EQ(ref16.at("BN"), "256");
  EXPECT_EQ(ref16.at("STAGES"), "4");
  EXPECT_EQ(f.default_config(problem({8192, 8192, 8192}, "f16")).at("BN"), "192");
  // (e4m3 above K=12288 promotes, in a tile promotion fits: DefaultPromotesE4m3AtLongKOnly; without
  // promotion, at K=1024, the widest tile.)
  auto big8 = f.default_config(problem({16384, 8192, 1024}, "e4m3f16"));
  EXPECT_EQ(big8.at("BN"), "192");
  EXPECT_EQ(big8.at("BK"), "128");
  EXPECT_EQ(big8.at("SWIZZLE_A"), "64");
  EXPECT_EQ(big8.at("SWIZZLE_B"), "128");
  EXPECT_EQ(big8.at("STAGES"), "4");
  EXPECT_EQ(f.default_config(problem({4096, 8192, 8192}, "f16f32")).at("EPILOGUE"), "1");
  // A wave of 128x128 tiles but not of 256x128: the cooperative 128x256 tile in a cluster.
  auto mid = f.default_config(problem({4096, 1024, 8192}, "f16"));
  EXPECT_EQ(mid.at("PINGPONG"), "0");
  EXPECT_EQ(mid.at("BM"), "128");
  EXPECT_EQ(mid.at("BN"), "256");
  EXPECT_EQ(mid.at("CLUSTER_M"), "2");
  // Few tiles and a long K: split-K fills the GPU, with the register epilogue of the output type.
  auto small = f.default_config(problem({1024, 1024, 4096}, "f16"));
  EXPECT_GT(iv(small, "SPLIT_K"), 1) << config_to_json(small).dump();
  EXPECT_EQ(small.at("EPILOGUE"), "2");
}

// e4m3 at long K accumulates in two levels (PROMOTE): measured on the H200 (docs/gemm_sp.md), the
// unpromoted kernels' max abs error grew from 0.04 at K=1024 to 2.7 at K=32768 (VERIFY_FAIL at
// 4096x8192x32768; cuSPARSELt 0.074), and they passed croq's verification up to K=12288, where
// promotion cost 16-23 % (docs/results/gemm-sp-promote-h200.md). The default promotes every 512 of K
// where a k slice is longer than 12288, picking among the tiles where promotion fits; 16-bit inputs
// never promote.
TEST(HopperGemmSpFamily, DefaultPromotesE4m3AtLongKOnly) {
  HopperGemmSpFamily f;
  auto promoted = [&](const FamilyConfig& c) { return iv(c, "PROMOTE") > 0; };
  const auto fail = f.default_config(problem({4096, 8192, 32768}, "e4m3f16"));  // the VERIFY_FAIL shape
  EXPECT_TRUE(promoted(fail)) << config_to_json(fail).dump();
  EXPECT_EQ(iv(fail, "PROMOTE") * iv(fail, "BK"), HopperGemmSpFamily::k_promote_interval_k);
  // Measured there (docs/results/gemm-sp-promote-h200.md, second run): the whole 128 x 192 tile
  // promoted every 4 k blocks, 1.39 x the best library, against 1.25 for 128 x 256 promoted per
  // sub-tile every block.
  EXPECT_EQ(HopperGemmSpFamily::k_promote_interval_k, 512);
  EXPECT_EQ(fail.at("BM") + "x" + fail.at("BN"), "128x192");
  EXPECT_EQ(fail.at("PROMOTE"), "4");
  EXPECT_EQ(fail.at("PROMOTE_SUB"), "0");
  EXPECT_FALSE(f.violation(fail, problem({4096, 8192, 32768}, "e4m3f16")));
  for (const char* dt : {"f16", "f16f32", "bf16"}) {
    const auto c = f.default_config(problem({4096, 8192, 32768}, dt));
    EXPECT_EQ(c.at("PROMOTE"), "0") << dt;
    EXPECT_EQ(c.at("PROMOTE_SUB"), "0") << dt;
  }
  // Short K, and a split-K whose slices are short, stay as they were.
  const auto short_k = f.default_config(problem({4096, 8192, 1024}, "e4m3f16"));
  EXPECT_FALSE(promoted(short_k));
  EXPECT_FALSE(promoted(f.default_config(problem({4096, 8192, 8192}, "e4m3f16"))));
  EXPECT_FALSE(promoted(f.default_config(problem({12288, 8192, 12288}, "e4m3f16"))));
  EXPECT_TRUE(promoted(f.default_config(problem({4096, 8192, 16384}, "e4m3f16"))));
  EXPECT_FALSE(promoted(f.default_config(problem({4096, 8192, 512}, "e4m3f16"))));
  // Every e4m3 typical shape with k slices over 12288 promotes, in a tile where it fits; others not.
  for (const auto& s : k_typical)
    for (const char* dt : {"e4m3f16", "e4m3bf16"}) {
      const auto p = problem(s, dt);
      const auto c = f.default_config(p);
      SCOPED_TRACE(fmt::format("{}x{}x{} {}: {}", s.m, s.n, s.k, dt, config_to_json(c).dump()));
      EXPECT_FALSE(f.violation(c, p));
      const int slices = HopperGemmSpFamily::effective_split(c, p);
      EXPECT_EQ(promoted(c), (s.k + slices - 1) / slices > HopperGemmSpFamily::k_promote_above_k);
      EXPECT_EQ(HopperGemmSpFamily::needs_promotion(p, slices), promoted(c));
      for (const auto& a : f.alternatives(p)) {
        EXPECT_EQ(promoted(a.config), HopperGemmSpFamily::needs_promotion(p, HopperGemmSpFamily::effective_split(a.config, p)))
            << a.name;
      }
    }
  // Where many tiles fill the GPU the promoted default is a tile promotion fits (256 x 192 does not:
  // 2 x 192 or 192 + 48 accumulators), in a 2x1 cluster with TMA stores.
  const auto big = f.default_config(problem({16384, 8192, 16384}, "e4m3f16"));
  EXPECT_TRUE(promoted(big));
  EXPECT_FALSE(big.at("BM") == "256" && big.at("BN") == "192");
  EXPECT_EQ(big.at("CLUSTER_M"), "2");
  EXPECT_EQ(big.at("EPILOGUE"), "1");
  // with_promotion: the whole tile where twice its accumulators fit, else per sub-tile.
  FamilyConfig c = big;
  c["BM"] = "128";
  c["BN"] = "192";
  c["MMA_DEPTH"] = "1";
  auto w = HopperGemmSpFamily::with_promotion(c, parse_dtype_pair_or_throw("e4m3f16"));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->at("PROMOTE"), "4");  // every 512 of K in k blocks of 128
  EXPECT_EQ(w->at("PROMOTE_SUB"), "0");
  EXPECT_EQ(w->at("MMA_DEPTH"), "1");
  EXPECT_EQ(HopperGemmSpFamily::accumulator_registers(*w, parse_dtype_pair_or_throw("e4m3f16")), 192);
  c["BN"] = "256";
  w = HopperGemmSpFamily::with_promotion(c, parse_dtype_pair_or_throw("e4m3f16"));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->at("PROMOTE_SUB"), "1");
  EXPECT_EQ(w->at("MMA_DEPTH"), "0");
  EXPECT_EQ(HopperGemmSpFamily::accumulator_registers(*w, parse_dtype_pair_or_throw("e4m3f16")), 128 + 64);
  c["BM"] = "256";
  c["BN"] = "192";
  EXPECT_FALSE(HopperGemmSpFamily::with_promotion(c, parse_dtype_pair_or_throw("e4m3f16")));
  c["BN"] = "128";  // 128 + 32 would fit, but two m64 atoms per consumer spill
  EXPECT_FALSE(HopperGemmSpFamily::with_promotion(c, parse_dtype_pair_or_throw("e4m3f16")));
  EXPECT_FALSE(HopperGemmSpFamily::with_promotion(big, parse_dtype_pair_or_throw("f16")));
}

// Promotion's parameters are refused where the template cannot build them, saying why.
TEST(HopperGemmSpFamily, RefusesImpossiblePromotionSayingWhy) {
  HopperGemmSpFamily f;
  const auto p8 = problem({4096, 8192, 32768}, "e4m3f16");
  const auto p16 = problem({4096, 8192, 32768}, "f16");
  auto with = [&](FamilyConfig c, const std::map<std::string, std::string>& changes) {
    for (const auto& [k, v] : changes) c[k] = v;
    return c;
  };
  const auto base = f.default_config(problem({4096, 8192, 8192}, "e4m3f16"));
  const FamilyConfig co128x256 = with(base, {{"BM", "128"}, {"BN", "256"}, {"PROMOTE", "0"}, {"PROMOTE_SUB", "0"},
                                             {"MMA_DEPTH", "1"}, {"PINGPONG", "0"}, {"CONSUMERS", "2"}});
  ASSERT_FALSE(f.violation(co128x256, p8)) << *f.violation(co128x256, p8);
  const std::vector<std::tuple<FamilyConfig, FamilyProblem, std::string>> cases = {
      {with(co128x256, {{"PROMOTE", "1"}}), p8, "accumulators"},  // 2 x 128
      {with(co128x256, {{"META", "0"}, {"PROMOTE", "1"}, {"PROMOTE_SUB", "1"}, {"MMA_DEPTH", "0"}}), p8,
       "accumulators"},  // 128 + 64 beside per-WGMMA metadata loads (limit 160)
      {with(co128x256, {{"BM", "256"}, {"BN", "128"}, {"PROMOTE", "1"}, {"PROMOTE_SUB", "1"}, {"MMA_DEPTH", "0"}}), p8,
       "one m64 atom"},
      {with(co128x256, {{"PROMOTE", "2"}, {"PROMOTE_SUB", "1"}, {"MMA_DEPTH", "0"}}), p8, "PROMOTE=1"},
      {with(co128x256, {{"PROMOTE", "1"}, {"PROMOTE_SUB", "1"}}), p8, "MMA_DEPTH=0"},
      {with(co128x256, {{"BN", "160"}, {"PROMOTE", "1"}, {"PROMOTE_SUB", "1"}, {"MMA_DEPTH", "0"}}), p8,
       "multiple of 32"},
      {with(co128x256, {{"BM", "64"}, {"CONSUMERS", "1"}, {"PROMOTE", "1"}, {"PROMOTE_SUB", "1"}, {"MMA_DEPTH", "0"}}),
       p8, "CONSUMERS=2"},
      {with(co128x256, {{"BK", "64"}, {"BN", "128"}, {"PROMOTE", "2"}}), p16, "e4m3"},
  };
  for (const auto& [c, p, needle] : cases) {
    auto why = f.violation(c, p);
    ASSERT_TRUE(why) << config_to_json(c).dump();
    EXPECT_NE(why->find(needle), std::string::npos) << *why;
  }
  EXPECT_FALSE(f.violation(with(co128x256, {{"PROMOTE", "1"}, {"PROMOTE_SUB", "1"}, {"MMA_DEPTH", "0"}}), p8));
  EXPECT_FALSE(f.violation(with(co128x256, {{"BN", "192"}, {"PROMOTE", "4"}}), p8));
  // A configuration recorded before promotion existed reads as PROMOTE=0, PROMOTE_SUB=0.
  FamilyConfig old = co128x256;
  old.erase("PROMOTE");
  old.erase("PROMOTE_SUB");
  EXPECT_TRUE(f.violation(old, p8));
  EXPECT_EQ(with_recorded_defaults(f, old), co128x256);
}

// Rendering: the promotion macros reach the template.
TEST(HopperGemmSpFamily, RenderedPromotionMacros) {
  HopperGemmSpFamily f;
  const auto p = problem({4096, 8192, 32768}, "e4m3f16");
  const auto c = f.default_config(p);
  const std::string src = f.render_source(c, p);
  EXPECT_NE(src.find("#define CROQ_PROMOTE " + c.at("PROMOTE") + "\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_PROMOTE_SUB " + c.at("PROMOTE_SUB") + "\n"), std::string::npos);
}

TEST(HopperGemmSpFamily, AlternativesAreLegalDistinctArchetypes) {
  HopperGemmSpFamily f;
  std::set<std::string> names;
  for (const auto& s : f.params()) names.insert(s.name);
  for (const auto& s : k_typical)
    for (const auto& dt : k_dtypes) {
      auto p = problem(s, dt);
      const auto def = f.default_config(p);
      auto alts = f.alternatives(p);
      SCOPED_TRACE(fmt::format("{}x{}x{} {}", s.m, s.n, s.k, dt));
      EXPECT_GE(alts.size(), 2u);
      EXPECT_LE(alts.size(), 7u);
      std::set<std::string> seen;
      for (const auto& a : alts) {
        EXPECT_FALSE(a.name.empty());
        EXPECT_FALSE(a.tag.empty());
        auto why = f.violation(a.config, p);
        EXPECT_FALSE(why) << a.name << ": " << why.value_or("");
        if (!why) expect_invariants(a.config, p);
        EXPECT_NE(a.config, def) << a.name;
        EXPECT_TRUE(seen.insert(config_to_json(a.config).dump()).second) << "duplicate " << a.name;
        std::set<std::string> keys;
        for (const auto& [k, v] : a.config) keys.insert(k);
        EXPECT_EQ(keys, names) << a.name;
      }
    }
  auto offered = [](const std::vector<Alternative>& alts, const std::map<std::string, std::string>& want) {
    return std::any_of(alts.begin(), alts.end(), [&](const Alternative& a) {
      return std::all_of(want.begin(), want.end(), [&](const auto& kv) { return a.config.at(kv.first) == kv.second; });
    });
  };
  // The reference shape is offered the other cooperative tiles, the register epilogue without a
  // WGMMA group in flight, and the ping-pong kernels.
  auto ref = f.alternatives(problem({4096, 8192, 8192}, "f16"));
  EXPECT_TRUE(offered(ref, {{"BM", "256"}, {"BN", "192"}, {"CLUSTER_M", "2"}, {"EPILOGUE", "1"}}));
  EXPECT_TRUE(offered(ref, {{"BM", "256"}, {"BN", "128"}, {"CLUSTER_M", "2"}}));
  EXPECT_TRUE(offered(ref, {{"BM", "128"}, {"BN", "256"}, {"EPILOGUE", "2"}, {"MMA_DEPTH", "0"}}));
  EXPECT_TRUE(offered(ref, {{"BM", "128"}, {"BN", "192"}, {"PINGPONG", "1"}}));
  // A small problem is offered other tiles, split-K and the deep 128x64 pipeline.
  auto small = f.alternatives(problem({1024, 1024, 4096}, "e4m3f16"));
  EXPECT_TRUE(offered(small, {{"BN", "64"}, {"STAGES", "8"}}));
}

// SPLIT_TAIL: the template splits only the tiles of the partly filled last wave, and only when
// their slices end sooner than whole tiles; the family mirrors that choice, refuses the tail
// without split-K and decides promotion on the whole tiles' K.
TEST(HopperGemmSpFamily, SplitTailSplitsOnlyThePartlyFilledLastWave) {
  using F = HopperGemmSpFamily;
  // 4096x8192x8192 in 2x1 clusters of 128x256 tiles: 512 units on 66 clusters, the last 50 split.
  EXPECT_EQ(F::tail_dp_units(512, 5, 66), 462);
  EXPECT_EQ(F::tail_dp_units(512, 4, 66), 512);  // 200 slices on 66: 4 rounds of 1/4, no gain
  EXPECT_EQ(F::tail_dp_units(512, 1, 66), 0);    // no split at all
  EXPECT_EQ(F::tail_dp_units(528, 5, 66), 528);  // full waves
  EXPECT_EQ(F::tail_dp_units(60, 3, 66), 0);     // one wave or less: every unit split
  EXPECT_EQ(F::tail_dp_units(140, 2, 132), 132); // r = 8 and r + P = 140 save the same: the shorter tail
  EXPECT_EQ(F::tail_dp_units(200, 3, 66), 198);  // r = 2: 6 slices in 1/3 of a tile time, saving 2/3
  HopperGemmSpFamily f;
  const auto p = problem({4096, 8192, 8192}, "f16");
  FamilyConfig c = f.default_config(p);
  ASSERT_EQ(c.at("SPLIT_TAIL"), "0");
  c["SPLIT_TAIL"] = "1";
  c["SPLIT_K"] = "1";
  auto why = f.violation(c, p);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("SPLIT_TAIL=1"), std::string::npos) << *why;
  c["SPLIT_K"] = "5";
  EXPECT_FALSE(f.violation(c, p)) << f.violation(c, p).value_or("");
  // Promotion follows the longest k range a tile accumulates: the whole K before a split tail.
  const auto longk = problem({4096, 8192, 32768}, "e4m3f16");
  FamilyConfig e = f.default_config(problem({4096, 8192, 8192}, "e4m3f16"));
  e["SPLIT_K"] = "4";
  EXPECT_EQ(F::shortest_split(e, longk), 4);
  EXPECT_FALSE(F::needs_promotion(longk, F::shortest_split(e, longk)));  // slices of 8192
  e["SPLIT_TAIL"] = "1";
  EXPECT_EQ(F::shortest_split(e, longk), 1);
  EXPECT_TRUE(F::needs_promotion(longk, F::shortest_split(e, longk)));  // whole tiles of 32768
  // Measured slower on the H200 at 4096x8192x8192 (docs/results/gemm-sp-tail-h200.md): the search
  // may step to it, but it is not offered as an alternative.
  for (const auto& a : f.alternatives(p)) EXPECT_EQ(a.config.at("SPLIT_TAIL"), "0") << a.name;
}

// Every configuration of the space is either legal and within the hardware's limits, or refused
// with a reason; both happen. Held: the tile order, the depth of the MMA queue and persistence
// (they decide no legality but split-K's), CLUSTER_N (as CLUSTER_M), split-K at 1 and 2, stages
// at 2, 5 and 8 (the smallest, the usual, the largest), promotion off (and for e4m3 on, the whole
// tile).
TEST(HopperGemmSpFamily, EveryConfigurationIsLegalOrRefusedWithAReason) {
  HopperGemmSpFamily f;
  for (const auto& [s, dt] : std::vector<std::pair<Shape, std::string>>{
           {{4096, 8192, 8192}, "f16"}, {{1000, 3000, 2048}, "e4m3f16"}, {{512, 96, 520}, "f16f32"}}) {
    const auto p = problem(s, dt);
    long long legal = 0, refused = 0;
    for_each_config(
        f,
        [&](const FamilyConfig& c) {
          auto why = f.violation(c, p);
          if (why) {
            ++refused;
            EXPECT_FALSE(why->empty());
          } else {
            ++legal;
            expect_invariants(c, p);
          }
        },
        {{"RASTER", {"1"}},
         {"GROUP", {"8"}},
         {"MMA_DEPTH", {"1"}},
         {"PERSISTENT", {"1"}},
         {"CLUSTER_N", {"1"}},
         {"SPLIT_K", {"1", "2"}},
         {"STAGES", {"2", "5", "8"}},
         {"PROMOTE", dt == "e4m3f16" ? std::vector<std::string>{"0", "1"} : std::vector<std::string>{"0"}},
         {"PROMOTE_SUB", {"0"}}});  // (per sub-tile: the defaults and alternatives above, and the refusals)
    EXPECT_GT(legal, 500) << dt;
    EXPECT_GT(refused, 500) << dt;
  }
}

TEST(HopperGemmSpFamily, RefusesImpossibleConfigurationsSayingWhy) {
  HopperGemmSpFamily f;
  const auto p = problem({4096, 8192, 8192}, "f16");
  const auto base = f.default_config(problem({16384, 8192, 8192}, "f16"));  // cooperative 256 x 192
  ASSERT_FALSE(f.violation(base, p));
  auto with = [&](std::map<std::string, std::string> changes) {
    FamilyConfig c = base;
    for (auto& [k, v] : changes) c[k] = v;
    return c;
  };
  struct Case {
    FamilyConfig c;
    FamilyProblem p;
    const char* says;
  };
  FamilyProblem dense = p;
  dense.op = "matmul";
  FamilyProblem ampere = p;
  ampere.arch = "sm_80";
  FamilyProblem odd_k = p;
  odd_k.k = 1004;
  FamilyProblem tiny = problem({100, 100, 64}, "f16");
  FamilyProblem e4m3 = problem({4096, 8192, 8192}, "e4m3f16");
  FamilyProblem f32out = problem({4096, 8192, 8192}, "f16f32");
  FamilyConfig unknown = base;
  unknown["UNROLL"] = "2";
  FamilyConfig missing = base;
  missing.erase("META");
  const std::vector<Case> cases = {
      {base, dense, "gemm_sp"},
      {base, ampere, "sm_90a"},
      {base, odd_k, "multiple of 8"},
      {unknown, p, "unknown parameter UNROLL"},
      {missing, p, "META is missing"},
      {with({{"STAGES", "8"}}), p, "shared memory"},
      {with({{"BN", "256"}}), p, "accumulators"},
      {with({{"BK", "128"}, {"STAGES", "2"}}), p, "accumulators"},  // 16-bit, BK 128, metadata in registers
      {with({{"SPLIT_K", "2"}}), p, "accumulators"},
      {with({{"PINGPONG", "1"}, {"CONSUMERS", "1"}, {"BM", "128"}}), p, "CONSUMERS=2"},
      {with({{"BM", "192"}}), p, "cannot be split"},
      {with({{"SWIZZLE_A", "128"}}), p, "SWIZZLE_A=128 is wider"},
      {with({{"SWIZZLE_A", "32"}, {"SWIZZLE_B", "128"}, {"BK", "64"}}), e4m3, "SWIZZLE_B=128 is wider"},
      {with({{"EPILOGUE", "2"}}), f32out, "EPILOGUE=2"},
      {with({{"BN", "128"}, {"SPLIT_K", "2"}, {"PERSISTENT", "0"}}), p, "PERSISTENT=1"},
      {with({{"BN", "128"}, {"SPLIT_K", "8"}}), problem({4096, 8192, 256}, "f16"), "exceeds the 4 k blocks"},
      {with({{"BM", "128"}, {"BN", "128"}, {"CLUSTER_M", "2"}}), tiny, "CLUSTER_M=2 exceeds"},
  };
  for (const auto& c : cases) {
    auto why = f.violation(c.c, c.p);
    ASSERT_TRUE(why) << c.says;
    EXPECT_NE(why->find(c.says), std::string::npos) << *why;
  }
}

TEST(HopperGemmSpFamily, SharedMemoryAndAccumulatorsFollowTheDtype) {
  HopperGemmSpFamily f;
  FamilyConfig c = f.default_config(problem({16384, 8192, 8192}, "f16"));  // cooperative 256 x 192
  c["STAGES"] = "4";
  c["BK"] = "128";
  c["META"] = "1";
  c["EPILOGUE"] = "2";
  // 16-bit: A 256 x 64 x 2, B 192 x 128 x 2, metadata 4 x 2 x 512 per stage; e4m3 half the operands;
  // barriers; the two consumers' metadata keep-alive slots (2 x 128 threads x 16 bytes).
  EXPECT_EQ(HopperGemmSpFamily::smem_bytes(c, 2), 1024 + 4 * (32768 + 49152 + 4096) + 128 + 4096);
  EXPECT_EQ(HopperGemmSpFamily::smem_bytes(c, 1), 1024 + 4 * (16384 + 24576 + 4096) + 128 + 4096);
  c["META"] = "2";
  EXPECT_EQ(HopperGemmSpFamily::smem_bytes(c, 1), 1024 + 4 * (16384 + 24576) + 128 + 4096);
  c["EPILOGUE"] = "1";  // two 8 KiB TMA-store slots per consumer
  EXPECT_EQ(HopperGemmSpFamily::smem_bytes(c, 1), 1024 + 4 * (16384 + 24576) + 128 + 4096 + 32768);
  EXPECT_EQ(HopperGemmSpFamily::accumulator_registers(c), 192);
  // The same tile: legal for e4m3 (two k64 steps per stage), not for f16 at BK 128 (four k32
  // steps' metadata words held beside 192 accumulators spill).
  c["META"] = "1";
  EXPECT_FALSE(f.violation(c, problem({4096, 8192, 8192}, "e4m3f16")))
      << f.violation(c, problem({4096, 8192, 8192}, "e4m3f16")).value_or("");
  EXPECT_TRUE(f.violation(c, problem({4096, 8192, 8192}, "f16")));
  EXPECT_EQ(HopperGemmSpFamily::dtype_bit(parse_dtype_pair_or_throw("f16f32")), 1);
  EXPECT_EQ(HopperGemmSpFamily::dtype_bit(parse_dtype_pair_or_throw("f16")), 2);
  EXPECT_EQ(HopperGemmSpFamily::dtype_bit(parse_dtype_pair_or_throw("e4m3")), 16);
  EXPECT_EQ(HopperGemmSpFamily::dtype_bit(parse_dtype_pair_or_throw("f32")), 0);
}

TEST(HopperGemmSpFamily, RenderedSourceCarriesTheConfigurationAndTheTemplate) {
  HopperGemmSpFamily f;
  const auto p = problem({4096, 8192, 8192}, "e4m3f16");
  const auto c = f.default_config(p);
  const std::string src = f.render_source(c, p);
  EXPECT_NE(src.find("hopper_gemm_sp configuration for gemm_sp 4096x8192x8192 e4m3f16 (B col)"), std::string::npos);
  for (const auto& [k, v] : c) EXPECT_NE(src.find(fmt::format("#define CROQ_{} {}\n", k, v)), std::string::npos) << k;
  EXPECT_NE(src.find("#define CROQ_DTYPES 16\n"), std::string::npos);
  EXPECT_NE(src.find("#line 1 \"gemm_sp_sm90.cu\""), std::string::npos);
  EXPECT_NE(src.find("wgmma.mma_async.sp"), std::string::npos);
  EXPECT_NE(src.find("croq_gemm_prepare"), std::string::npos);
  const auto flags = f.build_flags(c, p);
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-gencode=arch=compute_90a,code=sm_90a"), flags.end());
}

// What the GPU test verifies on the H200 (tests/gpu/gemm_sp_family_gpu_test.cpp) is checked here on
// every run: each configuration legal for its odd shape, and every case covering what it promises.
TEST(HopperGemmSpFamily, TheGpuTestsSampleIsLegalAndCoversTheFamily) {
  HopperGemmSpFamily f;
  std::mt19937 rng(20261201);
  const auto cases = test::hopper_sp_gpu_cases();
  size_t total = 0;
  std::set<std::string> dtypes;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const auto p = test::hopper_sp_gpu_problem(cases[ci]);
    SCOPED_TRACE(fmt::format("case {}: {}x{}x{} {}", ci, p.m, p.n, p.k, cases[ci].dtype));
    EXPECT_TRUE(p.m % 64 != 0 || p.n % 64 != 0);  // not a multiple of any tile
    const auto sample = test::hopper_sp_gpu_sample(f, p, rng, ci);
    std::set<int> metas;
    bool deep = false, wide_co = false, wide_pp = false, split = false, cluster = false, one = false, tma = false;
    bool whole = false, sub = false, every2 = false, tail = false;
    for (const auto& c : sample) {
      auto why = f.violation(c, p);
      EXPECT_FALSE(why) << config_to_json(c).dump() << ": " << why.value_or("");
      if (why) continue;
      expect_invariants(c, p);
      metas.insert(iv(c, "META"));
      deep |= iv(c, "STAGES") >= 7;
      wide_co |= iv(c, "PINGPONG") == 0 && HopperGemmSpFamily::accumulator_registers(c) == 192;
      wide_pp |= iv(c, "PINGPONG") == 1 && HopperGemmSpFamily::accumulator_registers(c) == 192;
      split |= iv(c, "SPLIT_K") > 1 && iv(c, "SPLIT_TAIL") == 0;
      // the tail really splits on this shape (not every tile, not none)
      if (iv(c, "SPLIT_K") > 1 && iv(c, "SPLIT_TAIL") == 1) {
        const int cs = iv(c, "CLUSTER_M") * iv(c, "CLUSTER_N");
        const long long units = ((p.m + iv(c, "BM") - 1) / iv(c, "BM") + iv(c, "CLUSTER_M") - 1) / iv(c, "CLUSTER_M") *
                                (((p.n + iv(c, "BN") - 1) / iv(c, "BN") + iv(c, "CLUSTER_N") - 1) / iv(c, "CLUSTER_N"));
        const int dp = HopperGemmSpFamily::tail_dp_units(static_cast<int>(units), iv(c, "SPLIT_K"), 132 / cs);
        tail |= dp > 0 && dp < units;
      }
      cluster |= iv(c, "CLUSTER_M") * iv(c, "CLUSTER_N") > 1;
      one |= iv(c, "CONSUMERS") == 1;
      tma |= iv(c, "EPILOGUE") == 1;
      whole |= iv(c, "PROMOTE") == 1 && iv(c, "PROMOTE_SUB") == 0 && iv(c, "MMA_DEPTH") == 1;
      sub |= iv(c, "PROMOTE_SUB") == 1;
      every2 |= iv(c, "PROMOTE") == 2;
    }
    if (p.dtype.input == ScalarType::e4m3) {
      EXPECT_TRUE(whole && sub && every2) << whole << sub << every2;
    }
    EXPECT_EQ(metas.size(), 3u);
    EXPECT_TRUE(deep && wide_co && wide_pp && split && cluster && one && tma);
    // a split tail on the shapes with more than a wave of 128x128 tiles (not 777x1000)
    if (p.m * p.n > 132LL * 128 * 128) {
      EXPECT_TRUE(tail);
    }
    EXPECT_GE(sample.size(), 9u);
    total += sample.size();
    dtypes.insert(cases[ci].dtype);
  }
  EXPECT_GE(total, 45u);
  EXPECT_TRUE(dtypes.count("f16") && dtypes.count("e4m3f16") && dtypes.count("f16f32"));
}

// The configurations bench/gpu/gemm_sp_kernels.sh builds by hand (bench/gpu/gemm_sp_configs.txt) are
// legal for the reference shape in each dtype they are built for.
TEST(HopperGemmSpFamily, BenchScriptConfigurationsAreLegal) {
  HopperGemmSpFamily f;
  std::ifstream in(find_project_dir("bench") / "gpu" / "gemm_sp_configs.txt");
  ASSERT_TRUE(in.good());
  FamilyConfig base;
  std::string line;
  int checked = 0;
  const std::map<std::string, std::string> dtype_token = {{"f16", "f16"},       {"f16f32", "f16f32"},
                                                          {"e4m3", "e4m3f16"}, {"bf16", "bf16"},
                                                          {"e4m3bf16", "e4m3bf16"}};
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream ls(line);
    std::string name, dtypes, kv;
    if (!(ls >> name >> dtypes)) continue;
    FamilyConfig c = base;
    while (ls >> kv) {
      const auto eq = kv.find('=');
      ASSERT_NE(eq, std::string::npos) << line;
      if (name != "BASE") {
        ASSERT_TRUE(base.count(kv.substr(0, eq))) << name << ": " << kv;
      }
      c[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (name == "BASE") {
      base = c;
      continue;
    }
    std::stringstream ds(dtypes);
    std::string dt;
    while (std::getline(ds, dt, ',')) {
      ASSERT_TRUE(dtype_token.count(dt)) << name << ": " << dt;
      // Each at its largest timed shape; the small-problem ones at 1024x1024x4096.
      const Shape s = name.find("_s2") != std::string::npos || name.find("c1_") != std::string::npos ||
                              name.find("x64_") != std::string::npos
                          ? Shape{1024, 1024, 4096}
                          : Shape{4096, 8192, 8192};
      const auto p = problem(s, dtype_token.at(dt));
      // The list's swizzles are upper bounds, clamped to the tile rows as the template does.
      FamilyConfig clamped = c;
      const int es = HopperGemmSpFamily::input_bytes(p.dtype), bk = std::stoi(c.at("BK"));
      clamped["SWIZZLE_A"] = std::to_string(std::min(std::stoi(c.at("SWIZZLE_A")), bk / 2 * es));
      clamped["SWIZZLE_B"] = std::to_string(std::min(std::stoi(c.at("SWIZZLE_B")), bk * es));
      // (the lists predate SPLIT_TAIL: read as the records of that time are)
      auto why = f.violation(with_recorded_defaults(f, clamped), p);
      EXPECT_FALSE(why) << name << " " << dt << ": " << why.value_or("");
      ++checked;
    }
  }
  EXPECT_GE(checked, 30);
}

// bench/gpu/gemm_sp_promote.sh's configurations (COMMON plus each line's macros) are legal for e4m3
// at its shapes, and its promoted 128x256 is the family's default there, so the script measures the
// kernel croq starts from.
TEST(HopperGemmSpFamily, PromoteScriptConfigurationsAreLegalAndHoldTheDefault) {
  HopperGemmSpFamily f;
  std::ifstream in(find_project_dir("bench") / "gpu" / "gemm_sp_promote.sh");
  ASSERT_TRUE(in.good());
  std::string line, common;
  std::map<std::string, FamilyConfig> configs;
  bool inside = false;
  auto parse = [](const std::string& text, FamilyConfig& c) {
    std::istringstream ls(text);
    std::string kv;
    while (ls >> kv) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos) c[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  };
  while (std::getline(in, line)) {
    if (line.rfind("COMMON=\"", 0) == 0) common = line.substr(8, line.size() - 9);
    if (line == "CONFIGS=\"") {
      inside = true;
      continue;
    }
    if (inside && line == "\"") break;
    if (!inside || line.empty()) continue;
    const auto bar = line.find('|');
    ASSERT_NE(bar, std::string::npos) << line;
    FamilyConfig c;
    parse(common, c);
    parse(line.substr(bar + 1), c);
    configs[line.substr(0, bar)] = with_recorded_defaults(f, c);  // the script predates SPLIT_TAIL
  }
  ASSERT_GE(configs.size(), 5u);
  for (const Shape s : {Shape{4096, 8192, 32768}, Shape{4096, 8192, 8192}}) {
    const auto p = problem(s, "e4m3f16");
    for (const auto& [name, c] : configs) {
      auto why = f.violation(c, p);
      EXPECT_FALSE(why) << name << ": " << why.value_or("");
    }
    // Promoted at K = 32768 (its k slices need it: the whole 128 x 192 tile every 4 k blocks), the
    // unpromoted 256 x 192 at K = 8192.
    EXPECT_EQ(configs.at(s.k > HopperGemmSpFamily::k_promote_above_k ? "co128x192_whole4" : "co256x192_plain"),
              f.default_config(p));
  }
}

}  // namespace
}  // namespace croq
