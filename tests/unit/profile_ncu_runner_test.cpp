// The ncu capture with a fake process runner: the command line that keeps the capture to the
// candidate's one launch, files moved into place only on success, and every ncu failure mapped to
// its message and exit code.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "croq/profile/ncu_runner.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

using namespace croq::profile;
using croq::ProcessResult;
using croq::ProcessSpec;

namespace {

const std::string k_raw = std::string(CROQ_TEST_DATA_DIR) + "/ncu/h200/cublas_nvjet_f16_4096_full_raw.csv";

class FakeRunner : public croq::ProcessRunner {
 public:
  std::function<ProcessResult(const ProcessSpec&)> capture;  // the profiling run
  std::string export_csv;                                    // what --import prints
  std::vector<ProcessSpec> calls;

  ProcessResult run(const ProcessSpec& spec) override {
    calls.push_back(spec);
    if (std::find(spec.argv.begin(), spec.argv.end(), "--import") != spec.argv.end()) {
      ProcessResult r = ok();
      r.out = export_csv;
      return r;
    }
    return capture(spec);
  }

  static ProcessResult ok() {
    ProcessResult r;
    r.started = true;
    r.exit_code = 0;
    r.wall_ms = 1234;
    return r;
  }
  // A capture that writes the report where --export says, like ncu does.
  static ProcessResult writes_report(const ProcessSpec& spec) {
    auto it = std::find(spec.argv.begin(), spec.argv.end(), "--export");
    if (it != spec.argv.end() && it + 1 != spec.argv.end()) croq::atomic_write(*(it + 1), "NCU-REP", false);
    ProcessResult r = ok();
    r.err = "==PROF== Connected to process 42\n==PROF== Disconnected from process 42\n";
    return r;
  }
};

std::string candidate_csv() {
  std::string text = croq::read_file_or_throw(k_raw);
  const std::string lib = "nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT";
  size_t p = text.find("\"" + lib + "\"");
  text.replace(p + 1, lib.size(), "naive_matmul(const __half *, const __half *, float *, long, long, long)");
  return text;
}

NcuCapture capture_for(const croq::fs::path& dir) {
  NcuCapture c;
  c.ncu = "ncu";
  c.program = {"/opt/croq/bin/croq-gpu-runner", "--candidate", "x.so", "--mode", "profile", "--warmup", "3"};
  c.out_dir = dir / "perf";
  c.stem = "ncu_iter001_naive_round1";
  return c;
}

template <class F>
croq::Error expect_error(F f) {
  try {
    f();
  } catch (const croq::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return croq::Error(croq::ExitCode::ok, "");
}

size_t files_in(const croq::fs::path& dir) {
  std::error_code ec;
  if (!croq::fs::is_directory(dir, ec)) return 0;
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : croq::fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST(NcuCapture, CommandKeepsTheCaptureToOneNvtxFilteredLaunchAndFilesLandAtomically) {
  croq::test::TempDir dir;
  FakeRunner fake;
  fake.capture = FakeRunner::writes_report;
  fake.export_csv = candidate_csv();
  NcuCaptureResult r = run_ncu_capture(capture_for(dir.path()), fake);

  ASSERT_EQ(fake.calls.size(), 2u);
  const auto& a = fake.calls[0].argv;
  auto has_pair = [&](const std::string& x, const std::string& y) {
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      if (a[i] == x && a[i + 1] == y) return true;
    }
    return false;
  };
  EXPECT_TRUE(has_pair("--nvtx-include", "croq_candidate/"));
  EXPECT_NE(std::find(a.begin(), a.end(), "--nvtx"), a.end());
  EXPECT_TRUE(has_pair("--clock-control", "none"));
  EXPECT_TRUE(has_pair("--set", "full"));
  EXPECT_TRUE(has_pair("--launch-count", "1"));
  EXPECT_TRUE(has_pair("--target-processes", "all"));
  EXPECT_TRUE(has_pair("--mode", "profile"));  // the runner's own arguments follow ncu's
  EXPECT_EQ(fake.calls[1].argv[1], "--import");
  EXPECT_EQ(fake.calls[1].env_set.at("LC_ALL"), "C");

  EXPECT_EQ(r.kernel, "naive_matmul(const __half *, const __half *, float *, long, long, long)");
  EXPECT_EQ(r.kernel_origin, "candidate");
  EXPECT_EQ(croq::read_file_or_throw(r.report), "NCU-REP");
  EXPECT_EQ(croq::read_file_or_throw(r.csv), fake.export_csv);
  EXPECT_EQ(r.report.filename(), "ncu_iter001_naive_round1.ncu-rep");
  EXPECT_EQ(files_in(dir / "perf"), 2u);  // no temporary left behind
}

TEST(NcuCapture, QuickPresetReadsTheClassifierSectionsOnly) {
  NcuCapture c = capture_for("/tmp");
  c.preset = NcuPreset::quick;
  auto a = ncu_profile_argv(c, "/tmp/x.ncu-rep");
  EXPECT_EQ(std::find(a.begin(), a.end(), "full"), a.end());
  EXPECT_NE(std::find(a.begin(), a.end(), "SpeedOfLight"), a.end());
  EXPECT_NE(std::find(a.begin(), a.end(), "WarpStateStats"), a.end());
}

TEST(NcuCapture, LibraryKernelCapturedInsteadOfTheCandidateIsRefusedAndNothingIsWritten) {
  croq::test::TempDir dir;
  FakeRunner fake;
  fake.capture = FakeRunner::writes_report;
  fake.export_csv = croq::read_file_or_throw(k_raw);  // the cuBLAS kernel
  croq::Error e = expect_error([&] { run_ncu_capture(capture_for(dir.path()), fake); });
  EXPECT_EQ(e.code(), croq::ExitCode::refused);
  EXPECT_NE(std::string(e.what()).find("nvjet_sm90_hss"), std::string::npos) << e.what();
  EXPECT_EQ(files_in(dir / "perf"), 0u);
}

TEST(NcuCapture, BaselineProfileExpectsTheLibraryKernel) {
  croq::test::TempDir dir;
  FakeRunner fake;
  fake.capture = FakeRunner::writes_report;
  fake.export_csv = croq::read_file_or_throw(k_raw);
  NcuCapture c = capture_for(dir.path());
  c.expect_library = true;
  NcuCaptureResult r = run_ncu_capture(c, fake);
  EXPECT_EQ(r.kernel_origin, "library");
}

TEST(NcuCapture, MissingNcuIsNoDevice) {
  croq::test::TempDir dir;
  FakeRunner fake;
  fake.capture = [](const ProcessSpec&) {
    ProcessResult r;
    r.spawn_error = "ncu: command not found";
    return r;
  };
  croq::Error e = expect_error([&] { run_ncu_capture(capture_for(dir.path()), fake); });
  EXPECT_EQ(e.code(), croq::ExitCode::no_device);
  EXPECT_NE(e.hint().find("--ncu"), std::string::npos);
}

TEST(NcuCapture, CounterPermissionErrorSaysHowToAllowProfiling) {
  croq::test::TempDir dir;
  FakeRunner fake;
  fake.capture = [](const ProcessSpec&) {
    ProcessResult r = FakeRunner::ok();
    r.exit_code = 1;
    r.err = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
            "Counters on the target device 0.\n";
    return r;
  };
  croq::Error e = expect_error([&] { run_ncu_capture(capture_for(dir.path()), fake); });
  EXPECT_EQ(e.code(), croq::ExitCode::failure);
  EXPECT_NE(std::string(e.what()).find("ERR_NVGPUCTRPERM"), std::string::npos);
  EXPECT_NE(e.hint().find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos);
  EXPECT_EQ(files_in(dir / "perf"), 0u);
}

TEST(NcuCapture, NoKernelMatchedIsNotFoundAndNamesTheFilter) {
  croq::test::TempDir dir;
  FakeRunner fake;
  fake.capture = [](const ProcessSpec&) {
    ProcessResult r = FakeRunner::ok();
    r.err = "==PROF== Connected to process 42\n==WARNING== No kernels were profiled.\n";
    return r;
  };
  croq::Error e = expect_error([&] { run_ncu_capture(capture_for(dir.path()), fake); });
  EXPECT_EQ(e.code(), croq::ExitCode::not_found);
  EXPECT_NE(std::string(e.what()).find("croq_candidate"), std::string::npos) << e.what();
}

TEST(NcuCapture, TimeoutIsAFailureWithWhatToTry) {
  croq::test::TempDir dir;
  FakeRunner fake;
  fake.capture = [](const ProcessSpec& s) {
    ProcessResult r = FakeRunner::ok();
    r.timed_out = true;
    r.wall_ms = static_cast<double>(s.timeout.count());
    return r;
  };
  NcuCapture c = capture_for(dir.path());
  c.timeout = std::chrono::seconds(7);
  croq::Error e = expect_error([&] { run_ncu_capture(c, fake); });
  EXPECT_EQ(e.code(), croq::ExitCode::failure);
  EXPECT_NE(std::string(e.what()).find("within 7 s"), std::string::npos) << e.what();
  EXPECT_NE(e.hint().find("--preset quick"), std::string::npos);
}

TEST(NcuCapture, FailingProgramIsCandidateFailed) {
  croq::test::TempDir dir;
  FakeRunner fake;
  fake.capture = [](const ProcessSpec&) {
    ProcessResult r = FakeRunner::ok();
    r.exit_code = 1;
    r.err = "croq-gpu-runner: CUDA error: an illegal memory access was encountered\n"
            "==ERROR== The application returned an error code (1).\n";
    return r;
  };
  croq::Error e = expect_error([&] { run_ncu_capture(capture_for(dir.path()), fake); });
  EXPECT_EQ(e.code(), croq::ExitCode::candidate_failed);
  EXPECT_NE(std::string(e.what()).find("illegal memory access"), std::string::npos) << e.what();
}
