// GPU test (label gpu): a sample of the configurations croq's search can produce for the Hopper GEMM
// family — the family's default for each problem, random legal configurations drawn from its
// parameter space with a fixed seed, the deepest pipeline and the widest consumers
// (support/hopper_gpu_sample.hpp) — built with nvcc and verified by croq-gpu-runner (every element
// against the cuBLAS reference, two seeds) on shapes that are not multiples of any tile:
// 1000 x 1000 x 1000 and 4096 x 4100 x 520, in the four dtypes and both B layouts. Skips with a reason
// without a GPU (CI), or without nvcc.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include "croq/gpu/device_key.hpp"
#include <fmt/format.h>

#include "croq/measure/invoke.hpp"
#include "croq/measure/verdict.hpp"
#include "croq/search/hopper_gemm_family.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/hopper_gpu_sample.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

// The runner of this build, or of CROQ_TEST_BIN_DIR (a packed copy of the executables on a GPU
// machine, where the build folder's absolute path does not exist).
fs::path runner_path() {
  if (const char* d = std::getenv("CROQ_TEST_BIN_DIR"); d && *d) return fs::path(d) / "croq-gpu-runner";
  return fs::path(CROQ_BINARY_DIR) / "bin" / "croq-gpu-runner";
}

std::optional<fs::path> nvcc_path() {
  if (const char* e = std::getenv("CROQ_NVCC"); e && *e) return fs::path(e);
  if (fs::exists("/usr/local/cuda/bin/nvcc")) return fs::path("/usr/local/cuda/bin/nvcc");
  return find_executable("nvcc");
}

std::string skip_reason() {
  if (!CROQ_HAVE_CUDA_BUILD) return "croq was built without the CUDA toolkit";
  if (!fs::exists(runner_path())) return "croq-gpu-runner is not built";
  if (!nvcc_path()) return "nvcc not found (set CROQ_NVCC)";
  std::string error;
  auto gpus = query_gpus(&error);
  if (gpus.empty()) return "no GPU: " + error;
  if (gpus.front().compute_cap.rfind("9.", 0) != 0) return "the Hopper family needs compute capability 9.x";
  return "";
}

std::string describe(const FamilyConfig& c) {
  std::string s;
  for (const auto& [k, v] : c) s += k + "=" + v + " ";
  return s;
}

TEST(HopperGemmOnGpu, SampledConfigurationsAreCorrectOnOddShapes) {
  if (auto why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  HopperGemmFamily f;
  const auto cases = test::hopper_gpu_cases();
  std::mt19937 rng(20261129);
  test::TempDir dir;
  struct Job {
    test::HopperGpuCase cs;
    FamilyConfig cfg;
    fs::path so;
    ProcessResult build;
  };
  std::vector<Job> jobs;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const auto& cs = cases[ci];
    const FamilyProblem p = test::hopper_gpu_problem(cs);
    const std::vector<FamilyConfig> sample = test::hopper_gpu_sample(f, p, rng, ci);
    for (const auto& cfg : sample) {
      ASSERT_FALSE(f.violation(cfg, p)) << describe(cfg);
      jobs.push_back({cs, cfg, dir / fmt::format("c{}.so", jobs.size()), {}});
    }
  }
  // Every configuration is compiled first, on all cores (nvcc takes seconds each), then verified
  // one at a time (the test process holds the device's lease, gpu_lease_env.cpp, so a croq
  // measurement running beside the test never shares the GPU with it).
  std::atomic<size_t> next{0};
  auto compile = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      Job& j = jobs[i];
      const FamilyProblem p = test::hopper_gpu_problem(j.cs);
      const fs::path src = fs::path(j.so).replace_extension(".cu");
      atomic_write(src, f.render_source(j.cfg, p), false);
      ProcessSpec build;
      build.argv = {nvcc_path()->string(), "-O3", "-std=c++17"};
      for (const auto& flag : f.build_flags(j.cfg, p)) build.argv.push_back(flag);
      build.argv.insert(build.argv.end(), {"-I" + find_project_dir("include").string(), "-shared", "-Xcompiler", "-fPIC",
                                           "-cudart", "shared", "-o", j.so.string(), src.string()});
      build.timeout = std::chrono::minutes(15);
      j.build = process_runner().run(build);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, std::min(16u, std::thread::hardware_concurrency())); ++t) threads.emplace_back(compile);
  for (auto& t : threads) t.join();
  int built = 0;
  for (const auto& j : jobs) {
    SCOPED_TRACE(fmt::format("{}x{}x{} {} {}: {}", j.cs.m, j.cs.n, j.cs.k, j.cs.dtype, j.cs.col ? "col" : "row",
                             describe(j.cfg)));
    ASSERT_TRUE(j.build.ok()) << j.build.err.substr(0, 4000);
    ++built;
    MeasureJob job;
    job.program = runner_path();
    job.options.candidate = j.so.string();
    job.options.m = j.cs.m;
    job.options.n = j.cs.n;
    job.options.k = j.cs.k;
    job.options.dtype = j.cs.dtype;
    job.options.b_layout = j.cs.col ? "col" : "row";
    job.options.seed = 7;
    job.options.mode = RunMode::verify;
    job.timeout = std::chrono::seconds(30);  // a verify takes a second or two; a hang costs no more than this
    Measurement m = run_measure_job(job, process_runner());
    EXPECT_EQ(verdict_name(m.verdict), std::string("PASS")) << m.reason << ": " << m.detail;
  }
  EXPECT_GE(built, 36);
}

}  // namespace
}  // namespace croq
