// The purity scan's search for synchronising calls, on shared objects built by the real nvcc the
// way `croq build` builds a candidate (--shared, cudart linked statically, so every candidate
// carries the whole runtime and only a call site says which functions it uses): the honest cheat
// kernel calls none, the host-sniffing one calls cudaMemcpy, the synchronising one
// cudaStreamSynchronize (tests/gpu/kernels/cheats.cu). Label nvcc; skipped without nvcc.
#include <gtest/gtest.h>

#include "croq/measure/elf_scan.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

std::optional<std::filesystem::path> nvcc() {
  if (const char* e = std::getenv("CROQ_NVCC"); e && *e) return std::filesystem::path(e);
  if (std::filesystem::exists("/usr/local/cuda/bin/nvcc")) return std::filesystem::path("/usr/local/cuda/bin/nvcc");
  return find_executable("nvcc");
}

PurityReport build_and_scan(int mode, const test::TempDir& dir) {
  const auto so = dir / ("cheat" + std::to_string(mode) + ".so");
  ProcessSpec spec;
  spec.argv = {nvcc()->string(), "-O2", "-std=c++17", "--shared", "-Xcompiler", "-fPIC", "-arch=sm_90",
               "-DCHEAT_MODE=" + std::to_string(mode), "-I" + find_project_dir("include").string(),
               find_project_dir("tests/gpu/kernels").string() + "/cheats.cu", "-o", so.string()};
  spec.timeout = std::chrono::milliseconds(600000);
  ProcessResult r = process_runner().run(spec);
  EXPECT_TRUE(r.ok()) << r.err;
  return scan_candidate(so);
}

TEST(SyncScan, NvccBuiltCandidatesAreFoundByTheirCallSites) {
  if (!nvcc()) GTEST_SKIP() << "no nvcc";
  test::TempDir dir;
  PurityReport honest = build_and_scan(0, dir);
  ASSERT_TRUE(honest.is_elf) << honest.error;
  EXPECT_TRUE(honest.clean());
  EXPECT_TRUE(honest.synchronising.empty()) << honest.synchronising_summary();

  PurityReport sniff = build_and_scan(4, dir);
  EXPECT_TRUE(sniff.clean());  // no library call: a synchronising one
  EXPECT_EQ(sniff.synchronising_summary(), "calls cudaMemcpy");

  PurityReport sync = build_and_scan(5, dir);
  EXPECT_EQ(sync.synchronising_summary(), "calls cudaStreamSynchronize");
}

}  // namespace
}  // namespace croq
