// SASS parsing, instruction mix and the ranked comparison: a naive FFMA GEMM against a warpgroup-MMA
// (cuBLAS-like) kernel must report the tensor-core difference first.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "croq/profile/sass.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"

using namespace croq::profile;

namespace {

const std::string k_dir = std::string(CROQ_TEST_DATA_DIR) + "/sass/";

std::vector<SassFunction> load(const std::string& name) {
  auto fns = parse_sass(croq::read_file_or_throw(k_dir + name), name);
  apply_resource_usage(fns, croq::read_file_or_throw(k_dir + "synthetic_res_usage.txt"));
  return fns;
}

}  // namespace

TEST(Sass, ParsesCuobjdumpTextSkippingEncodingLines) {
  auto fns = load("synthetic_naive_sm90a.sass");
  ASSERT_EQ(fns.size(), 1u);
  EXPECT_EQ(fns[0].name, "_Z5naivePK6__halfS1_Pflll");
  EXPECT_EQ(fns[0].instructions.size(), 27u);
  EXPECT_EQ(fns[0].instructions[10].base, "EXIT");            // "@P0 EXIT": predicate stripped
  EXPECT_EQ(fns[0].instructions[13].opcode, "LDG.E.U16");
  EXPECT_EQ(*fns[0].registers, 16);                            // from -res-usage
}

TEST(Sass, InstructionMixCountsClassesAndWidths) {
  InstructionMix naive = instruction_mix(load("synthetic_naive_sm90a.sass")[0]);
  EXPECT_EQ(naive.by_class["fp32"], 1);
  EXPECT_EQ(naive.by_class["fp16"], 2);  // HADD2.F32: half -> float conversions
  EXPECT_EQ(naive.by_class.count("tensor"), 0u);
  EXPECT_EQ(naive.global_load_widths.at(16), 2);
  EXPECT_EQ(naive.global_store_widths.at(32), 1);
  EXPECT_EQ(naive.max_global_load_width(), 16);
  EXPECT_EQ(naive.tensor_family(), "");

  InstructionMix mma = instruction_mix(load("synthetic_hgmma_sm90a.sass")[0]);
  EXPECT_EQ(mma.tensor_family(), "HGMMA");
  EXPECT_EQ(mma.tensor_ops.at("HGMMA.64x128x16.F32"), 4);
  EXPECT_EQ(mma.tma, 3);     // 2 UTMALDG + 1 UTMASTG
  EXPECT_EQ(mma.stsm, 1);
  EXPECT_GE(mma.barriers, 6);  // SYNCS x3, BAR x2, WARPGROUP x2, FENCE
  EXPECT_EQ(*mma.registers, 168);
  EXPECT_EQ(mma.registers_source, "cuobjdump -res-usage");
}

TEST(Sass, RegistersAreEstimatedWithoutResourceUsage) {
  auto fns = parse_sass(croq::read_file_or_throw(k_dir + "synthetic_hgmma_sm90a.sass"));
  InstructionMix mix = instruction_mix(fns[0]);
  EXPECT_EQ(*mix.registers, 168);  // R167 is the highest register referenced
  EXPECT_NE(mix.registers_source.find("estimated"), std::string::npos);
}

TEST(Sass, NaiveAgainstWarpgroupMmaRanksTheTensorCoreDifferenceFirst) {
  InstructionMix naive = instruction_mix(load("synthetic_naive_sm90a.sass")[0]);
  InstructionMix mma = instruction_mix(load("synthetic_hgmma_sm90a.sass")[0]);
  auto d = compare_mix(naive, mma);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].category, "tensor_core");
  EXPECT_EQ(d[0].severity, "high");
  EXPECT_NE(d[0].reason.find("HGMMA.64x128x16.F32"), std::string::npos) << d[0].reason;
  EXPECT_NE(d[0].reason.find("no tensor-core instruction"), std::string::npos);
  std::vector<std::string> cats;
  for (const auto& x : d) cats.push_back(x.category);
  EXPECT_NE(std::find(cats.begin(), cats.end(), "tma"), cats.end());
  EXPECT_NE(std::find(cats.begin(), cats.end(), "global_width"), cats.end());
  // Severities never increase down the list.
  auto rank = [](const std::string& s) { return s == "high" ? 3 : s == "medium" ? 2 : 1; };
  for (size_t i = 1; i < d.size(); ++i) EXPECT_LE(rank(d[i].severity), rank(d[i - 1].severity));
  croq::json j = divergences_json(d);
  EXPECT_EQ(j[0]["rank"], 1);
  EXPECT_EQ(j[0]["category"], "tensor_core");
}

TEST(Sass, HmmaAgainstHgmmaIsAFamilyDivergence) {
  SassFunction f;
  f.name = "wmma_gemm";
  std::string text =
      "Function : wmma_gemm\n"
      "        /*0000*/                   LDSM.16.M88.4 R8, [R2] ;\n"
      "        /*0010*/                   HMMA.16816.F32 R24, R8, R12, R24 ;\n"
      "        /*0020*/                   HMMA.16816.F32 R28, R8, R14, R28 ;\n"
      "        /*0030*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R4.64] ;\n"
      "        /*0040*/                   EXIT ;\n";
  InstructionMix wmma = instruction_mix(parse_sass(text)[0]);
  InstructionMix mma = instruction_mix(load("synthetic_hgmma_sm90a.sass")[0]);
  auto d = compare_mix(wmma, mma);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].category, "tensor_core");
  EXPECT_EQ(d[0].severity, "high");
  EXPECT_NE(d[0].reason.find("HMMA"), std::string::npos);
}

TEST(Sass, LocalMemoryInTheCandidateIsHighSeverity) {
  std::string text =
      "Function : spilly\n"
      "        /*0000*/                   STL [R1+0x10], R4 ;\n"
      "        /*0010*/                   LDL R4, [R1+0x10] ;\n"
      "        /*0020*/                   FFMA R4, R4, R4, R4 ;\n";
  InstructionMix c = instruction_mix(parse_sass(text)[0]);
  InstructionMix b = instruction_mix(load("synthetic_naive_sm90a.sass")[0]);
  auto d = compare_mix(c, b);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].category, "local_memory");
  EXPECT_EQ(d[0].severity, "high");
}

// Spills in the tensor-core loop cost every k step; outside it, once per tile. The loop is the
// range of a backward branch that holds an HGMMA.
TEST(Sass, LocalMemoryIsPlacedInsideOrOutsideTheTensorCoreLoop) {
  const std::string inside =
      "Function : spills_in_loop\n"
      "        /*0000*/                   MOV R4, RZ ;\n"
      "        /*0010*/                   HGMMA.64x192x16.F32 R24, gdesc[UR12].tnspB, R24 ;\n"
      "        /*0020*/                   STL [R1+0x10], R4 ;\n"
      "        /*0030*/                   LDL R4, [R1+0x10] ;\n"
      "        /*0040*/              @!P1 BRA 0x10 ;\n"
      "        /*0050*/                   EXIT ;\n";
  auto fn = parse_sass(inside)[0];
  EXPECT_EQ(fn.instructions[4].target, 0x10);
  EXPECT_EQ(fn.instructions[4].address, 0x40);
  InstructionMix in = instruction_mix(fn);
  EXPECT_EQ(in.tensor_loops, 1);
  ASSERT_TRUE(in.local_in_tensor_loops);
  EXPECT_EQ(*in.local_in_tensor_loops, 2);
  InstructionMix b = instruction_mix(load("synthetic_hgmma_sm90a.sass")[0]);
  ASSERT_EQ(b.local_loads + b.local_stores, 0);
  auto d = compare_mix(in, b);
  auto local = std::find_if(d.begin(), d.end(), [](const Divergence& x) { return x.category == "local_memory"; });
  ASSERT_NE(local, d.end());
  EXPECT_EQ(local->severity, "high");
  EXPECT_NE(local->reason.find("2 of them inside its tensor-core loop"), std::string::npos) << local->reason;

  // The H200 capture of the Hopper template with 256x192 tiles and stream-K (docs/results/spill-sass-run1): its
  // spills are before the k loop (0x19e0-0x2250) and in the reduction after it.
  InstructionMix real = instruction_mix(load("h200_hopper_stream_k_256x192_excerpt.sass")[0]);
  EXPECT_EQ(real.tensor_loops, 1);
  EXPECT_EQ(real.local_loads + real.local_stores, 5);
  ASSERT_TRUE(real.local_in_tensor_loops);
  EXPECT_EQ(*real.local_in_tensor_loops, 0);
  d = compare_mix(real, b);
  local = std::find_if(d.begin(), d.end(), [](const Divergence& x) { return x.category == "local_memory"; });
  ASSERT_NE(local, d.end());
  EXPECT_EQ(local->severity, "low") << local->reason;
  EXPECT_EQ(mix_json(real)["local_in_tensor_loops"], 0);

  // ptxas lays code out of line: on the H200 the split-K build of 256x192 has its k loop at
  // 0xe70-0x15f0 and a backward branch from 0x7ac0 to 0x1050, into the k loop, whose range holds
  // the per-tile LDL at 0x43f0 (docs/results/spill-sass-run1). Only the smallest loop around a
  // tensor-core instruction is its loop.
  const std::string out_of_line =
      "Function : split_k_layout\n"
      "        /*0000*/                   STL [R1+0x10], R4 ;\n"
      "        /*0010*/                   MOV R4, RZ ;\n"
      "        /*0020*/                   IADD3 R5, R5, 0x1, RZ ;\n"
      "        /*0030*/                   HGMMA.64x192x16.F32 R24, gdesc[UR12].tnspB, R24 ;\n"
      "        /*0040*/                   NOP ;\n"
      "        /*0050*/              @!P1 BRA 0x10 ;\n"
      "        /*0060*/                   MOV R6, RZ ;\n"
      "        /*0070*/                   LDL.LU R4, [R1+0x10] ;\n"
      "        /*0080*/                   NOP ;\n"
      "        /*0090*/              @!P2 BRA 0x20 ;\n"
      "        /*00a0*/                   EXIT ;\n";
  InstructionMix ool = instruction_mix(parse_sass(out_of_line)[0]);
  EXPECT_EQ(ool.tensor_loops, 1);
  ASSERT_TRUE(ool.local_in_tensor_loops);
  EXPECT_EQ(*ool.local_in_tensor_loops, 0);

  // ncu's source page has no addresses: where the spills are stays unknown (and high).
  const std::string csv = "\"Source\"\n\"STL [R1], R0 ;\"\n\"HGMMA.64x128x16.F32 R24, gdesc[UR4], R24 ;\"\n";
  InstructionMix unknown = instruction_mix(parse_sass(csv)[0]);
  EXPECT_FALSE(unknown.local_in_tensor_loops);
  EXPECT_TRUE(mix_json(unknown)["local_in_tensor_loops"].is_null());
}

TEST(Sass, NcuSourcePageCsvIsRead) {
  std::string csv =
      "\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\"\n"
      "\"0x7f0000000000\",\"LDC R1, c[0x0][0x28]\",\"3\"\n"
      "\"0x7f0000000010\",\"@P0 UTMALDG.2D [UR16], [UR10], desc[UR12]\",\"12\"\n"
      "\"0x7f0000000020\",\"HGMMA.64x128x16.F32 R24, gdesc[UR16], R24, gsb0\",\"40\"\n";
  auto fns = parse_sass(csv, "source.csv");
  ASSERT_EQ(fns.size(), 1u);
  InstructionMix mix = instruction_mix(fns[0]);
  EXPECT_EQ(mix.total, 3);
  EXPECT_EQ(mix.tensor_family(), "HGMMA");
  EXPECT_EQ(mix.tma, 1);
}

TEST(Sass, TextWithoutInstructionsIsRefused) {
  try {
    parse_sass("Fatbin ptx code:\n================\n", "empty.sass");
    FAIL() << "no error";
  } catch (const croq::Error& e) {
    EXPECT_EQ(e.code(), croq::ExitCode::usage);
  }
}

TEST(Sass, FunctionSelection) {
  std::string text =
      "Function : small\n        /*0000*/ EXIT ;\n"
      "Function : big\n        /*0000*/ FFMA R1, R1, R1, R1 ;\n        /*0010*/ EXIT ;\n";
  auto fns = parse_sass(text);
  EXPECT_EQ(select_function(fns, "").name, "big");
  EXPECT_EQ(select_function(fns, "^sma").name, "small");
  try {
    select_function(fns, "nope");
    FAIL();
  } catch (const croq::Error& e) {
    EXPECT_EQ(e.code(), croq::ExitCode::not_found);
  }
}

// ncu 2025's source page (`ncu --import R --page source --print-source sass --csv`) of the cuBLAS
// kernel captured on an H200: a `"Kernel Name","<name>"` row comes before the header row.
TEST(Sass, ReadsTheNcu2025SourcePageWithItsKernelNameRow) {
  auto fns = load("ncu2025_source_page_cublas_head.csv");
  ASSERT_EQ(fns.size(), 1u);
  EXPECT_EQ(fns[0].name, "nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT");
  InstructionMix mix = instruction_mix(fns[0]);
  EXPECT_GT(mix.by_class["tensor"], 0);
  EXPECT_GT(mix.tma, 0);
  EXPECT_GT(mix.total, 100);
}

// Real H200 data: the naive ABI candidate's SASS from cuobjdump and the cuBLAS kernel's from the ncu
// source page of its profile. The tensor-core difference comes first.
TEST(Sass, RealNaiveCandidateAgainstRealCublasRanksTheTensorCoreDifferenceFirst) {
  auto naive_fns = parse_sass(croq::read_file_or_throw(k_dir + "h200_iter001_naive.sass"), "naive");
  auto cublas_fns = load("ncu2025_source_page_cublas_head.csv");
  ASSERT_FALSE(naive_fns.empty());
  auto naive = std::find_if(naive_fns.begin(), naive_fns.end(), [](const SassFunction& f) {
    return f.name.find("naive") != std::string::npos;
  });
  ASSERT_NE(naive, naive_fns.end());
  auto d = compare_mix(instruction_mix(*naive), instruction_mix(cublas_fns[0]));
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].category, "tensor_core");
  EXPECT_EQ(d[0].severity, "high");
  EXPECT_NE(d[0].reason.find("HGMMA"), std::string::npos) << d[0].reason;
}
