// The croqtile_gemm kernel family without the compiler: its parameter space, the constraint
// checker over every configuration the search can produce (checked against the hardware's and the
// kernel's rules computed here), defaults and alternatives for the seeds' typical shapes,
// rendering and the choreo flags. That the rendered sources compile with the pinned choreo and
// nvcc is tested in tests/choreo (label choreo, run where the toolchain is installed).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "croq/search/croqtile_gemm_family.hpp"
#include "croq/search/family.hpp"
#include "croq/search/gemm_family_common.hpp"
#include "croq/search/tune.hpp"
#include "croq/util/error.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/family_walk.hpp"

namespace croq {
namespace {

using test::for_each_config;

struct Shape {
  int64_t m, n, k;
};

// The seeds' 14 typical shapes and the two large squares.
const std::vector<Shape> k_typical = {
    {768, 768, 768},    {12288, 12288, 12288}, {512, 8192, 8192},   {16384, 8192, 8192}, {4096, 1024, 8192},
    {4096, 32768, 8192}, {4096, 8192, 512},     {4096, 8192, 32768}, {1024, 1024, 4096},  {12288, 12288, 4096},
    {1024, 8192, 1024}, {12288, 8192, 12288},  {4096, 1024, 1024},  {12288, 4096, 4096}, {4096, 4096, 4096},
    {8192, 8192, 8192}};

FamilyProblem problem(Shape s, const std::string& dtype = "f16f32", const std::string& arch = "sm_90a") {
  FamilyProblem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.dtype = parse_dtype_pair_or_throw(dtype);
  p.arch = arch;
  return p;
}

int iv(const FamilyConfig& c, const char* name) { return gemm::int_param(c, name).value(); }

// What a legal configuration must satisfy, from the hardware's and the kernel's rules.
void expect_invariants(const FamilyConfig& c, const FamilyProblem& p) {
  const int wn = iv(c, "WARP_N"), consumers = iv(c, "CONSUMERS"), tk = iv(c, "TILE_K"), stages = iv(c, "STAGES");
  const int sw = iv(c, "SWIZ"), tile_m = 64 * consumers;
  const std::string what = config_to_json(c).dump();
  // The kernel computes multiples of its tile (croq_shape_ok): a legal configuration never refuses.
  EXPECT_EQ(p.m % tile_m, 0) << what;
  EXPECT_EQ(p.n % wn, 0) << what;
  EXPECT_EQ(p.k % tk, 0) << what;
  // WGMMA: N a multiple of 8 up to 256; a TMA box row of TILE_K 16-bit elements holds the swizzle.
  EXPECT_TRUE(wn % 8 == 0 && wn <= 256) << what;
  EXPECT_LE(sw, tk * 2) << what;
  // Registers: 64 x WARP_N f32 accumulators over 128 threads, within what ptxas gives a thread of
  // a (consumers + 1)-warpgroup kernel (248 for 256 threads, 168 for 384, 128 for 512), less ~40
  // for addressing.
  // One consumer's block is launched two to a SM (128 registers) where its ring fits twice in the
  // 228 KB choreo counts.
  const int acc = 64 * wn / 128;
  const long long ring = static_cast<long long>(stages) * (tile_m + wn) * tk * 2;
  const int regs = consumers == 1 ? (2 * ring <= 228 * 1024 ? 128 : 248) : consumers == 2 ? 168 : 128;
  EXPECT_LE(acc, regs - 40) << what;
  // Shared memory: the ring and the epilogue tile, under the 227 KB a block may use.
  const long long out = p.dtype.output == ScalarType::f32 ? 4 : 2;
  long long smem = static_cast<long long>(stages) * (tile_m + wn) * tk * 2;
  if (iv(c, "EPILOGUE") == 1) smem += static_cast<long long>(tile_m) * wn * out;
  if (iv(c, "EPILOGUE") == 2) smem += static_cast<long long>(tile_m) * (wn / 2) * out;  // one half at a time
  EXPECT_LE(smem, 227 * 1024) << what;
  // Two accumulators of WARP_N/2 columns through the pairs of K slices.
  if (iv(c, "EPILOGUE") == 2) {
    EXPECT_EQ(iv(c, "MMA_DEPTH"), 1) << what;
    EXPECT_EQ(iv(c, "MMA_RUN"), 2) << what;
    EXPECT_EQ(wn % 64, 0) << what;
  }
  // The block's TMA store runs after the warpgroups: one tile per block.
  if (iv(c, "EPILOGUE") == 1) {
    EXPECT_EQ(iv(c, "PERSISTENT"), 0) << what;
  }
  // Depth 1 takes the K slices in runs of MMA_RUN (2: pairs); MMA_RUN means nothing at depth 0.
  if (iv(c, "MMA_DEPTH") == 1) {
    EXPECT_EQ((p.k / tk) % iv(c, "MMA_RUN"), 0) << what;
  } else {
    EXPECT_EQ(iv(c, "MMA_RUN"), 2) << what;
  }
  // --stmatrix=false changes the shared-memory store only: a duplicate of STMATRIX=1 otherwise.
  if (iv(c, "STMATRIX") == 0) {
    EXPECT_NE(iv(c, "EPILOGUE"), 0) << what;
  }
  // setmaxnreg.inc takes registers from the block's own pool (threads x the registers they were
  // launched with: 168 for 384 threads, 128 for 512, and 128 for 256 where choreo asks for two blocks
  // a SM): the producer's and the consumers' targets must fit, or the consumers wait for ever.
  if (iv(c, "REGCTRL") == 1) {
    EXPECT_GE(consumers, 2) << what;
    const auto [producer, consumer] = CroqtileGemmFamily::regctrl_targets(consumers);
    const int launched = consumers == 1 ? 128 : consumers == 2 ? 168 : 128;
    EXPECT_LE(128 * producer + 128 * consumers * consumer, 128 * (consumers + 1) * launched) << what;
    EXPECT_GT(consumer, launched) << what;
  }
}

TEST(CroqtileFamily, IsRegisteredForTheCroqtileDsl) {
  auto f = find_family("croqtile_gemm");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->dsl(), "croqtile");
  // `croq tune --dsl croqtile` finds it (it used to answer "no kernel family of dsl croqtile").
  auto chosen = choose_family("", "croqtile", problem({4096, 4096, 4096}));
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(chosen->name(), "croqtile_gemm");
  EXPECT_EQ(choose_family("", "croqtile", problem({4096, 4096, 4096}, "bf16f32"))->name(), "croqtile_gemm");
}

TEST(CroqtileFamily, SupportsHopperSixteenBitMatmulOnly) {
  CroqtileGemmFamily f;
  EXPECT_TRUE(f.supports(problem({4096, 4096, 4096})));
  EXPECT_TRUE(f.supports(problem({4096, 4096, 4096}, "bf16")));
  EXPECT_FALSE(f.supports(problem({4096, 4096, 4096}, "f16f32", "sm_80")));
  EXPECT_FALSE(f.supports(problem({4096, 4096, 4096}, "e4m3f16")));
  EXPECT_FALSE(f.supports(problem({4096, 4096, 4096}, "f32")));
  EXPECT_FALSE(f.supports(problem({1000, 3000, 2048})));  // no tile divides M
  FamilyProblem sp = problem({4096, 8192, 8192});
  sp.op = "gemm_sp";
  EXPECT_FALSE(f.supports(sp));
}

TEST(CroqtileFamily, EveryConfigurationIsRefusedOrMeetsTheRules) {
  CroqtileGemmFamily f;
  for (auto [s, dtype] : {std::pair{Shape{4096, 4096, 4096}, "f16f32"}, std::pair{Shape{768, 768, 768}, "bf16"}}) {
    {
      FamilyProblem p = problem(s, dtype);
      int legal = 0, total = 0;
      for_each_config(f, [&](const FamilyConfig& c) {
        ++total;
        if (!f.violation(c, p)) {
          ++legal;
          expect_invariants(c, p);
        }
      });
      EXPECT_GT(legal, 100) << s.m << "x" << s.n << "x" << s.k << " " << dtype;
      EXPECT_LT(legal, total);
    }
  }
}

TEST(CroqtileFamily, RefusesWhatCannotBuildOrRun) {
  CroqtileGemmFamily f;
  FamilyProblem p = problem({4096, 4096, 4096});
  FamilyConfig base = f.default_config(p);
  ASSERT_FALSE(f.violation(base, p));
  auto with = [&](std::initializer_list<std::pair<const char*, const char*>> kv) {
    FamilyConfig c = base;
    for (auto [k, v] : kv) c[k] = v;
    return f.violation(c, p);
  };
  auto says = [](const std::optional<std::string>& why, const std::string& part) {
    return why && why->find(part) != std::string::npos;
  };
  EXPECT_TRUE(says(with({{"TILE_K", "32"}, {"SWIZ", "128"}}), "SWIZ=128"));
  EXPECT_TRUE(says(with({{"CONSUMERS", "3"}}), "M=4096 is not a multiple"));  // 192-row tiles
  {
    FamilyProblem big = problem({12288, 12288, 12288});
    FamilyConfig c3 = f.default_config(big);
    c3["CONSUMERS"] = "3";
    c3["WARP_N"] = "256";
    EXPECT_TRUE(says(f.violation(c3, big), "spill"));
    c3["WARP_N"] = "128";
    c3["STAGES"] = "4";
    EXPECT_FALSE(f.violation(c3, big)) << *f.violation(c3, big);
  }
  EXPECT_TRUE(says(with({{"STAGES", "5"}, {"WARP_N", "256"}, {"CONSUMERS", "2"}}), "shared memory"));
  EXPECT_TRUE(says(with({{"EPILOGUE", "1"}, {"STAGES", "4"}}), "shared memory"));  // + a 128 KB f32 tile
  EXPECT_FALSE(with({{"EPILOGUE", "1"}, {"STAGES", "2"}, {"WARP_N", "128"}}));
  EXPECT_TRUE(says(with({{"EPILOGUE", "1"}, {"STAGES", "2"}, {"WARP_N", "128"}, {"PERSISTENT", "1"}}), "PERSISTENT=0"));
  EXPECT_TRUE(says(with({{"STMATRIX", "0"}, {"EPILOGUE", "0"}}), "EPILOGUE=1 or 2"));
  EXPECT_TRUE(says(with({{"WARP_N", "96"}}), "multiple of WARP_N"));
  EXPECT_EQ(base.at("MMA_DEPTH"), "1");  // 64 slices of 64: pairs
  FamilyProblem odd = problem({4096, 4096, 4032});  // 63 slices of 64
  FamilyConfig oc = f.default_config(odd);
  ASSERT_FALSE(f.violation(oc, odd)) << *f.violation(oc, odd);
  EXPECT_EQ(oc.at("MMA_DEPTH"), "0");
  oc["MMA_DEPTH"] = "1";
  EXPECT_TRUE(says(f.violation(oc, odd), "in pairs"));
  EXPECT_TRUE(says(with({{"WARP_N", "3"}}), "not one of"));
  FamilyConfig missing = base;
  missing.erase("STAGES");
  EXPECT_TRUE(says(f.violation(missing, p), "missing"));
  // Shape divisibility: 640 columns take no 256-wide tile.
  FamilyProblem q = problem({768, 640, 768});
  FamilyConfig c = f.default_config(q);
  ASSERT_FALSE(f.violation(c, q)) << *f.violation(c, q);
  c["WARP_N"] = "256";
  EXPECT_TRUE(says(f.violation(c, q), "N=640"));
  EXPECT_TRUE(says(f.violation(base, problem({4096, 4096, 4096}, "f16f32", "sm_86")), "sm_90a"));
}

TEST(CroqtileFamily, MmaRunFourDrainsOncePerFourSlicesAndIsASingleStepNotAnArchetype) {
  CroqtileGemmFamily f;
  FamilyProblem p = problem({4096, 4096, 4096});
  const FamilyConfig def = f.default_config(p);
  EXPECT_EQ(def.at("MMA_RUN"), "2");  // the measured default (0.815-0.825 / 0.90 x cuBLAS on the H200)
  FamilyConfig run4 = def;
  run4["MMA_RUN"] = "4";
  ASSERT_FALSE(f.violation(run4, p)) << *f.violation(run4, p);
  // Measured on the H200 as the first alternative: +0.1 % at 4096^3, -0.3 % at 8192^3. It stays in
  // the space (a single step of the search) but is no longer spent a round on before the archetypes.
  for (const auto& a : f.alternatives(p)) EXPECT_NE(a.config.at("MMA_RUN"), "4") << a.tag;
  auto says = [](const std::optional<std::string>& v, const std::string& what) {
    return v && v->find(what) != std::string::npos;
  };
  // Runs of four need K in multiples of 4 x TILE_K; at depth 0 the value would be a duplicate.
  FamilyProblem k66 = problem({4096, 4096, 4224});  // 66 slices of 64: pairs, not fours
  FamilyConfig c = f.default_config(k66);
  ASSERT_FALSE(f.violation(c, k66)) << *f.violation(c, k66);
  c["MMA_RUN"] = "4";
  EXPECT_TRUE(says(f.violation(c, k66), "runs of 4")) << f.violation(c, k66).value_or("legal");
  EXPECT_TRUE(says(f.violation(run4, problem({4096, 4096, 4224})), "runs of 4"));
  FamilyConfig shallow = run4;
  shallow["MMA_DEPTH"] = "0";
  EXPECT_TRUE(says(f.violation(shallow, p), "MMA_DEPTH=1"));
  for (auto& a : f.alternatives(k66)) EXPECT_NE(a.tag, "run4");
  // A configuration recorded before the parameter reads as 2 and renders the same kernel.
  FamilyConfig old = def;
  old.erase("MMA_RUN");
  EXPECT_EQ(with_recorded_defaults(f, old), def);
  EXPECT_NE(f.render_source(run4, p).find("#define CROQ_MMA_RUN 4\n"), std::string::npos);
  EXPECT_NE(f.render_source(old, p).find("#ifndef CROQ_MMA_RUN\n#define CROQ_MMA_RUN 2"), std::string::npos);
}

// EPILOGUE 2: the 128x256 f32 tile stored in two halves through one 64 KB buffer, which fits beside
// the ring where the whole tile (128 KB) does not; the first alternative of the large shapes.
// One consumer's kernel launches with 128 registers a thread (two blocks a SM): its block's pool
// cannot give the consumer the 232 setmaxnreg asks for, and the kernel hung on the H200 (768^3,
// round 1 of croqtile-h200.md's 14 shapes). REGCTRL=1 needs two or more consumers; the halves
// alternative of a one-consumer default goes without it.
TEST(CroqtileFamily, RegisterControlNeedsTwoConsumers) {
  CroqtileGemmFamily f;
  FamilyProblem p = problem({768, 768, 768});
  const FamilyConfig def = f.default_config(p);
  ASSERT_EQ(def.at("CONSUMERS"), "1");
  FamilyConfig c = def;
  c["REGCTRL"] = "1";
  auto v = f.violation(c, p);
  ASSERT_TRUE(v.has_value());
  EXPECT_NE(v->find("wait for ever"), std::string::npos) << *v;
  const auto alts = f.alternatives(p);
  auto h = std::find_if(alts.begin(), alts.end(), [](const Alternative& a) { return a.tag == "tma_halves"; });
  ASSERT_NE(h, alts.end());
  EXPECT_EQ(h->config.at("REGCTRL"), "0");
  EXPECT_EQ(h->config.at("EPILOGUE"), "2");
  EXPECT_FALSE(f.violation(h->config, p));
  FamilyProblem big = problem({4096, 4096, 4096});
  FamilyConfig two = f.default_config(big);
  ASSERT_EQ(two.at("CONSUMERS"), "2");
  two["REGCTRL"] = "1";
  EXPECT_FALSE(f.violation(two, big)) << *f.violation(two, big);
  two["CONSUMERS"] = "1";
  two["WARP_N"] = "128";
  ASSERT_TRUE(f.violation(two, big).has_value());
  EXPECT_NE(f.violation(two, big)->find("REGCTRL"), std::string::npos);
}

// choreo launches a one-consumer block two to a SM where its shared memory fits twice (128 registers
// a thread): 128 accumulators of WARP_N=256 do not fit there (ptxas: "Insufficient registers
// (128)"), and do with a ring long enough for one block a SM (248).
TEST(CroqtileFamily, OneConsumerOfAShortRingHasTheRegistersOfTwoBlocksASm) {
  CroqtileGemmFamily f;
  FamilyProblem p = problem({4096, 4096, 4096});
  FamilyConfig c = f.default_config(p);
  c["CONSUMERS"] = "1";
  c["WARP_N"] = "256";
  c["TILE_K"] = "32";
  c["SWIZ"] = "64";
  c["STAGES"] = "2";  // 2 x 320 x 32 x 2 = 40 KB: two blocks a SM
  c["REGCTRL"] = "0";
  c["EPILOGUE"] = "0";
  auto v = f.violation(c, p);
  ASSERT_TRUE(v.has_value());
  EXPECT_NE(v->find("two to a SM"), std::string::npos) << *v;
  c["TILE_K"] = "64";
  c["SWIZ"] = "128";
  c["STAGES"] = "3";  // 3 x 320 x 64 x 2 = 120 KB: one
  EXPECT_FALSE(f.violation(c, p)) << *f.violation(c, p);
  c["WARP_N"] = "128";  // 64 accumulators fit either way
  c["TILE_K"] = "32";
  c["SWIZ"] = "64";
  c["STAGES"] = "2";
  EXPECT_FALSE(f.violation(c, p)) << *f.violation(c, p);
}

TEST(CroqtileFamily, TheTwoHalfTmaEpilogueFitsBesideTheRingAndIsTheFirstAlternative) {
  CroqtileGemmFamily f;
  FamilyProblem p = problem({4096, 4096, 4096});
  FamilyConfig c = f.default_config(p);
  auto says = [](const std::optional<std::string>& v, const std::string& what) {
    return v && v->find(what) != std::string::npos;
  };
  c["PERSISTENT"] = "1";
  c["EPILOGUE"] = "2";
  c["STAGES"] = "4";  // 4 x 48 KB + 64 KB
  EXPECT_TRUE(says(f.violation(c, p), "epilogue's half tile")) << f.violation(c, p).value_or("legal");
  c["STAGES"] = "3";  // 3 x 48 KB + 64 KB = 208 KB
  EXPECT_FALSE(f.violation(c, p)) << *f.violation(c, p);
  EXPECT_EQ(CroqtileGemmFamily::smem_bytes(c, p), 3 * 49152 + 65536);
  c["EPILOGUE"] = "1";  // the whole tile: 128 KB
  EXPECT_TRUE(f.violation(c, p));
  c["EPILOGUE"] = "2";
  c["STMATRIX"] = "0";  // the plain shared-memory stores: legal with either shared-memory epilogue
  EXPECT_FALSE(f.violation(c, p)) << *f.violation(c, p);
  c["STMATRIX"] = "1";
  FamilyConfig shallow = c;
  shallow["MMA_DEPTH"] = "0";
  EXPECT_TRUE(says(f.violation(shallow, p), "MMA_DEPTH=1, MMA_RUN=2"));
  FamilyConfig run4 = c;
  run4["MMA_RUN"] = "4";
  EXPECT_TRUE(says(f.violation(run4, p), "MMA_RUN=2"));
  FamilyProblem n96 = problem({4096, 4032, 4096});  // 42 tiles of 96 columns
  FamilyConfig c96 = f.default_config(n96);
  c96["EPILOGUE"] = "2";
  c96["WARP_N"] = "96";
  c96["STAGES"] = "2";
  EXPECT_TRUE(says(f.violation(c96, n96), "multiple of 64")) << f.violation(c96, n96).value_or("legal");
  // The first alternative at 4096^3 and 8192^3: persistent, register control, the halves, the ring
  // in 6 slices of 32 (3 of 64 would be all that fit).
  for (Shape s : {Shape{4096, 4096, 4096}, Shape{8192, 8192, 8192}}) {
    const auto alts = f.alternatives(problem(s));
    ASSERT_FALSE(alts.empty());
    EXPECT_EQ(alts.front().tag, "tma_halves");
    const FamilyConfig& h = alts.front().config;
    EXPECT_EQ(h.at("EPILOGUE"), "2");
    EXPECT_EQ(h.at("PERSISTENT"), "1");
    EXPECT_EQ(h.at("REGCTRL"), "1");
    EXPECT_EQ(h.at("WARP_N"), "256");
    EXPECT_EQ(h.at("TILE_K"), "32");
    EXPECT_EQ(h.at("SWIZ"), "64");
    EXPECT_EQ(h.at("STAGES"), "6");
  }
  // A 16-bit output's half tile is 32 KB: four stages of 64 fit beside it.
  const auto alts16 = f.alternatives(problem({4096, 4096, 4096}, "f16"));
  auto h16 = std::find_if(alts16.begin(), alts16.end(), [](const Alternative& a) { return a.tag == "tma_halves"; });
  ASSERT_NE(h16, alts16.end());
  EXPECT_EQ(h16->config.at("TILE_K"), "64");
  EXPECT_EQ(h16->config.at("STAGES"), "4");
  // The template renders the halves: two accumulators, two TMA stores of half the tile, the event.
  const std::string src = f.render_source(f.alternatives(p).front().config, p);
  EXPECT_NE(src.find("#define CROQ_EPILOGUE 2\n"), std::string::npos);
  EXPECT_NE(src.find("shared CROQ_OUT_T [CROQ_TILE_M, CROQ_WARP_N / 2] out_h;"), std::string::npos);
  EXPECT_NE(src.find(".at(block_m, block_n * 2 + 1);"), std::string::npos);
}

TEST(CroqtileFamily, DefaultsAndAlternativesAreLegalForEveryTypicalShape) {
  CroqtileGemmFamily f;
  for (Shape s : k_typical) {
    for (const char* dtype : {"f16f32", "bf16f32", "f16"}) {
      FamilyProblem p = problem(s, dtype);
      ASSERT_TRUE(f.supports(p));
      FamilyConfig d = f.default_config(p);
      ASSERT_FALSE(f.violation(d, p)) << s.m << "x" << s.n << "x" << s.k << ": " << *f.violation(d, p);
      expect_invariants(d, p);
      std::set<std::string> seen{config_to_json(d).dump()};
      for (const auto& a : f.alternatives(p)) {
        EXPECT_FALSE(f.violation(a.config, p)) << a.name;
        EXPECT_TRUE(seen.insert(config_to_json(a.config).dump()).second) << "duplicate alternative " << a.name;
        EXPECT_FALSE(a.tag.empty());
      }
    }
  }
  // At 4096^3 the default is the bundled kernel's arrangement: 128x256 tiles, two consumers,
  // 64-deep stages, as many (4) as fit, a full wave of 512 tiles.
  FamilyConfig d = f.default_config(problem({4096, 4096, 4096}));
  EXPECT_EQ(d.at("WARP_N"), "256");
  EXPECT_EQ(d.at("CONSUMERS"), "2");
  EXPECT_EQ(d.at("TILE_K"), "64");
  EXPECT_EQ(d.at("STAGES"), "4");
  EXPECT_EQ(d.at("SWIZ"), "128");
  // A small problem gets smaller tiles: 768^3 has 18 128x256 tiles for 132 SMs.
  FamilyConfig small = f.default_config(problem({768, 768, 768}));
  EXPECT_LT(iv(small, "WARP_N") * iv(small, "CONSUMERS"), 512);
  EXPECT_FALSE(f.alternatives(problem({4096, 4096, 4096})).empty());
}

TEST(CroqtileFamily, RendersTheTemplateWithItsConfiguration) {
  CroqtileGemmFamily f;
  FamilyProblem p = problem({4096, 4096, 4096}, "bf16f32");
  FamilyConfig c = f.default_config(p);
  c["REGCTRL"] = "1";
  std::string src = f.render_source(c, p);
  EXPECT_NE(src.find("#define CROQ_IN_T bf16\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_OUT_T f32\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_WARP_N 256\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_CONSUMERS 2\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_REGCTRL 1\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_MMA_DEPTH 1\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_PRODUCER_REGS 40\n#define CROQ_CONSUMER_REGS 232\n"), std::string::npos);
  EXPECT_NE(src.find("#define CROQ_NUM_SMS 132\n"), std::string::npos);
  // The template itself: one __co__ matmul taking croq's stream, launched without a sync, and the
  // shape check croq's ABI wrapper calls.
  EXPECT_NE(src.find("__co__ void matmul(global CROQ_IN_T [M, K] lhs"), std::string::npos);
  EXPECT_NE(src.find("parallel.async<s>"), std::string::npos);
  EXPECT_NE(src.find("static bool croq_shape_ok("), std::string::npos);
  EXPECT_NE(src.find("\"dtypes\": [\"bf16f32\"]"), std::string::npos);
  // STMATRIX is choreo's flag, not a macro.
  EXPECT_EQ(src.find("CROQ_STMATRIX"), std::string::npos);
  EXPECT_EQ(f.choreo_flags(c, p), std::vector<std::string>{"--stmatrix=true"});
  c["EPILOGUE"] = "1";
  c["STMATRIX"] = "0";
  EXPECT_EQ(f.choreo_flags(c, p), std::vector<std::string>{"--stmatrix=false"});
  EXPECT_TRUE(f.build_flags(c, p).empty());
  EXPECT_THROW(f.render_source(c, problem({4096, 4096, 4096}, "e4m3f16")), Error);
}

}  // namespace
}  // namespace croq
