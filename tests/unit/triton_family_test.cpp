// The triton_gemm family (kernels/triton/matmul/family/gemm.py): constraints over the whole
// parameter space (no configuration Triton would refuse for shared memory), defaults and
// alternatives for the typical shapes, and rendering (every rendered source compiles as Python).
// Running the rendered kernels needs Triton and a GPU: tests/gpu and bench/gpu/triton_evidence.sh.
#include <gtest/gtest.h>

#include <algorithm>

#include <functional>
#include <set>

#include <fmt/format.h>

#include "croq/search/gemm_family_common.hpp"
#include "croq/search/triton_gemm_family.hpp"
#include "croq/search/tune.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/test_support.hpp"
#include "support/family_walk.hpp"

namespace croq {
namespace {

using test::for_each_config;

struct Shape {
  int64_t m, n, k;
};

// The typical shapes of the croq-tune skill and the two large squares.
const std::vector<Shape> k_typical = {
    {768, 768, 768},     {12288, 12288, 12288}, {512, 8192, 8192},    {16384, 8192, 8192},
    {4096, 1024, 8192},  {4096, 32768, 8192},   {4096, 8192, 512},    {4096, 8192, 32768},
    {1024, 1024, 4096},  {12288, 12288, 4096},  {1024, 8192, 1024},   {12288, 8192, 12288},
    {4096, 1024, 1024},  {12288, 4096, 4096},   {4096, 4096, 4096},   {8192, 8192, 8192}};

FamilyProblem problem(Shape s, const std::string& dtype = "f16f32", const std::string& arch = "sm_90a") {
  FamilyProblem p;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.dtype = parse_dtype_pair_or_throw(dtype);
  p.arch = arch;
  return p;
}

FamilyConfig config(int bm, int bn, int bk, int stages, int warps) {
  return {{"BLOCK_M", std::to_string(bm)}, {"BLOCK_N", std::to_string(bn)}, {"BLOCK_K", std::to_string(bk)},
          {"GROUP_M", "8"},  {"NUM_WARPS", std::to_string(warps)}, {"NUM_STAGES", std::to_string(stages)},
          {"PERSISTENT", "0"}, {"TMA", "0"}, {"WARP_SPEC", "0"}, {"SPLIT_K", "1"}, {"C_TMA", "0"}};
}

TEST(TritonFamily, IsTheFamilyOfCroqTuneDslTriton) {
  auto f = choose_family("", "triton", problem({4096, 4096, 4096}));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name(), "triton_gemm");
  EXPECT_EQ(f->dsl(), "triton");
  for (const char* d : {"f16f32", "f16", "bf16f32", "bf16"}) EXPECT_TRUE(f->supports(problem({64, 64, 64}, d))) << d;
  EXPECT_FALSE(f->supports(problem({64, 64, 64}, "f32")));
  EXPECT_FALSE(f->supports(problem({64, 64, 64}, "f16f32", "sm_75")));
}

TEST(TritonFamily, SharedMemoryOfEveryLegalConfigurationFitsTheDevice) {
  TritonGemmFamily f;
  const std::vector<std::string> arches = {"sm_90a", "sm_80", "sm_89"};
  for (const auto& arch : arches) {
    const FamilyProblem p = problem({4096, 4096, 4096}, "f16f32", arch);
    size_t legal = 0, total = 0, smem_refused = 0;
    for_each_config(f, [&](const FamilyConfig& c) {
      ++total;
      auto why = f.violation(c, p);
      const long long smem = TritonGemmFamily::smem_bytes(c, p);
      if (!why) {
        ++legal;
        EXPECT_LE(smem, TritonGemmFamily::smem_limit(arch)) << config_to_json(c).dump();
        EXPECT_LE(TritonGemmFamily::accumulator_registers(c), TritonGemmFamily::k_max_accumulators);
      } else if (smem > TritonGemmFamily::smem_limit(arch)) {
        ++smem_refused;
        EXPECT_NE(why->find("shared memory"), std::string::npos) << *why;
      }
    });
    EXPECT_GT(legal, 500u) << arch;
    EXPECT_GT(smem_refused, 0u) << arch;
    EXPECT_LT(legal, total) << arch;
  }
}

TEST(TritonFamily, TheSharedMemoryEstimateMatchesTritonsKnownOutcomes) {
  TritonGemmFamily f;
  const FamilyProblem h = problem({8192, 8192, 8192});
  // Configurations of Triton's own Hopper matmul tutorials: they compile on an H100/H200.
  for (const auto& c : {config(128, 256, 64, 3, 8), config(128, 256, 64, 4, 8), config(64, 256, 32, 4, 4),
                        config(128, 128, 64, 4, 4), config(128, 128, 32, 4, 4), config(128, 64, 32, 4, 4),
                        config(64, 128, 32, 4, 4), config(128, 128, 128, 3, 8)}) {
    EXPECT_EQ(f.violation(c, h), std::nullopt) << config_to_json(c).dump();
  }
  // "out of resource: shared memory" on a 227 KiB device: 4 x (128 + 256) x 128 x 2 bytes = 384 KiB
  // (+ 1 KiB of barriers).
  auto big = f.violation(config(128, 256, 128, 4, 8), h);
  ASSERT_TRUE(big);
  EXPECT_NE(big->find("394240"), std::string::npos) << *big;
  EXPECT_TRUE(f.violation(config(256, 256, 64, 4, 8), h));  // 256 KiB of pipeline
  // The same tile fits an H200 but not an RTX 4090 (99 KiB).
  EXPECT_EQ(f.violation(config(128, 128, 64, 4, 4), h), std::nullopt);
  EXPECT_TRUE(f.violation(config(128, 128, 64, 4, 4), problem({8192, 8192, 8192}, "f16f32", "sm_89")));
  // The f32 accumulator of a 256 x 128 tile in 4 warps would need 256 registers per thread.
  auto regs = f.violation(config(256, 128, 32, 2, 4), h);
  ASSERT_TRUE(regs);
  EXPECT_NE(regs->find("registers"), std::string::npos) << *regs;
}

TEST(TritonFamily, TmaWarpSpecialisationAndSplitKRules) {
  TritonGemmFamily f;
  const FamilyProblem p = problem({4096, 4096, 4096});
  FamilyConfig c = config(128, 256, 64, 3, 8);
  c["TMA"] = "1";
  EXPECT_EQ(f.violation(c, p), std::nullopt);
  EXPECT_TRUE(f.violation(c, problem({4096, 4096, 4096}, "f16f32", "sm_80")));  // no TMA before Hopper
  // A row of A of K = 4100 f16 elements is 8200 bytes: not a multiple of 16, no descriptor.
  auto odd = f.violation(c, problem({4096, 4096, 4100}));
  ASSERT_TRUE(odd);
  EXPECT_NE(odd->find("16 bytes"), std::string::npos) << *odd;
  c["WARP_SPEC"] = "1";
  EXPECT_TRUE(f.violation(c, p));  // warp specialisation is of the persistent loop
  c["PERSISTENT"] = "1";
  EXPECT_EQ(f.violation(c, p), std::nullopt);
  c["TMA"] = "0";
  EXPECT_TRUE(f.violation(c, p));
  FamilyConfig s = config(64, 128, 64, 4, 4);
  s["SPLIT_K"] = "4";
  EXPECT_EQ(f.violation(s, problem({512, 512, 8192})), std::nullopt);
  EXPECT_TRUE(f.violation(s, problem({512, 512, 256})));          // fewer than two k steps per slice
  EXPECT_TRUE(f.violation(s, problem({16384, 16384, 8192})));     // a 4 GiB workspace
  s["PERSISTENT"] = "1";
  EXPECT_TRUE(f.violation(s, problem({512, 512, 8192})));
}

// C_TMA: the persistent TMA kernel stores C through a descriptor from shared memory (half a tile
// beside the pipeline). It needs TMA and the persistent loop, rows of C in 16-byte multiples, and the
// shared memory of both; where K is short it is the first alternative; a configuration recorded
// before the parameter reads as storing from registers.
TEST(TritonFamily, TmaStoreOfCRules) {
  TritonGemmFamily f;
  const FamilyProblem p = problem({4096, 8192, 512});
  FamilyConfig c = config(128, 256, 64, 3, 8);
  c["TMA"] = "1";
  c["PERSISTENT"] = "1";
  c["WARP_SPEC"] = "1";
  c["C_TMA"] = "1";
  EXPECT_EQ(f.violation(c, p), std::nullopt);
  // 3 stages of 128x64 + 64x256 f16 (147456 bytes) + 128 x 128 f32 (65536) + barriers.
  EXPECT_EQ(TritonGemmFamily::smem_bytes(c, p), 147456 + 65536 + 1024);
  FamilyConfig deep = c;
  deep["NUM_STAGES"] = "4";  // 196608 + 65536: more than 227 KiB, legal when C is stored from registers
  ASSERT_TRUE(f.violation(deep, p));
  EXPECT_NE(f.violation(deep, p)->find("shared memory"), std::string::npos);
  deep["C_TMA"] = "0";
  EXPECT_EQ(f.violation(deep, p), std::nullopt);
  FamilyProblem narrow = problem({4096, 1002, 512});  // B stored N x K (rows of K); C rows of 4008 bytes
  narrow.b_col_major = true;
  auto odd = f.violation(c, narrow);
  ASSERT_TRUE(odd);
  EXPECT_NE(odd->find("rows of C"), std::string::npos) << *odd;
  FamilyConfig ptr = c;
  ptr["TMA"] = "0";
  ptr["WARP_SPEC"] = "0";
  ASSERT_TRUE(f.violation(ptr, p));
  EXPECT_NE(f.violation(ptr, p)->find("C_TMA=1"), std::string::npos);
  FamilyConfig one = c;
  one["PERSISTENT"] = "0";
  one["WARP_SPEC"] = "0";
  EXPECT_TRUE(f.violation(one, p));
  // An alternative after the persistent TMA kernel: at 4096x8192x512 on the H200 it measured 373.3
  // TFLOPS against the default's 380.3.
  std::vector<std::string> tags;
  for (const auto& a : f.alternatives(p)) {
    tags.push_back(a.tag);
    if (a.tag == "tma_ws_store") {
      EXPECT_EQ(a.config, c);
    }
  }
  const auto at = [&](const char* tag) { return std::find(tags.begin(), tags.end(), tag) - tags.begin(); };
  ASSERT_LT(at("tma_ws_store"), static_cast<long>(tags.size()));
  EXPECT_LT(at("tma_pers_128x256"), at("tma_ws_store"));
  FamilyConfig old = f.default_config(p);
  old.erase("C_TMA");
  EXPECT_EQ(with_recorded_defaults(f, old), f.default_config(p));
  EXPECT_NE(f.render_source(c, p).find("\nC_TMA = 1\n"), std::string::npos);
}

// Fewer tiles than half the SMs even at 128x128, and a long K (1024x1024x4096: 64 tiles; on the
// H200 the default there measured 0.63 x cuBLAS): split-K is the first alternative; with a short K
// (768^3, where split-K 4 measured 58 TFLOPS against the default's 88) it stays last.
TEST(TritonFamily, FewTilesAndALongKTrySplitKFirst) {
  TritonGemmFamily f;
  const auto few = f.alternatives(problem({1024, 1024, 4096}));
  ASSERT_FALSE(few.empty());
  EXPECT_EQ(few.front().tag, "splitk4_64x128");
  const auto small_k = f.alternatives(problem({768, 768, 768}));
  ASSERT_FALSE(small_k.empty());
  EXPECT_NE(small_k.front().tag, "splitk4_64x128");
  EXPECT_EQ(small_k.back().tag, "splitk4_64x128");
}

TEST(TritonFamily, DefaultsAndAlternativesAreLegalOnEveryTypicalShape) {
  TritonGemmFamily f;
  for (const auto& s : k_typical) {
    for (const char* d : {"f16f32", "f16", "bf16f32", "bf16"}) {
      const FamilyProblem p = problem(s, d);
      const FamilyConfig def = f.default_config(p);
      EXPECT_EQ(f.violation(def, p), std::nullopt) << s.m << "x" << s.n << "x" << s.k << " " << d;
      const auto alts = f.alternatives(p);
      EXPECT_GE(alts.size(), 3u);
      std::set<std::string> tags;
      for (const auto& a : alts) {
        EXPECT_EQ(f.violation(a.config, p), std::nullopt) << a.name;
        EXPECT_TRUE(tags.insert(a.tag).second) << a.tag;
        EXPECT_LE(a.tag.size(), 24u);
      }
    }
  }
  // The large squares start from Triton's Hopper tutorial tile, on Hopper persistent through TMA and
  // warp-specialised (the best of both H200 tunes, 2026-12-03); the tutorial's one program per tile
  // is then the first alternative. Elsewhere (sm_80) it is the default.
  for (const FamilyProblem& p : {problem({8192, 8192, 8192}), problem({4096, 4096, 4096}, "e4m3bf16")}) {
    const FamilyConfig big = f.default_config(p);
    EXPECT_EQ(big.at("BLOCK_M"), "128");
    EXPECT_EQ(big.at("BLOCK_N"), "256");
    EXPECT_EQ(big.at("PERSISTENT"), "1");
    EXPECT_EQ(big.at("TMA"), "1");
    EXPECT_EQ(big.at("WARP_SPEC"), "1");
    const auto alts = f.alternatives(p);
    ASSERT_FALSE(alts.empty());
    EXPECT_EQ(alts.front().tag, "ptr_128x256");
    EXPECT_EQ(alts.front().config.at("TMA"), "0");
    for (const auto& a : alts) EXPECT_NE(a.config, big) << a.tag;
  }
  const FamilyProblem ampere = problem({8192, 8192, 8192}, "f16f32", "sm_80");
  EXPECT_EQ(f.default_config(ampere).at("TMA"), "0");
  EXPECT_EQ(f.default_config(ampere).at("PERSISTENT"), "0");
  // Small problems keep one program per tile (a persistent grid of 132 programs has little to share).
  EXPECT_EQ(f.default_config(problem({768, 768, 768})).at("PERSISTENT"), "0");
  // A small odd shape still gets a legal default.
  EXPECT_EQ(f.violation(f.default_config(problem({100, 36, 20})), problem({100, 36, 20})), std::nullopt);
}

// e4m3 (issue 22's FP8 in the family): e4m3 into f16 or bf16 with per-tensor scales, on Hopper, B
// stored N x K (the layout the Python runner gives e4m3 first, the only one the template takes),
// one-byte elements in the shared-memory estimate; the template scales the f32 accumulator before
// the store (after the slices' sum with split-K).
TEST(TritonFamily, E4m3WithPerTensorScalesOnHopper) {
  TritonGemmFamily f;
  EXPECT_EQ(choose_family("", "triton", problem({4096, 4096, 4096}, "e4m3bf16"))->name(), "triton_gemm");
  for (const char* d : {"e4m3f16", "e4m3bf16"}) EXPECT_TRUE(f.supports(problem({4096, 4096, 4096}, d))) << d;
  EXPECT_FALSE(f.supports(problem({4096, 4096, 4096}, "e4m3bf16", "sm_89")));
  EXPECT_FALSE(f.supports(problem({4096, 4096, 1000}, "e4m3bf16")));  // rows of K bytes: a multiple of 16
  ASSERT_TRUE(f.violation(config(128, 128, 64, 3, 4), problem({4096, 4096, 1000}, "e4m3bf16")));
  EXPECT_NE(f.violation(config(128, 128, 64, 3, 4), problem({4096, 4096, 1000}, "e4m3bf16"))->find("multiple of 16"),
            std::string::npos);
  for (const auto& s : k_typical) {
    const FamilyProblem p = problem(s, "e4m3bf16");
    EXPECT_EQ(f.violation(f.default_config(p), p), std::nullopt) << s.m << "x" << s.n << "x" << s.k;
    for (const auto& a : f.alternatives(p)) EXPECT_EQ(f.violation(a.config, p), std::nullopt) << a.name;
  }
  // One-byte elements: a 4-stage 128x256x128 ring fits for e4m3, not for f16.
  const FamilyConfig deep = config(128, 256, 128, 4, 8);
  EXPECT_EQ(f.violation(deep, problem({8192, 8192, 8192}, "e4m3bf16")), std::nullopt);
  ASSERT_TRUE(f.violation(deep, problem({8192, 8192, 8192}, "f16")));
  // TMA reads e4m3's B in rows of K (N x K): N need not make 16-byte rows.
  FamilyConfig tma = config(128, 128, 64, 3, 4);
  tma["TMA"] = "1";
  EXPECT_EQ(f.violation(tma, problem({4096, 4100, 4096}, "e4m3bf16")), std::nullopt);
  ASSERT_TRUE(f.violation(tma, problem({4096, 4100, 4096}, "f16f32")));  // f16 rows of N = 4100: 8200 bytes
  const std::string src = f.render_source(f.default_config(problem({4096, 4096, 4096}, "e4m3bf16")),
                                          problem({4096, 4096, 4096}, "e4m3bf16"));
  EXPECT_NE(src.find("\"e4m3bf16\""), std::string::npos);
  EXPECT_NE(src.find("problem[\"a_scale\"], problem[\"b_scale\"]"), std::string::npos);
  EXPECT_NE(src.find("acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))"), std::string::npos);
}

TEST(TritonFamily, RenderedSourcesCompileAsPython) {
  auto py = find_executable("python3");
  if (!py) GTEST_SKIP() << "no python3";
  TritonGemmFamily f;
  test::TempDir dir;
  const FamilyProblem p = problem({4096, 8192, 512}, "bf16");
  std::vector<FamilyConfig> configs = {f.default_config(p)};
  for (const auto& a : f.alternatives(p)) configs.push_back(a.config);
  ProcessSpec spec;
  spec.argv = {py->string(), "-m", "py_compile"};
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string src = f.render_source(configs[i], p);
    // The configuration is the module's constants, every one of them.
    for (const auto& [k, v] : configs[i]) EXPECT_NE(src.find(k + " = " + v + "\n"), std::string::npos) << k;
    EXPECT_EQ(src.find("@CROQ_CONFIG@"), std::string::npos);
    EXPECT_EQ(src.find("NUM_WARPS = ", src.find("NUM_WARPS = ") + 1), std::string::npos);  // one configuration
    EXPECT_NE(src.find("def croq_matmul(problem, a, b, c):"), std::string::npos);
    EXPECT_EQ(src.find("triton.autotune"), std::string::npos);  // a fixed configuration
    const fs::path file = dir / fmt::format("iter{:03d}_cand.py", i + 1);
    atomic_write(file, src, false);
    spec.argv.push_back(file.string());
  }
  spec.timeout = std::chrono::seconds(60);
  ProcessResult r = SystemProcessRunner().run(spec);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  // The configuration's constants are read back by the module's own croq_kernel_info (pure Python:
  // the module is parsed without importing triton).
  spec.argv = {py->string(), "-c",
               "import ast,sys\n"
               "t=ast.parse(open(sys.argv[1]).read())\n"
               "names=[n.targets[0].id for n in t.body if isinstance(n,ast.Assign) and isinstance(n.targets[0],ast.Name)]\n"
               "print(','.join(names))\n",
               (dir / "iter001_cand.py").string()};
  r = SystemProcessRunner().run(spec);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* k : {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "NUM_WARPS", "NUM_STAGES", "PERSISTENT", "TMA",
                        "WARP_SPEC", "SPLIT_K", "C_TMA", "CROQ_PARAMS"}) {
    EXPECT_NE(r.out.find(k), std::string::npos) << k << " in " << r.out;
  }
}

}  // namespace
}  // namespace croq
