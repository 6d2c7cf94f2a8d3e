// bench/gpu/sass_loop_mix.py, which counts the instructions of a kernel's k loop in `cuobjdump -sass`
// output (docs/results/fp8-h200.md, tenth run): on real H200 SASS of the block-scaled kernel it picks
// the innermost loop holding WGMMAs (the k loop of two blocks: 8 QGMMA, 128 FFMA, 310 instructions)
// and not the persistent loop around it, which holds more WGMMAs. Skipped where python3 is missing.
#include <gtest/gtest.h>

#include "support/bench_script.hpp"

namespace croq {
namespace {

ProcessResult run_mix(const std::string& fixture, const std::vector<std::string>& extra = {}) {
  return test::run_bench_script_on_sass("gpu/sass_loop_mix.py", fixture, extra);
}

TEST(SassLoopMix, CountsTheInnermostWgmmaLoop) {
  if (!find_executable("python3")) GTEST_SKIP() << "python3 not found";
  auto r = run_mix("h200_blockscaled_kloop_excerpt.sass");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("loop 0x1070-0x23c0: 310 instructions, 8 WGMMA"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FFMA:128"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("QGMMA:8"), std::string::npos) << r.out;
}

TEST(SassLoopMix, SaysWhenNoFunctionMatches) {
  if (!find_executable("python3")) GTEST_SKIP() << "python3 not found";
  auto r = run_mix("h200_blockscaled_kloop_excerpt.sass", {"no_such_kernel"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("no function matching 'no_such_kernel'"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace croq
