// Reading ptxas resource reports (captured from real nvcc 13.0 runs in tests/data/build/) and the
// first error lines of failed compiles.
#include <gtest/gtest.h>

#include "croq/build/resources.hpp"
#include "croq/util/fs.hpp"

namespace croq {
namespace {

std::string data(const std::string& name) { return read_file_or_throw(std::string(CROQ_TEST_DATA_DIR) + "/build/" + name); }

const KernelResources* find(const std::vector<KernelResources>& rs, const std::string& needle) {
  for (const auto& r : rs) {
    if (r.kernel.find(needle) != std::string::npos) return &r;
  }
  return nullptr;
}

TEST(BuildResources, ParsesEveryEntryOfARealWmmaCompile) {
  auto rs = parse_ptxas_resources(data("nvcc_wmma_tc_minblocks2_spills_sm90a.txt"));
  ASSERT_EQ(rs.size(), 12u);  // 2 input types x 3 output types x 2 B layouts
  for (const auto& r : rs) {
    EXPECT_EQ(r.arch, "sm_90a");
    EXPECT_EQ(r.shared_bytes, 20480);
    EXPECT_EQ(r.barriers, 1);
    EXPECT_GE(r.registers, 125);
    EXPECT_LE(r.registers, 128);
    EXPECT_TRUE(r.symbol.rfind("_ZN", 0) == 0);
  }
  const KernelResources* spilled = find(rs, "wmma_matmul<__nv_bfloat16, float, false>");
  ASSERT_NE(spilled, nullptr);
  EXPECT_EQ(spilled->registers, 128);
  EXPECT_EQ(spilled->stack_bytes, 40);
  EXPECT_EQ(spilled->spill_stores, 68);
  EXPECT_EQ(spilled->spill_loads, 60);
  const KernelResources* clean = find(rs, "wmma_matmul<__half, float, true>");
  ASSERT_NE(clean, nullptr);
  EXPECT_EQ(clean->spill_stores, 0);
  EXPECT_EQ(clean->stack_bytes, 0);
}

TEST(BuildResources, KernelNamesAreDemangledWithoutParameters) {
  auto rs = parse_ptxas_resources(data("nvcc_smem_tiled_sm90a.txt"));
  ASSERT_FALSE(rs.empty());
  for (const auto& r : rs) {
    EXPECT_EQ(r.kernel.find('('), r.kernel.find("(anonymous namespace)")) << r.kernel;
    EXPECT_NE(r.kernel.find("tiled_matmul<"), std::string::npos) << r.kernel;
  }
  EXPECT_EQ(kernel_display_name("croq_plain_kernel"), "croq_plain_kernel");
}

TEST(BuildResources, SmallSpillOfARealCompileIsReported) {
  auto rs = parse_ptxas_resources(data("nvcc_smem_tiled_sm90a.txt"));
  const KernelResources* r = find(rs, "tiled_matmul<float, __nv_bfloat16, true>");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->registers, 64);
  EXPECT_EQ(r->stack_bytes, 8);
  EXPECT_EQ(r->spill_stores, 4);
  EXPECT_EQ(r->spill_loads, 4);
  EXPECT_EQ(r->shared_bytes, 8704);
}

TEST(BuildResources, EachArchitectureOfAMultiArchCompileIsItsOwnEntry) {
  auto rs = parse_ptxas_resources(data("nvcc_naive_sm80_sm90a.txt"));
  int sm80 = 0, sm90a = 0;
  for (const auto& r : rs) {
    sm80 += r.arch == "sm_80";
    sm90a += r.arch == "sm_90a";
  }
  EXPECT_GT(sm80, 0);
  EXPECT_EQ(sm80, sm90a);
}

TEST(BuildResources, OlderReportFormatWithoutBarriersOrSmem) {
  std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z3addPfS_' for 'sm_80'\n"
      "ptxas info    : Function properties for _Z3addPfS_\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers, 368 bytes cmem[0]\n"
      "ptxas info    : Function properties for _Z6helperv\n"
      "    16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n";
  auto rs = parse_ptxas_resources(log);
  ASSERT_EQ(rs.size(), 1u);  // the device function _Z6helperv is not a kernel
  EXPECT_EQ(rs[0].kernel, "add");
  EXPECT_EQ(rs[0].registers, 10);
  EXPECT_EQ(rs[0].shared_bytes, 0);
  EXPECT_EQ(rs[0].spill_stores, 0);
}

TEST(BuildResources, FirstErrorLinesOfARealNvccFailureQuoteTheSource) {
  auto lines = first_error_lines(data("nvcc_compile_error.txt"));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[0].find("error: identifier \"undefined_symbol\" is undefined"), std::string::npos);
  EXPECT_NE(lines[1].find("undefined_symbol + 1"), std::string::npos);  // the quoted source line
  bool semicolon = false;
  for (const auto& l : lines) semicolon = semicolon || l.find("expected a \";\"") != std::string::npos;
  EXPECT_TRUE(semicolon);
  for (const auto& l : lines) EXPECT_EQ(l.find("warning"), std::string::npos) << l;
}

TEST(BuildResources, GxxAndLinkerErrorsAreFound) {
  std::string log =
      "k.cpp: In function 'int f()':\n"
      "k.cpp:3:10: error: 'x' was not declared in this scope\n"
      "    3 |   return x;\n"
      "      |          ^\n"
      "/usr/bin/ld: k.o: undefined reference to `cblas_sgemm'\n";
  auto lines = first_error_lines(log);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[0].find("error: 'x' was not declared"), std::string::npos);
  EXPECT_NE(lines[1].find("return x;"), std::string::npos);
  EXPECT_NE(lines.back().find("undefined reference"), std::string::npos);
}

TEST(BuildResources, WithoutAnErrorLineTheTailIsGiven) {
  auto lines = first_error_lines("something\nwent\n\nbadly at the end\n");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "badly at the end");
}

}  // namespace
}  // namespace croq
