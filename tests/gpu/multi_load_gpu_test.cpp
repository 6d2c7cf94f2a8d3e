// GPU test (label gpu): several differently configured Hopper GEMM kernels of one dtype, built by
// croq build (so with croq's flags), loaded into ONE process and each verified against a reference,
// twice, interleaved (croq_multi_load, tests/gpu/kernels/multi_load.cu). Before the template's
// helpers had internal linkage and croq built with -fvisibility=hidden -fno-gnu-unique, every
// kernel after the first of its dtype in a process returned CROQ_UNSUPPORTED (their launch caches
// were one STB_GNU_UNIQUE object). Skips without a Hopper GPU or nvcc.
#include <gtest/gtest.h>

#include <future>
#include <random>

#include <fmt/format.h>

#include "croq/build/builder.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/search/hopper_gemm_family.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "support/hopper_gpu_sample.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

fs::path multi_load_path() {
  if (const char* d = std::getenv("CROQ_TEST_BIN_DIR"); d && *d) return fs::path(d) / "croq_multi_load";
  return fs::path(CROQ_BINARY_DIR) / "bin" / "croq_multi_load";
}

std::string skip_reason() {
  if (!CROQ_HAVE_CUDA_BUILD) return "croq was built without the CUDA toolkit";
  if (!fs::exists(multi_load_path())) return "croq_multi_load is not built";
  if (Toolchain::from_env().nvcc.empty() || !fs::exists(Toolchain::from_env().nvcc)) return "nvcc not found";
  std::string error;
  auto gpus = query_gpus(&error);
  if (gpus.empty()) return "no GPU: " + error;
  if (gpus.front().compute_cap.rfind("9.", 0) != 0) return "the Hopper family needs compute capability 9.x";
  return "";
}

TEST(HopperGemmOnGpu, DifferentlyConfiguredKernelsOfOneDtypeWorkSideBySideInOneProcess) {
  if (auto why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  HopperGemmFamily f;
  test::TempDir dir;
  Workspace ws(dir.path());
  const auto cases = test::hopper_gpu_cases();
  std::mt19937 rng(20261201);
  for (size_t ci : {size_t{0}, size_t{1}}) {  // f16 -> f32 (B row) and bf16 -> f32 (B col)
    const auto& cs = cases[ci];
    SCOPED_TRACE(fmt::format("{}x{}x{} {} {}", cs.m, cs.n, cs.k, cs.dtype, cs.col ? "col" : "row"));
    const FamilyProblem p = test::hopper_gpu_problem(cs);
    TaskRef task = make_task("sm90_NVIDIA_H200", "cuda", fmt::format("matmul_{}_{}x{}x{}", cs.dtype, cs.m, cs.n, cs.k),
                             "multi");
    std::vector<FamilyConfig> configs;
    for (const auto& c : test::hopper_gpu_sample(f, p, rng, ci)) {
      if (configs.size() < 4 && std::find(configs.begin(), configs.end(), c) == configs.end()) configs.push_back(c);
    }
    ASSERT_GE(configs.size(), 3u);
    std::vector<std::string> argv = {multi_load_path().string(), std::to_string(cs.m), std::to_string(cs.n),
                                     std::to_string(cs.k), cs.dtype, cs.col ? "col" : "row"};
    // The kernels are built side by side (each nvcc run takes tens of seconds), then loaded together.
    std::vector<std::future<json>> builds;
    for (size_t i = 0; i < configs.size(); ++i) {
      const std::string kernel = fmt::format("iter{:03d}_cfg{}", i + 1, i);
      const fs::path src = ws.kind_dir(task, ArtifactKind::srcs) / (kernel + ".cu");
      fs::create_directories(src.parent_path());
      atomic_write(src, f.render_source(configs[i], p), false);
      BuildOptions o;
      o.flags = f.build_flags(configs[i], p);
      const BuildTarget target = locate_build_target(ws, task, kernel);
      builds.push_back(std::async(std::launch::async, [&ws, target, o] {
        CompilerVersions versions;
        return build_target(ws, target, o, Toolchain::from_env(), versions);
      }));
      argv.push_back((ws.kind_dir(task, ArtifactKind::bin) / (kernel + ".so")).string());
    }
    for (auto& b : builds) {
      const json doc = b.get();
      ASSERT_EQ(doc.value("verdict", ""), "OK") << doc.dump(2).substr(0, 4000);
      EXPECT_TRUE(doc["symbols"].value("clean", false)) << doc["symbols"].dump();
    }
    ProcessSpec run;
    run.argv = argv;
    run.timeout = std::chrono::minutes(2);
    ProcessResult r = process_runner().run(run);
    EXPECT_TRUE(r.ok()) << r.describe() << "\n" << r.out << r.err;
    size_t ok_lines = 0;
    for (const auto& line : split_lines(r.out)) ok_lines += line.rfind("ok ", 0) == 0;
    EXPECT_EQ(ok_lines, 2 * configs.size()) << r.out;
  }
}

}  // namespace
}  // namespace croq
