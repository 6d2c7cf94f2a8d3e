// GPU tests: croq-gpu-runner on the test candidates (tests/gpu/kernels) and the library baseline.
// Each test skips with a reason when there is no GPU (or the runner was not built), so this binary
// passes on CI; on a GPU machine they check that every candidate gets its verdict through the
// same process boundary `croq measure` uses (interpret_runner maps crashes and hangs).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "croq/gpu/device_key.hpp"
#include "croq/measure/elf_scan.hpp"
#include "croq/measure/invoke.hpp"

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

// Empty when the GPU tests can run; otherwise why not.
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

#define REQUIRE_GPU()                                 \
  do {                                                \
    if (!skip_reason().empty()) GTEST_SKIP() << skip_reason(); \
  } while (0)

struct RunSpec {
  int64_t m = 256, n = 256, k = 256;
  std::string dtype = "f16f32";
  std::string layout = "auto";
  std::string mode = "measure";
  std::string library;
  std::string op = "matmul";
  int timeout_s = 60;
};

Measurement run(const std::string& candidate, const RunSpec& r) {
  MeasureJob job;
  job.program = runner_path();
  job.options.candidate = candidate.empty() ? "" : kernel(candidate).string();
  job.options.library = r.library;
  job.options.op = r.op;
  job.skeleton.problem.op = r.op;
  job.options.m = r.m;
  job.options.n = r.n;
  job.options.k = r.k;
  job.options.dtype = r.dtype;
  job.options.b_layout = r.layout;
  job.options.seed = 12345;
  job.options.mode = r.mode == "profile" ? RunMode::profile : (r.mode == "verify" ? RunMode::verify : RunMode::measure);
  job.options.warmup = 2;
  job.options.min_reps = 5;
  job.options.max_reps = 50;
  job.options.time_budget_ms = 300;
  job.timeout = std::chrono::seconds(r.timeout_s);
  job.skeleton.problem.m = r.m;
  job.skeleton.problem.n = r.n;
  job.skeleton.problem.k = r.k;
  SystemProcessRunner pr;
  return run_measure_job(job, pr);
}

TEST(GpuRunner, NaiveKernelPassesEveryDtypeAndLayout) {
  REQUIRE_GPU();
  for (const char* dtype : {"f16f32", "f16", "bf16f32", "bf16", "e4m3f16", "e4m3bf16", "f32", "tf32"}) {
    for (const char* layout : {"row", "col"}) {
      RunSpec r;
      r.m = 128;
      r.n = 96;
      r.k = 64;
      r.dtype = dtype;
      r.layout = layout;
      Measurement m = run("naive", r);
      EXPECT_EQ(verdict_name(m.verdict), std::string("PASS")) << dtype << " " << layout << ": " << m.reason << " " << m.detail;
      EXPECT_EQ(m.problem.b_layout, layout);
      EXPECT_TRUE(m.verification.second_seed_passed.value_or(false));
      EXPECT_TRUE(m.verification.rechecked_after_timing.value_or(false));
    }
  }
}

// FP8 with scales: the naive kernel (kernel ABI v2) applies per-tensor scales (dense e4m3) and
// block scales (the block-scaled operator, on shapes whose last scale blocks are partial); the
// library baselines (cuBLASLt with the scales, or croq's reference marked as not library-grade
// where cuBLASLt has no block-scaled algorithm) pass the same verification, except dense e4m3 with K
// not a multiple of 16, which cuBLASLt does not run (UNSUPPORTED, as measured on the H200).
TEST(GpuRunner, ScaledFp8OperatorsPassTheirVerification) {
  REQUIRE_GPU();
  struct Case {
    const char* op;
    const char* dtype;
    int64_t m, n, k;
  };
  for (const Case& c : {Case{"matmul", "e4m3bf16", 128, 96, 256}, Case{"matmul", "e4m3f16", 100, 70, 130},
                        Case{"blockscaled", "e4m3bf16", 256, 384, 512}, Case{"blockscaled", "e4m3bf16", 200, 300, 400}}) {
    SCOPED_TRACE(std::string(c.op) + " " + c.dtype + " " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                 std::to_string(c.k));
    RunSpec r;
    r.op = c.op;
    r.dtype = c.dtype;
    r.m = c.m;
    r.n = c.n;
    r.k = c.k;
    Measurement m = run("naive", r);
    EXPECT_EQ(verdict_name(m.verdict), std::string("PASS")) << m.reason << " " << m.detail;
    EXPECT_EQ(m.candidate_abi_version, 2);
    r.library = "auto";
    Measurement b = run("", r);
    if (std::string(c.op) == "matmul" && c.k % 16 != 0) {
      // cuBLASLt's FP8 matmul needs K and the leading dimensions in multiples of 16 (so does the
      // hopper_gemm family): measured on the H200, the baseline is UNSUPPORTED, saying so.
      EXPECT_EQ(verdict_name(b.verdict), std::string("UNSUPPORTED")) << b.reason << " " << b.library.dump();
      EXPECT_NE(b.detail.find("no variant"), std::string::npos) << b.detail;
      continue;
    }
    EXPECT_EQ(verdict_name(b.verdict), std::string("PASS")) << b.reason << " " << b.detail << " " << b.library.dump();
    // cuBLASLt reads the block-scaled operator's scales as the operator stores them (A's M-major,
    // [ceil(K/128), M]): the variant chosen hands both over untransposed (scale_layout 0).
    if (std::string(c.op) == "blockscaled" && b.library.value("name", std::string()) == "cublasLt") {
      EXPECT_EQ(b.library["algo"].value("scale_layout", -1), 0) << b.library["algo"].dump();
    }
  }
}

TEST(GpuRunner, NaiveKernelPassesShapesThatAreNotMultiplesOfATile) {
  REQUIRE_GPU();
  RunSpec r;
  r.m = 100;
  r.n = 70;
  r.k = 33;
  Measurement m = run("naive", r);
  EXPECT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_EQ(m.verification.elements, 7000);
}

TEST(GpuRunner, TensorCoreKernelPassesAndIsTimed) {
  REQUIRE_GPU();
  RunSpec r;
  r.m = r.n = r.k = 1024;
  Measurement m = run("wmma", r);
  ASSERT_EQ(m.verdict, Verdict::PASS) << m.detail;
  ASSERT_TRUE(m.timing);
  EXPECT_GT(m.tflops.value_or(0), 1.0);
  EXPECT_GE(m.timing->reps, 5);
  EXPECT_EQ(m.timing->method, "cuda_events");
  EXPECT_TRUE(m.device.sm_clock_mhz.has_value());
}

struct Broken {
  const char* mode;
  Verdict verdict;
  const char* reason;
};

TEST(GpuRunner, BrokenKernelsGetTheirVerdicts) {
  REQUIRE_GPU();
  const Broken cases[] = {
      {"wrong_values", Verdict::VERIFY_FAIL, "mismatch"},
      {"partial_write", Verdict::VERIFY_FAIL, "unwritten_output"},
      {"oob_write", Verdict::VERIFY_FAIL, "out_of_bounds_write"},
      {"skip_work", Verdict::IMPOSSIBLE, "above_peak"},
      {"stale_output", Verdict::IMPOSSIBLE, "above_peak"},
      // B is packed once per pointer, but a column of B changes before every launch: the first
      // timed launch compared (or the re-check) finds the stale product.
      {"stale_prepack", Verdict::VERIFY_FAIL, "timed_mismatch"},
      {"illegal_address", Verdict::RUNTIME_FAIL, "cuda_error"},
      {"host_segfault", Verdict::SEGFAULT, "crashed"},
      {"launch_failed", Verdict::RUNTIME_FAIL, "launch_status"},
      {"unsupported", Verdict::UNSUPPORTED, "candidate_unsupported"},
      {"escape_stream", Verdict::IMPOSSIBLE, "above_peak"},
  };
  for (const Broken& b : cases) {
    RunSpec r;
    r.m = r.n = r.k = 2048;
    Measurement m = run(b.mode, r);
    EXPECT_EQ(verdict_name(m.verdict), std::string(verdict_name(b.verdict))) << b.mode << ": " << m.detail;
    if (std::string(b.reason) == "timed_mismatch") {
      EXPECT_TRUE(m.reason == "timed_mismatch" || m.reason == "recheck_mismatch") << b.mode << ": " << m.reason;
    } else {
      EXPECT_EQ(m.reason, b.reason) << b.mode << ": " << m.detail;
    }
  }
}

TEST(GpuRunner, SynchronisingLaunchPassesWithAWarningAndTheFlag) {
  REQUIRE_GPU();
  Measurement m = run("sync_inside", RunSpec{});
  EXPECT_EQ(m.verdict, Verdict::PASS) << m.detail;
  ASSERT_TRUE(m.timing);
  EXPECT_FALSE(m.timing->stream_held);
  EXPECT_FALSE(m.warnings.empty());
  EXPECT_NE(std::find(m.flags.begin(), m.flags.end(), "launch_waits"), m.flags.end());
}

// The cheating candidates of kernels/cheats.cu (WMMA, f16 -> f32): each skips the last tenth of
// C's rows when it believes it is timed. Checked and timed launches are made the same way and a
// timed launch is compared at random after it ran: the output sniffer never sees anything but the
// poison (it does the work every time: PASS), the call counter and the timing-gap watcher are
// caught; the host sniffer and the synchronising one are found by the purity scan (croq measure
// refuses them in an enforced task), and the synchronising one also waits for the held stream.
TEST(GpuRunner, CheatingCandidatesDoTheWorkOrAreCaught) {
  REQUIRE_GPU();
  RunSpec r;
  r.m = r.n = r.k = 1024;
  r.layout = "row";
  auto cheat = [&](const std::string& mode) { return run("cheat_" + mode, r); };
  Measurement honest = cheat("honest");
  ASSERT_EQ(honest.verdict, Verdict::PASS) << honest.detail;
  EXPECT_GE(honest.verification.timed_checked, 1);
  Measurement sniff = cheat("sniff_output");
  EXPECT_EQ(sniff.verdict, Verdict::PASS) << sniff.detail;
  for (const char* mode : {"count_calls", "timing_gap"}) {
    Measurement m = cheat(mode);
    EXPECT_EQ(m.verdict, Verdict::VERIFY_FAIL) << mode << ": " << m.reason << " " << m.detail;
  }
  EXPECT_EQ(scan_candidate(kernel("cheat_host_sniff")).synchronising_summary(), "calls cudaMemcpy");
  EXPECT_EQ(scan_candidate(kernel("cheat_sync_inside")).synchronising_summary(), "calls cudaStreamSynchronize");
  EXPECT_TRUE(scan_candidate(kernel("cheat_honest")).synchronising.empty());
  Measurement sync = cheat("sync_inside");
  EXPECT_NE(std::find(sync.flags.begin(), sync.flags.end(), "launch_waits"), sync.flags.end()) << sync.detail;
  // A target that writes into its inputs has the reference, made from them, agree with it.
  Measurement wrote = cheat("write_input");
  EXPECT_EQ(wrote.verdict, Verdict::VERIFY_FAIL) << wrote.detail;
  EXPECT_EQ(wrote.reason, "input_modified") << wrote.detail;
  EXPECT_NE(wrote.detail.find("wrote into A"), std::string::npos) << wrote.detail;
}

// A candidate starts no process: croq-gpu-runner forbids the call (seccomp) before loading it, as
// croq-cpu-runner does, while the CUDA driver's own threads stay allowed. The candidate's
// constructor clones by the raw system call (the purity scan sees no import); its child would
// write the marker file.
TEST(GpuRunner, CheatingCandidatesStartNoProcess) {
  REQUIRE_GPU();
  const fs::path marker = fs::temp_directory_path() / ("croq-gpu-escaped-" + std::to_string(::getpid()));
  fs::remove(marker);
  ::setenv("CROQ_TEST_MARKER", marker.c_str(), 1);
  RunSpec r;
  r.m = r.n = r.k = 1024;
  r.layout = "row";
  Measurement m = run("cheat_start_process", r);
  ::unsetenv("CROQ_TEST_MARKER");
  EXPECT_EQ(m.verdict, Verdict::PASS) << m.reason << " " << m.detail;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(fs::exists(marker)) << "the candidate's child ran";
  fs::remove(marker);
}

TEST(GpuRunner, InfiniteLoopIsAHangAndTheGpuStaysUsable) {
  REQUIRE_GPU();
  RunSpec r;
  r.timeout_s = 8;
  Measurement hang = run("infinite_loop", r);
  EXPECT_EQ(hang.verdict, Verdict::HANG) << hang.detail;
  Measurement after = run("naive", RunSpec{});
  EXPECT_EQ(after.verdict, Verdict::PASS) << after.detail;
}

TEST(GpuRunner, LibraryBaselineRecordsTheAlgorithmItChose) {
  REQUIRE_GPU();
  for (const char* dtype : {"f16f32", "bf16f32", "e4m3f16"}) {
    RunSpec r;
    r.m = r.n = r.k = 1024;
    r.dtype = dtype;
    r.library = "auto";
    Measurement m = run("", r);
    ASSERT_EQ(m.verdict, Verdict::PASS) << dtype << ": " << m.detail;
    EXPECT_EQ(m.kind, "baseline");
    EXPECT_GT(m.tflops.value_or(0), 10.0) << dtype;
    ASSERT_TRUE(m.library.is_object());
    EXPECT_TRUE(m.library.contains("algo"));
    EXPECT_TRUE(m.library.contains("default"));
  }
}

TEST(GpuRunner, ProfileModeRunsWithoutReferenceOrTiming) {
  REQUIRE_GPU();
  RunSpec r;
  r.mode = "profile";
  Measurement m = run("naive", r);
  EXPECT_EQ(m.verdict, Verdict::PASS) << m.detail;
  EXPECT_FALSE(m.timing.has_value());
  EXPECT_FALSE(m.verification.passed.has_value());
}

}  // namespace
}  // namespace croq
