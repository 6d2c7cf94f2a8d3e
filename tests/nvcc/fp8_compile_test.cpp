// The hopper_gemm family's e4m3 configurations (k32 FP8 WGMMA, one-byte elements, B "row.col",
// per-tensor scales) compile with the real nvcc for sm_90a (ptxas only: -cubin, no GPU needed),
// without register spills, and a configuration the family refuses for e4m3 is refused by the
// template too. Label nvcc; skipped where no nvcc is installed. By default a sample (the defaults of
// a large and a small shape); CROQ_FP8_ALL_CONFIGS=1 compiles every distinct configuration the
// family starts from (default and alternatives) on the 16 shapes of bench/gpu/fp8_evidence.sh, for
// dense e4m3 and the block-scaled operator.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <regex>
#include <set>

#include "croq/search/hopper_gemm_family.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/test_support.hpp"
#include "support/hopper_blockscaled.hpp"

namespace croq {
namespace {

std::optional<std::filesystem::path> nvcc_path() {
  if (const char* e = std::getenv("CROQ_NVCC"); e && *e) return std::filesystem::path(e);
  if (std::filesystem::exists("/usr/local/cuda/bin/nvcc")) return std::filesystem::path("/usr/local/cuda/bin/nvcc");
  return find_executable("nvcc");
}

FamilyProblem fp8_problem(int64_t m, int64_t n, int64_t k, const std::string& dtype = "e4m3bf16") {
  FamilyProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.dtype = parse_dtype_pair_or_throw(dtype);
  p.arch = "sm_90a";
  return p;
}

// The block-scaled operator's problem (A per 1x128, B per 128x128, e4m3 -> bf16).
FamilyProblem blockscaled_problem(int64_t m, int64_t n, int64_t k) {
  FamilyProblem p = fp8_problem(m, n, k);
  p.op = "blockscaled";
  return p;
}

using test::overlapped_blockscaled;

struct Compiled {
  bool ok = false;
  std::string log;
};

// ptxas of the candidate (-cubin, its report in the log), or with ptx the PTX itself as the log.
// `defines`: template macros the family does not set (a trial), written before its source.
Compiled compile(const KernelFamily& f, const FamilyConfig& c, const FamilyProblem& p, bool ptx = false,
                 const std::string& defines = "") {
  test::TempDir dir;
  const auto src = dir / "candidate.cu";
  const auto out = dir / (ptx ? "candidate.ptx" : "candidate.cubin");
  atomic_write(src, defines + f.render_source(c, p), false);
  ProcessSpec spec;
  spec.argv = {nvcc_path()->string()};
  for (const auto& flag : f.build_flags(c, p)) spec.argv.push_back(flag);
  spec.argv.insert(spec.argv.end(), {"-I" + find_project_dir("include").string(), ptx ? "-ptx" : "-cubin"});
  if (!ptx) spec.argv.insert(spec.argv.end(), {"-Xptxas", "-v"});
  spec.argv.insert(spec.argv.end(), {"-o", out.string(), src.string()});
  spec.timeout = std::chrono::milliseconds(900000);
  ProcessResult r = process_runner().run(spec);
  if (ptx && r.ok()) return {true, read_file(out).value_or("")};
  return {r.ok(), r.out + r.err};
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void expect_clean(const Compiled& c) {
  ASSERT_TRUE(c.ok) << c.log;
  EXPECT_NE(c.log.find("registers"), std::string::npos) << c.log;
  std::smatch m;
  std::regex spill("([0-9]+) bytes spill stores");
  int reports = 0;
  for (auto it = std::sregex_iterator(c.log.begin(), c.log.end(), spill); it != std::sregex_iterator(); ++it, ++reports)
    EXPECT_EQ((*it)[1].str(), "0") << c.log;
  EXPECT_GT(reports, 0) << c.log;
  // ptxas serializes every WGMMA of a kernel it cannot prove the sums' reads safe in (C7514), which
  // costs the block-scaled kernel a third of its speed: no FP8 configuration may be built that way.
  EXPECT_EQ(c.log.find("C7514"), std::string::npos) << c.log;
}

// No kernel of the build keeps anything in local memory (ptxas reports a stack frame per kernel).
void expect_no_stack(const Compiled& c) {
  std::regex frame("([0-9]+) bytes stack frame");
  int frames = 0;
  for (auto it = std::sregex_iterator(c.log.begin(), c.log.end(), frame); it != std::sregex_iterator(); ++it, ++frames)
    EXPECT_EQ((*it)[1].str(), "0") << c.log;
  EXPECT_GT(frames, 0) << c.log;
}

// The configuration built without spills, stack or serialized WGMMAs (nor ptxas waiting for WGMMAs a
// promotion does not read: C7517), then its PTX.
Compiled clean_build_then_ptx(const KernelFamily& f, const FamilyConfig& c, const FamilyProblem& p) {
  const Compiled built = compile(f, c, p);
  expect_clean(built);
  expect_no_stack(built);
  EXPECT_EQ(built.log.find("C7517"), std::string::npos) << built.log;
  Compiled ptx = compile(f, c, p, true);
  EXPECT_TRUE(ptx.ok) << ptx.log;
  return ptx;
}

std::string describe(const FamilyConfig& c) {
  std::string s;
  for (const auto& [k, v] : c) s += k + "=" + v + " ";
  return s;
}

TEST(Fp8TemplateCompiles, DefaultsOfTheFamilyCompileWithoutSpills) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  std::vector<FamilyProblem> problems;
  const bool all = std::getenv("CROQ_FP8_ALL_CONFIGS") && std::string(std::getenv("CROQ_FP8_ALL_CONFIGS")) == "1";
  if (all) {
    for (const char* s : {"4096x4096x4096", "8192x8192x8192", "768x768x768", "12288x12288x12288", "512x8192x8192",
                          "16384x8192x8192", "4096x1024x8192", "4096x32768x8192", "4096x8192x512", "4096x8192x32768",
                          "1024x1024x4096", "12288x12288x4096", "1024x8192x1024", "12288x8192x12288", "4096x1024x1024",
                          "12288x4096x4096"}) {
      int64_t m = 0, n = 0, k = 0;
      ASSERT_EQ(std::sscanf(s, "%ldx%ldx%ld", &m, &n, &k), 3);
      problems.push_back(fp8_problem(m, n, k));
      problems.push_back(blockscaled_problem(m, n, k));
    }
    problems.push_back(blockscaled_problem(4096, 7168, 7168));
  } else {
    problems = {fp8_problem(4096, 4096, 4096), fp8_problem(768, 768, 768, "e4m3f16")};
  }
  std::set<std::string> seen;
  for (const auto& p : problems) {
    std::vector<FamilyConfig> configs = {f.default_config(p)};
    if (all) {
      for (const auto& a : f.alternatives(p)) configs.push_back(a.config);
    }
    for (const auto& c : configs) {
      const std::string key = describe(c) + p.dtype.canonical + p.op;
      if (!seen.insert(key).second) continue;
      SCOPED_TRACE(fmt::format("{}x{}x{} {}: {}", p.m, p.n, p.k, p.dtype.canonical, key));
      ASSERT_FALSE(f.violation(c, p)) << *f.violation(c, p);
      const std::string src = f.render_source(c, p);
      EXPECT_NE(src.find("#define CROQ_ELEM_BYTES 1"), std::string::npos);
      EXPECT_NE(src.find("#define CROQ_BLAYOUTS 2"), std::string::npos);
      EXPECT_EQ(c.at("BK"), "128");
      expect_clean(compile(f, c, p));
    }
  }
}

// BK counts one-byte elements for e4m3: BK=64 with a 128-byte swizzle is half a swizzle row, which
// the family refuses and the template's static_assert too.
TEST(Fp8TemplateCompiles, AHalfSwizzleRowIsRefusedByBoth) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  auto p = fp8_problem(4096, 4096, 4096);
  auto c = f.default_config(p);
  c["BK"] = "64";
  c["SWIZZLE"] = "128";
  auto why = f.violation(c, p);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("swizzle"), std::string::npos) << *why;
  auto r = compile(f, c, p);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("BK must be a multiple of the swizzle width"), std::string::npos) << r.log;
}

// Dense e4m3 at 8192^3 promotes every 16 k blocks with a WGMMA group in flight (the family's
// default since the H200 measured 0.955 x cuBLASLt FP8 there, against 0.892 every 4) with two
// consumers of 64 x 192 (96 + 96 registers), and its alternatives every 8 and every 4 and the
// 128 x 128 tile compile without spills; promotion after every stage with a group in flight is
// refused by the family and the template's static_assert.
TEST(Fp8TemplateCompiles, PromotionEverySixteenKBlocksCompilesWithoutSpills) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  auto p = fp8_problem(8192, 8192, 8192);
  const FamilyConfig def = f.default_config(p);
  ASSERT_EQ(def.at("PROMOTE_EVERY"), "16");
  ASSERT_EQ(def.at("BN"), "192");
  ASSERT_EQ(def.at("MMA_DEPTH"), "1");
  {
    SCOPED_TRACE("the default");
    ASSERT_FALSE(f.violation(def, p));
    expect_clean(compile(f, def, p));
  }
  int compiled = 0;
  for (const auto& a : f.alternatives(p)) {
    if (a.tag != "prom8" && a.tag != "prom4" && a.tag != "co128x128_prom16") continue;
    SCOPED_TRACE(a.name);
    ASSERT_FALSE(f.violation(a.config, p));
    expect_clean(compile(f, a.config, p));
    ++compiled;
  }
  EXPECT_EQ(compiled, 3);
  FamilyConfig c = def;
  c["PROMOTE_EVERY"] = "1";
  ASSERT_TRUE(f.violation(c, p));
  auto r = compile(f, c, p);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("CROQ_MMA_DEPTH 0"), std::string::npos) << r.log;
}

// The block-scaled kernel's default on large shapes overlaps each k block's promotion with the next
// block's WGMMAs (two sets of WGMMA sums and the promoted sums: 3 x 64 registers per consumer thread
// at 128x128): it compiles without spills and without ptxas serializing its WGMMAs, and waits for one
// WGMMA group (not all) after issuing a block. MMA_DEPTH=0 still builds the drained kernel.
TEST(Fp8TemplateCompiles, OverlappedBlockScaledPromotionCompilesWithoutSpills) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  const auto p = blockscaled_problem(4096, 7168, 7168);
  const FamilyConfig c = overlapped_blockscaled(f, p);
  ASSERT_EQ(c.at("MMA_DEPTH"), "1");
  const Compiled built = compile(f, c, p);
  expect_clean(built);
  // Nor does ptxas wait for the even block's WGMMAs before the odd block before is promoted
  // (C7517: it did while that promotion came after their issue; 0.799 -> 0.839 x cuBLASLt at
  // 8192^3 with the warpgroup index made uniform, docs/results/fp8-h200.md, tenth run).
  EXPECT_EQ(built.log.find("C7517"), std::string::npos) << built.log;
  const Compiled overlapped = compile(f, c, p, true);
  ASSERT_TRUE(overlapped.ok);
  EXPECT_GT(count_of(overlapped.log, "wgmma.wait_group.sync.aligned 1;"), 0u);
  // With its staged scales it runs the k blocks in straight-line groups of eight, drained once per
  // group: seven partial waits in a group and one in the pair after it, where the pair loop alone
  // has one (0.940 -> 0.947 x cuBLASLt at 8192^3, docs/results/fp8-h200.md, 25th run); with the
  // epilogue overlapped (the default), the tile's first group and pair peeled, twice that.
  ASSERT_EQ(c.at("SCALE_STAGE"), "1");
  EXPECT_EQ(count_of(overlapped.log, "wgmma.wait_group.sync.aligned 1;"), 16u);
  // And its two consumers issue each block in turns: a named barrier of both before the first one's
  // issue and after the second one's, for each of the eleven blocks of the group, the pair and the
  // single block (22; the kernel has 4 other barriers), 0.938 -> 0.946 x cuBLASLt at 8192^3
  // (docs/results/fp8-h200.md, 29th run).
  EXPECT_GE(count_of(overlapped.log, "bar.sync"), 22u + 4u);
  FamilyConfig d = c;
  d["MMA_DEPTH"] = "0";
  ASSERT_FALSE(f.violation(d, p));
  expect_clean(compile(f, d, p));
  const Compiled drained = compile(f, d, p, true);
  ASSERT_TRUE(drained.ok);
  EXPECT_EQ(count_of(drained.log, "wgmma.wait_group.sync.aligned 1;"), 0u);
  EXPECT_GT(count_of(drained.log, "wgmma.wait_group.sync.aligned 0;"), 0u);
  // The alternatives (stream-K on the waves, the overlapped 128x128 itself, the waves with a 2x1
  // cluster, drained 128x192, no cluster, ping-pong 128x64 drained, the scales read from global
  // memory) compile too, and the drained ones keep every B scale in a register: their tiles' column
  // offset in a 128-wide scale block (n0 % 128: 0 or 64) is a compile-time constant in the
  // promotion. Indexed at run time, the scales went to local memory (8 and 16 bytes of stack at
  // 128x64 and 128x192 before 2026-12-04).
  const auto alts = f.alternatives(p);
  ASSERT_EQ(alts.size(), 7u);
  for (const auto& a : alts) {
    SCOPED_TRACE(a.tag);
    ASSERT_FALSE(f.violation(a.config, p));
    const Compiled alt = compile(f, a.config, p);
    expect_clean(alt);
    expect_no_stack(alt);
  }
}

// The block-scaled default stores a tile's C while the next tile's first k block runs (CROQ_BS_EPI_OVERLAP,
// 2 wherever it applies: +0.4 to +1.5 % on an H100, docs/results/fp8-h200.md, thirty-first run) and builds
// without spills or serialized WGMMAs. Each tile's first group is peeled, so that no WGMMA is in flight across
// a back-edge: the partial waits of a group of eight and of a pair twice (16; 8 with CROQ_BS_EPI_OVERLAP 0),
// and C stored from the promoted sums in each peeled group (of eight, two, one), in a tile without k blocks
// and after the CTA's last tile: five stores of two chunks each where 0 has one. Asked for (1) with the
// register epilogue the template refuses it; by default that configuration builds, storing C after its tile.
TEST(Fp8TemplateCompiles, EpilogueOverlappedWithTheNextTileCompilesWithoutSpills) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  const auto p = blockscaled_problem(8192, 8192, 8192);
  const FamilyConfig c = overlapped_blockscaled(f, p);
  ASSERT_EQ(c.at("EPILOGUE"), "1");
  const Compiled ptx = clean_build_then_ptx(f, c, p);
  ASSERT_TRUE(ptx.ok);
  const Compiled asked = compile(f, c, p, true, "#define CROQ_BS_EPI_OVERLAP 1\n");
  ASSERT_TRUE(asked.ok);
  const Compiled plain = compile(f, c, p, true, "#define CROQ_BS_EPI_OVERLAP 0\n");
  ASSERT_TRUE(plain.ok);
  const std::string wait1 = "wgmma.wait_group.sync.aligned 1;", store = "cp.async.bulk.tensor.2d.global.shared";
  EXPECT_EQ(count_of(plain.log, wait1), 8u);
  EXPECT_EQ(count_of(ptx.log, wait1), 16u);
  EXPECT_EQ(count_of(asked.log, wait1), 16u);
  EXPECT_EQ(count_of(plain.log, store), 2u);
  EXPECT_EQ(count_of(ptx.log, store), 10u);
  FamilyConfig reg = c;
  reg["EPILOGUE"] = "0";
  ASSERT_FALSE(f.violation(reg, p));
  const Compiled refused = compile(f, reg, p, false, "#define CROQ_BS_EPI_OVERLAP 1\n");
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.log.find("CROQ_BS_EPI_OVERLAP: the overlapped block-scaled groups"), std::string::npos)
      << refused.log;
  const Compiled reg_default = compile(f, reg, p, true);
  ASSERT_TRUE(reg_default.ok) << reg_default.log;
  EXPECT_EQ(count_of(reg_default.log, wait1), 8u);
}

// The block-scaled default at the goal shapes since 2026-12-06: 256x128 tiles in waves (the template's
// CROQ_BS_WAVES, its default for a drained consumer of two m64 atoms with staged scales; 0.997 x
// cuBLASLt at 8192^3 on an H100 against 0.960 for the overlapped 128x128, docs/results/fp8-h200.md,
// 33rd run). Each k block: its stage waited for (the next one's under the last wave), then per atom
// the WGMMAs issued, drained and promoted, one set of WGMMA sums for both atoms: it builds without
// spills, stack or serialized WGMMAs, with no partial wait and one commit per wave. Without the waves
// the template refuses the configuration (two sets of 128 sums); with 4 stages it keeps one epilogue
// slot per consumer and refuses two.
TEST(Fp8TemplateCompiles, BlockScaledWavesOf256x128CompileWithoutSpills) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  const auto p = blockscaled_problem(8192, 8192, 8192);
  const FamilyConfig c = f.default_config(p);
  ASSERT_EQ(c.at("BM"), "256");
  ASSERT_EQ(c.at("MMA_DEPTH"), "0");
  ASSERT_TRUE(HopperGemmFamily::blockscaled_waves(c));
  const Compiled ptx = clean_build_then_ptx(f, c, p);
  ASSERT_TRUE(ptx.ok);
  EXPECT_EQ(count_of(ptx.log, "wgmma.wait_group.sync.aligned 1;"), 0u);
  EXPECT_EQ(count_of(ptx.log, "wgmma.commit_group.sync.aligned;"), 2u);
  EXPECT_EQ(count_of(ptx.log, "ld.global.nc.f32"), 0u);
  // The stage waits: the first block's before the loop, then each next block's under the last wave
  // (CROQ_BS_WAVES 2); with 1 each block's at its start only.
  const Compiled one = compile(f, c, p, true, "#define CROQ_BS_WAVES 1\n");
  ASSERT_TRUE(one.ok) << one.log;
  EXPECT_GT(count_of(ptx.log, "mbarrier.try_wait"), count_of(one.log, "mbarrier.try_wait"));
  // Each block's scales are read after its first atom's WGMMAs (CROQ_BS_SCALES_LATE, the default since
  // 2026-12-07, 58th run): in the default's PTX no scale is read before the first WGMMA; in the older
  // order (CROQ_BS_SCALES_LATE 0), which builds as cleanly, they are read before it.
  const Compiled early = compile(f, c, p, false, "#define CROQ_BS_SCALES_LATE 0\n");
  expect_clean(early);
  expect_no_stack(early);
  const Compiled early_ptx = compile(f, c, p, true, "#define CROQ_BS_SCALES_LATE 0\n");
  ASSERT_TRUE(early_ptx.ok) << early_ptx.log;
  auto scale_reads_before_wgmma = [](const std::string& text) {
    return count_of(text.substr(0, text.find("wgmma.mma_async")), "ld.shared.f32");
  };
  EXPECT_EQ(scale_reads_before_wgmma(ptx.log), 0u);
  EXPECT_GT(scale_reads_before_wgmma(early_ptx.log), 0u);
  const Compiled none = compile(f, c, p, false, "#define CROQ_BS_WAVES 0\n");
  EXPECT_FALSE(none.ok);
  EXPECT_NE(none.log.find("too many accumulators per consumer thread"), std::string::npos) << none.log;
  FamilyConfig four = c;
  four["STAGES"] = "4";
  ASSERT_FALSE(f.violation(four, p));
  expect_clean(compile(f, four, p));
  const Compiled two_slots = compile(f, four, p, false, "#define CROQ_EPI_SLOTS 2\n");
  EXPECT_FALSE(two_slots.ok);
  EXPECT_NE(two_slots.log.find("more than 227 KB of shared memory"), std::string::npos) << two_slots.log;
}

// Stream-K on the waves kernel (searched since 2026-12-06: the waves' 192 accumulators fit with
// stream-K) compiles without spills or stack in either order of a share's pieces and in either
// loop form. While the consumers walked the pieces in a loop whose condition was work_at, with
// 64-bit divisions in the schedule, ptxas spilled 24-28 bytes and kept that loop's WGMMA descriptors
// out of uniform registers (docs/fp8.md). By default (CROQ_SK_ONE_LOOP) the data-parallel units and
// the share's pieces run through one call of the unit: one copy of the k loop, as in the default
// build (in a loop of their own, ptxas scheduled the data-parallel copy worse: 84.5 thousand SM
// cycles a tile on an H100 against 82.2 in one loop).
TEST(Fp8TemplateCompiles, StreamKOnTheBlockScaledWavesCompilesWithoutSpills) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  const auto p = blockscaled_problem(8192, 8192, 8192);
  FamilyConfig c = f.default_config(p);
  ASSERT_TRUE(HopperGemmFamily::blockscaled_waves(c));
  const Compiled plain = compile(f, c, p, true);
  ASSERT_TRUE(plain.ok) << plain.log;
  c["STREAM_K"] = "1";
  ASSERT_FALSE(f.violation(c, p)) << *f.violation(c, p);
  for (const char* defines : {"", "#define CROQ_SK_ORDER 0\n", "#define CROQ_SK_ONE_LOOP 0\n"}) {
    SCOPED_TRACE(defines);
    const Compiled built = compile(f, c, p, false, defines);
    expect_clean(built);
    expect_no_stack(built);
  }
  const size_t wgmma = count_of(plain.log, "wgmma.mma_async");
  ASSERT_GT(wgmma, 0u);
  const Compiled one = compile(f, c, p, true);
  ASSERT_TRUE(one.ok) << one.log;
  EXPECT_EQ(count_of(one.log, "wgmma.mma_async"), wgmma);
  const Compiled two = compile(f, c, p, true, "#define CROQ_SK_ONE_LOOP 0\n");
  ASSERT_TRUE(two.ok) << two.log;
  EXPECT_EQ(count_of(two.log, "wgmma.mma_async"), 2 * wgmma);
}

// The diagnostic build (CROQ_TRACE=1: per CTA the times of its units, bench/gpu/cta_trace.sh) times
// the kernel it is built from: its WGMMAs stay in one pipeline (a printf in the kernel made ptxas
// serialize them, C7510, and its units ran 16 % slower) and nothing spills.
TEST(Fp8TemplateCompiles, TraceBuildOfTheBlockScaledWavesKeepsItsWgmmaPipeline) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  const auto p = blockscaled_problem(8192, 8192, 8192);
  FamilyConfig c = f.default_config(p);
  ASSERT_TRUE(HopperGemmFamily::blockscaled_waves(c));
  const Compiled built = compile(f, c, p, false, "#define CROQ_TRACE 1\n");
  expect_clean(built);
  EXPECT_EQ(built.log.find("C7510"), std::string::npos) << built.log;
  EXPECT_NE(built.log.find("trace_print"), std::string::npos) << built.log;  // the printing kernel was built
}

// The drained block-scaled kernel reads the next k block's scales between issuing this block's
// WGMMAs and waiting for them, so their latency hides under the tensor cores' work (read at the
// block's start, before its WGMMAs, they cost 4-6 % at 128x192 on the H200: docs/fp8.md).
TEST(Fp8TemplateCompiles, DrainedBlockScaledKernelReadsTheNextScalesUnderTheWgmmas) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  const auto p = blockscaled_problem(8192, 8192, 8192);
  std::optional<FamilyConfig> d192;
  for (const auto& a : f.alternatives(p))
    if (a.tag == "bs_d128x192") d192 = a.config;
  ASSERT_TRUE(d192.has_value());
  ASSERT_EQ(d192->at("MMA_DEPTH"), "0");
  // The scales read by the consumers from global memory (the default stages them since 2026-12-05).
  (*d192)["SCALE_STAGE"] = "0";
  ASSERT_FALSE(f.violation(*d192, p));
  const Compiled ptx = compile(f, *d192, p, true);
  ASSERT_TRUE(ptx.ok) << ptx.log;
  ASSERT_EQ(count_of(ptx.log, "wgmma.commit_group.sync.aligned;"), 1u);  // the k loop's only group
  const size_t commit = ptx.log.find("wgmma.commit_group.sync.aligned;");
  const size_t wait = ptx.log.find("wgmma.wait_group.sync.aligned 0;", commit);
  ASSERT_NE(wait, std::string::npos);
  // the A scales of the thread's two rows and the tile's B scales: five loads at 128x192
  EXPECT_EQ(count_of(ptx.log.substr(commit, wait - commit), "ld.global.nc.f32"), 5u);
}

// SCALE_STAGE=1 (the family's block-scaled default since the H200 measured it: 0.939 / 0.954 x
// cuBLASLt against 0.870 / 0.882, docs/fp8.md): each k block's scales staged in shared memory with
// its stage by a producer warp (cp.async, arriving on the stage's full barrier) and read by the
// consumers with LDS, as cuBLASLt's block-scaled kernel has them. Both loops compile without spills
// or serialized WGMMAs and read no scale from global memory in the consumers; the slots count in the
// shared memory, so the family and the template agree that they do not fit beside 6 stages and the
// TMA epilogue.
TEST(Fp8TemplateCompiles, StagedScalesReadTheScalesFromSharedMemory) {
  if (!nvcc_path()) GTEST_SKIP() << "nvcc not found (set CROQ_NVCC)";
  HopperGemmFamily f;
  const auto p = blockscaled_problem(8192, 8192, 8192);
  const FamilyConfig def = overlapped_blockscaled(f, p);
  ASSERT_EQ(def.at("STAGES"), "5");
  ASSERT_EQ(def.at("EPILOGUE"), "1");
  ASSERT_EQ(def.at("SCALE_STAGE"), "1");
  FamilyConfig c = def;
  c["STAGES"] = "6";
  ASSERT_TRUE(f.violation(c, p));
  EXPECT_NE(f.violation(c, p)->find("shared memory"), std::string::npos) << *f.violation(c, p);
  const Compiled too_big = compile(f, c, p);
  EXPECT_FALSE(too_big.ok);
  EXPECT_NE(too_big.log.find("more than 227 KB of shared memory"), std::string::npos) << too_big.log;
  const auto alts = f.alternatives(p);
  ASSERT_FALSE(alts.empty());
  EXPECT_EQ(alts.back().tag, "bs_direct_scales");
  EXPECT_EQ(alts.back().config.at("STAGES"), "6");
  c = def;
  for (const char* depth : {"1", "0"}) {
    SCOPED_TRACE(std::string("MMA_DEPTH=") + depth);
    c["MMA_DEPTH"] = depth;
    ASSERT_FALSE(f.violation(c, p));
    const Compiled ptx = clean_build_then_ptx(f, c, p);
    ASSERT_TRUE(ptx.ok);
    EXPECT_EQ(count_of(ptx.log, "ld.global.nc.f32"), 0u);
    EXPECT_GT(count_of(ptx.log, "ld.shared.f32"), 0u);
    EXPECT_EQ(count_of(ptx.log, "cp.async.mbarrier.arrive.noinc.shared::cta.b64"), 1u);
    FamilyConfig plain_cfg = c;
    plain_cfg["SCALE_STAGE"] = "0";
    const Compiled plain = compile(f, plain_cfg, p, true);
    ASSERT_TRUE(plain.ok) << plain.log;
    EXPECT_GT(count_of(plain.log, "ld.global.nc.f32"), 0u);
    EXPECT_EQ(count_of(plain.log, "cp.async.mbarrier.arrive"), 0u);
  }
  // The staged structures the GPU test runs on a small shape (tests/gpu/fp8_family_gpu_test.cpp):
  // drained with split-K slices, with stream-K shares, and ping-pong consumers.
  const auto small = blockscaled_problem(1000, 1000, 1040);
  const FamilyConfig sd = f.default_config(small);
  int built_variants = 0;
  for (const auto& changes : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {{"MMA_DEPTH", "0"}, {"STAGES", "4"}},
           {{"MMA_DEPTH", "0"}, {"STREAM_K", "1"}, {"SPLIT_K", "1"}, {"PINGPONG", "0"}, {"PERSISTENT", "1"}, {"STAGES", "4"}},
           {{"MMA_DEPTH", "0"}, {"BM", "128"}, {"BN", "64"}, {"CONSUMERS", "2"}, {"PINGPONG", "1"}, {"SPLIT_K", "1"},
            {"STREAM_K", "0"}, {"STAGES", "4"}}}) {
    FamilyConfig v = sd;
    v["SCALE_STAGE"] = "1";
    for (const auto& [k, val] : changes) v[k] = val;
    SCOPED_TRACE(describe(v));
    ASSERT_FALSE(f.violation(v, small)) << *f.violation(v, small);
    const Compiled built = compile(f, v, small);
    expect_clean(built);
    expect_no_stack(built);
    ++built_variants;
  }
  EXPECT_EQ(built_variants, 3);
}

}  // namespace
}  // namespace croq
