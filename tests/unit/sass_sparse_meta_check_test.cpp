// bench/gpu/sass_sparse_meta_check.py, the static check bench/gpu/gemm_sp_kernels.sh runs on every
// hopper_gemm_sp build: on real H200 SASS it flags the kernel whose sparse WGMMAs had their metadata
// registers overwritten while in flight (the cause of the first GPU run's wrong results) and passes
// the kernel that keeps them until their group retires. Skipped where python3 is missing.
#include <gtest/gtest.h>

#include "support/bench_script.hpp"

namespace croq {
namespace {

ProcessResult run_check(const std::string& fixture) {
  return test::run_bench_script_on_sass("gpu/sass_sparse_meta_check.py", fixture);
}

TEST(SassSparseMetaCheck, FlagsMetadataRegistersOverwrittenBeforeTheirGroupRetires) {
  if (!find_executable("python3")) GTEST_SKIP() << "python3 not found";
  // The loop of the first build: one WGMMA group left in flight (DEPBAR.LE gsb0, 0x1), and the next
  // iteration computes an address into R56 and loads the next words into R56/R57 while the previous
  // group's HGMMA.SP still reads them.
  auto r = run_check("h200_gemm_sp_meta_hazard_excerpt.sass");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("2 sparse GMMA, 2 metadata hazards"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reads R56; written at 0x0850"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("LDS.64 R56, [R56]"), std::string::npos) << r.out;
}

TEST(SassSparseMetaCheck, PassesTheKeepAliveKernel) {
  if (!find_executable("python3")) GTEST_SKIP() << "python3 not found";
  // Two register sets used alternately, each stored (STS.128) only after the DEPBAR that retires it.
  auto r = run_check("h200_gemm_sp_meta_keepalive_excerpt.sass");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("12 sparse GMMA, 0 metadata hazards"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace croq
