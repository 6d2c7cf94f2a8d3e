// GPU test (label gpu): a sample of the configurations croq's search can produce for the Hopper GEMM
// family — the family's default for each problem and random legal configurations drawn from its
// parameter space with a fixed seed — built with nvcc and verified by croq-gpu-runner (every element
// against the cuBLAS reference, two seeds) on shapes that are not multiples of any tile:
// 1000 x 1000 x 1000 and 4096 x 4100 x 520, in the four dtypes and both B layouts. Skips with a reason
// without a GPU (CI), or without nvcc.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "croq/gpu/device_key.hpp"
#include <fmt/format.h>

#include "croq/measure/invoke.hpp"
#include "croq/measure/verdict.hpp"
#include "croq/search/hopper_gemm_family.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/dtype.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

fs::path runner_path() { return fs::path(CROQ_BINARY_DIR) / "bin" / "croq-gpu-runner"; }

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

struct Case {
  int64_t m, n, k;
  std::string dtype;
  bool col;
};

FamilyProblem problem_of(const Case& c) {
  FamilyProblem p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.dtype = parse_dtype_pair_or_throw(c.dtype);
  p.b_col_major = c.col;
  p.arch = "sm_90a";
  return p;
}

// A legal configuration drawn at random from the family's parameter space (nullopt after many tries).
std::optional<FamilyConfig> random_legal(const KernelFamily& f, const FamilyProblem& p, std::mt19937& rng) {
  for (int attempt = 0; attempt < 2000; ++attempt) {
    FamilyConfig c;
    for (const auto& spec : f.params()) {
      std::uniform_int_distribution<size_t> pick(0, spec.values.size() - 1);
      c[spec.name] = spec.values[pick(rng)];
    }
    if (!f.violation(c, p)) return c;
  }
  return std::nullopt;
}

std::string describe(const FamilyConfig& c) {
  std::string s;
  for (const auto& [k, v] : c) s += k + "=" + v + " ";
  return s;
}

TEST(HopperGemmOnGpu, SampledConfigurationsAreCorrectOnOddShapes) {
  if (auto why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  HopperGemmFamily f;
  const std::vector<Case> cases = {{1000, 1000, 1000, "f16f32", false},
                                   {4096, 4100, 520, "bf16f32", true},
                                   {1000, 1000, 1000, "f16", true},
                                   {4096, 4100, 520, "bf16", false}};
  std::mt19937 rng(20261129);
  test::TempDir dir;
  int built = 0;
  for (const auto& cs : cases) {
    const FamilyProblem p = problem_of(cs);
    std::vector<FamilyConfig> sample = {f.default_config(p)};
    for (int i = 0; i < 4; ++i) {
      if (auto c = random_legal(f, p, rng)) sample.push_back(*c);
    }
    for (const auto& cfg : sample) {
      SCOPED_TRACE(fmt::format("{}x{}x{} {} {}: {}", cs.m, cs.n, cs.k, cs.dtype, cs.col ? "col" : "row", describe(cfg)));
      ASSERT_FALSE(f.violation(cfg, p));
      const fs::path src = dir / fmt::format("c{}.cu", built);
      const fs::path so = dir / fmt::format("c{}.so", built);
      ++built;
      atomic_write(src, f.render_source(cfg, p), false);
      ProcessSpec build;
      build.argv = {nvcc_path()->string(), "-O3", "-std=c++17"};
      for (const auto& flag : f.build_flags(cfg, p)) build.argv.push_back(flag);
      build.argv.insert(build.argv.end(), {"-I" + find_project_dir("include").string(), "-shared", "-Xcompiler", "-fPIC",
                                           "-cudart", "shared", "-o", so.string(), src.string()});
      build.timeout = std::chrono::minutes(15);
      ProcessResult b = process_runner().run(build);
      ASSERT_TRUE(b.ok()) << b.err.substr(0, 4000);

      MeasureJob job;
      job.program = runner_path();
      job.options.candidate = so.string();
      job.options.m = cs.m;
      job.options.n = cs.n;
      job.options.k = cs.k;
      job.options.dtype = cs.dtype;
      job.options.b_layout = cs.col ? "col" : "row";
      job.options.seed = 7;
      job.options.mode = RunMode::verify;
      job.timeout = std::chrono::seconds(120);
      Measurement m = run_measure_job(job, process_runner());
      EXPECT_EQ(verdict_name(m.verdict), std::string("PASS")) << m.reason << ": " << m.detail;
    }
  }
  EXPECT_GE(built, 12);
}

}  // namespace
}  // namespace croq
