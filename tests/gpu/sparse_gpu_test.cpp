// GPU tests of 2:4 sparse GEMM (gemm_sp) through croq-gpu-runner: the sparse test candidates
// (tests/gpu/kernels/sparse_kernels.cu) get their verdicts on the harness's own sparse inputs (the
// correct ones PASS in every dtype and layout, also at shapes that are no multiple of a tile; the
// ones that ignore the metadata, read A densely, misread or guess the pattern, or compress once
// only, fail), and the library baseline measures cuSPARSELt and the dense libraries on the same
// pruned inputs. Each test skips with a reason without a GPU; the cuSPARSELt test also without
// cuSPARSELt (CROQ_CUSPARSELT, or the nvidia-cusparselt Python package).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "croq/gpu/device_key.hpp"
#include "croq/measure/invoke.hpp"
#include "croq/util/error.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

// The runner and test kernels of this build, or of a packed copy on a GPU machine
// (CROQ_TEST_BIN_DIR=.carry/croq/bin, its test kernels in .carry/croq/test-kernels).
fs::path packed_bin() {
  const char* d = std::getenv("CROQ_TEST_BIN_DIR");
  return d && *d ? fs::path(d) : fs::path();
}
fs::path runner_path() {
  return packed_bin().empty() ? fs::path(CROQ_BINARY_DIR) / "bin" / "croq-gpu-runner" : packed_bin() / "croq-gpu-runner";
}
fs::path kernel(const std::string& name) {
  std::error_code ec;
  if (!packed_bin().empty() && fs::is_directory(packed_bin().parent_path() / "test-kernels", ec)) {
    return packed_bin().parent_path() / "test-kernels" / (name + ".so");
  }
  return fs::path(CROQ_TEST_KERNEL_DIR) / (name + ".so");
}

std::string skip_reason() {
  static const std::string reason = [] {
    if (!CROQ_HAVE_CUDA_BUILD) return std::string("croq was built without the CUDA toolkit");
    if (!fs::exists(runner_path())) return std::string("croq-gpu-runner is not built");
    std::string error;
    if (query_gpus(&error).empty()) return "no GPU: " + error;
    return std::string();
  }();
  return reason;
}

#define REQUIRE_GPU()                                          \
  do {                                                         \
    if (!skip_reason().empty()) GTEST_SKIP() << skip_reason(); \
  } while (0)

struct Spec {
  int64_t m = 256, n = 192, k = 512;
  std::string dtype = "f16";
  std::string layout = "auto";
  std::string mode = "verify";
  std::string library;
};

Measurement run(const std::string& candidate, const Spec& s) {
  MeasureJob job;
  job.program = runner_path();
  job.options.op = "gemm_sp";
  job.options.candidate = candidate.empty() ? "" : kernel(candidate).string();
  job.options.library = s.library;
  job.options.m = s.m;
  job.options.n = s.n;
  job.options.k = s.k;
  job.options.dtype = s.dtype;
  job.options.b_layout = s.layout;
  job.options.seed = 4242;
  job.options.mode = s.mode == "measure" ? RunMode::measure : RunMode::verify;
  job.options.warmup = 2;
  job.options.min_reps = 5;
  job.options.max_reps = 30;
  job.options.time_budget_ms = 300;
  job.timeout = std::chrono::seconds(240);
  job.skeleton.problem.op = "gemm_sp";
  job.skeleton.problem.m = s.m;
  job.skeleton.problem.n = s.n;
  job.skeleton.problem.k = s.k;
  SystemProcessRunner pr;
  return run_measure_job(job, pr);
}

TEST(SparseGpu, CorrectCandidatesPassEveryDtypeLayoutAndOddShape) {
  REQUIRE_GPU();
  for (const char* cand : {"sparse_ok", "sparse_prepared"}) {
    for (const char* dtype : {"f16", "f16f32", "bf16f32", "e4m3f16", "e4m3bf16"}) {
      for (const char* layout : {"row", "col"}) {
        Spec s;
        s.dtype = dtype;
        s.layout = layout;
        SCOPED_TRACE(std::string(cand) + " " + dtype + " B " + layout);
        Measurement m = run(cand, s);
        EXPECT_EQ(m.verdict, Verdict::PASS) << m.reason << ": " << m.detail;
        EXPECT_EQ(m.problem.op, "gemm_sp");
      }
    }
    // Shapes that are no multiple of any tile (K a multiple of 8, as the operator needs).
    for (auto [m_, n_, k_] : {std::tuple<int64_t, int64_t, int64_t>{1000, 3000, 2048}, {200, 136, 264}, {1, 7, 8}}) {
      Spec s;
      s.m = m_;
      s.n = n_;
      s.k = k_;
      s.dtype = "f16";
      SCOPED_TRACE(std::string(cand) + " " + std::to_string(m_) + "x" + std::to_string(n_) + "x" + std::to_string(k_));
      Measurement m = run(cand, s);
      EXPECT_EQ(m.verdict, Verdict::PASS) << m.reason << ": " << m.detail;
    }
  }
  // Timed too: the prepared candidate's compression is off the clock, its timing a real one.
  Spec s;
  s.mode = "measure";
  Measurement m = run("sparse_prepared", s);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_TRUE(*m.verification.second_seed_passed);
  EXPECT_TRUE(*m.verification.rechecked_after_timing);
  EXPECT_GT(m.tflops.value_or(0), 0.0);
  EXPECT_NE(m.device.peak_source.find("2:4"), std::string::npos) << "a sparse problem's peak is the sparse one";
}

TEST(SparseGpu, BrokenSparseCandidatesGetVerifyFail) {
  REQUIRE_GPU();
  struct Case {
    const char* cand;
    const char* reason;
  };
  for (const Case& c : {Case{"sparse_dense", "mismatch"}, Case{"sparse_fixed_pattern", "mismatch"},
                        Case{"sparse_swapped_nibbles", "mismatch"}, Case{"sparse_magnitude", "mismatch"},
                        Case{"sparse_prepare_once", "second_seed_mismatch"}}) {
    for (const char* dtype : {"f16", "e4m3f16"}) {
      SCOPED_TRACE(std::string(c.cand) + " " + dtype);
      Spec s;
      s.dtype = dtype;
      Measurement m = run(c.cand, s);
      EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL) << m.reason << ": " << m.detail;
      EXPECT_EQ(m.reason, c.reason) << m.detail;
    }
  }
  // A version-1 candidate cannot compute the sparse operator.
  Measurement m = run("naive", Spec{});
  EXPECT_EQ(m.verdict, Verdict::UNSUPPORTED) << m.detail;
  EXPECT_NE(m.detail.find("croq_gemm"), std::string::npos) << m.detail;
}

TEST(SparseGpu, TheDenseLibrariesRunOnThePrunedInputsWithoutCusparselt) {
  REQUIRE_GPU();
  Spec s;
  s.mode = "measure";
  s.library = "cublaslt";
  Measurement m = run("", s);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.library.value("name", ""), "cublasLt");
  EXPECT_TRUE(m.library["libraries"].contains("cublasLt"));
}

TEST(SparseGpu, TheBaselineMeasuresCusparseltAndTheDenseLibrariesOnTheSameInputs) {
  REQUIRE_GPU();
  for (const char* dtype : {"f16", "e4m3f16"}) {
    SCOPED_TRACE(dtype);
    Spec s;
    s.m = 1024;
    s.n = 1024;
    s.k = 1024;
    s.dtype = dtype;
    s.mode = "measure";
    s.library = "auto";
    Measurement m;
    try {
      m = run("", s);
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find("cuSPARSELt") != std::string::npos) GTEST_SKIP() << what;
      throw;
    }
    ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
    ASSERT_TRUE(m.library.contains("libraries")) << m.library.dump();
    EXPECT_TRUE(m.library["libraries"].contains("cusparseLt")) << m.library.dump();
    EXPECT_TRUE(m.library["libraries"].contains("cublasLt")) << m.library.dump();
    ASSERT_TRUE(m.library.contains("library_status"));
    EXPECT_TRUE(m.library["library_status"]["cusparselt"].value("loaded", false));
    // The baseline is the faster of them.
    double best = 1e30;
    for (auto it = m.library["libraries"].begin(); it != m.library["libraries"].end(); ++it) {
      best = std::min(best, it->value("median_ms", 1e30));
    }
    EXPECT_NEAR(m.timing->median_ms, best, 1e-9);
  }
}

}  // namespace
}  // namespace croq
