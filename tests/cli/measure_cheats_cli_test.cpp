// Cheating candidates (tests/data/measure/cheat_candidate.cpp) through the real croq measure and
// croq-cpu-runner: each tries to tell a checked launch from a timed one and skip work when it
// believes it is timed. A checked launch now looks exactly like a timed one (the same buffers, C
// poisoned and one column of B changed before every launch, timed launches verified at random
// after they ran), so each cheat either does the work every time or is caught; one that calls a
// synchronising function is refused before it runs in an enforced task. The CUDA versions run in
// the GPU tests (tests/gpu) and bench/gpu/hardening_evidence.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "croq/gpu/device_key.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;
using test::run_croq;

const char* k_key = "matmul_f32_64x48x32";

class MeasureCheats : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!find_executable("g++")) GTEST_SKIP() << "no g++ to build the test candidates";
    ASSERT_TRUE(fs::exists(fs::path(CROQ_BINARY_DIR) / "bin" / "croq-cpu-runner")) << "build croq-cpu-runner first";
    fs::create_directories(m_dir / "leases");
    fs::create_directories(m_dir.path() / "tuning");
    m_log = m_dir / "skips.log";
    m_env = {{"CROQ_LEASE_DIR", (m_dir / "leases").string()}, {"CROQ_CHEAT_LOG", m_log.string()}};
  }

  fs::path build(const std::string& mode) {
    const fs::path bin = m_dir.path() / "tuning" / cpu_device_key() / "cpp" / "bin" / k_key / "m1";
    fs::create_directories(bin);
    const fs::path out = bin / ("iter001_" + mode + ".so");
    ProcessSpec spec;
    spec.argv = {"g++", "-O1", "-shared", "-fPIC", "-DCROQ_TEST_MODE=" + mode,
                 "-I" + std::string(CROQ_SOURCE_DIR) + "/include",
                 std::string(CROQ_TEST_DATA_DIR) + "/measure/cheat_candidate.cpp", "-o", out.string()};
    spec.timeout = std::chrono::seconds(120);
    SystemProcessRunner r;
    ProcessResult res = r.run(spec);
    EXPECT_TRUE(res.ok()) << res.err;
    return out;
  }

  test::CroqRun measure(const std::string& mode) {
    build(mode);
    return run_croq(m_dir.path(),
                    {"measure", "--dsl", "cpp", "--shape-key", k_key, "--model", "m1", "--iter", "iter001_" + mode,
                     "--warmup", "2", "--min-reps", "30", "--max-reps", "60", "--cv-target", "0", "--time-budget-ms",
                     "2000"},
                    m_env);
  }

  int skips() const {
    std::ifstream in(m_log);
    int n = 0;
    std::string line;
    while (std::getline(in, line)) ++n;
    return n;
  }

  test::TempDir m_dir;
  fs::path m_log;
  std::map<std::string, std::string> m_env;
};

TEST_F(MeasureCheats, SniffingTheOutputFindsThePoisonBeforeEveryLaunch) {
  auto r = measure("sniff_output");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["verdict"], "PASS") << r.doc["detail"];
  EXPECT_EQ(skips(), 0) << "a launch saw an output that was not the poison: it could tell a timed launch";
  EXPECT_GE(r.doc["verification"]["timed_checked"].get<int>(), 1);
}

TEST_F(MeasureCheats, CountingCallsIsCaughtByARandomlyVerifiedTimedLaunch) {
  auto r = measure("count_calls");
  EXPECT_EQ(r.rc, 8);
  EXPECT_EQ(r.doc["verdict"], "VERIFY_FAIL");
  EXPECT_EQ(r.doc["reason"], "timed_mismatch") << r.doc["detail"];
  EXPECT_GT(skips(), 0);
}

// Timing-dependent work: the cheat computes after a long pause (where checks used to come, after the
// reference and a comparison) and skips when called back to back (as timed launches are). The
// launches it skips are timed ones, and a timed launch is compared at random after it ran.
TEST_F(MeasureCheats, TimingDependentWorkIsCaughtByARandomlyVerifiedTimedLaunch) {
  auto r = measure("timing_gap");
  ASSERT_GT(skips(), 0) << "the cheat never skipped: the test shows nothing";
  EXPECT_EQ(r.rc, 8);
  EXPECT_EQ(r.doc["verdict"], "VERIFY_FAIL") << r.doc["detail"];
  EXPECT_EQ(r.doc["reason"], "timed_mismatch") << r.doc["detail"];
}

TEST_F(MeasureCheats, ACacheByPointerIsCaughtByTheSecondSeedOrTheChangedColumn) {
  auto r = measure("cache_pointer");
  EXPECT_EQ(r.rc, 8);
  EXPECT_EQ(r.doc["verdict"], "VERIFY_FAIL") << r.doc["detail"];
}

// A cache keyed by a sample of the inputs' contents: all of B is fresh before every launch, so the
// sample never repeats and the cache never answers (when one column of B changed, a column outside
// the sample made it stale and a randomly compared launch caught it).
TEST_F(MeasureCheats, ACacheBySampledContentNeverHitsAsAllOfBIsFresh) {
  auto r = measure("cache_content");
  EXPECT_EQ(r.doc["verdict"], "PASS") << r.doc["detail"];
  EXPECT_EQ(skips(), 0) << "a launch answered from the cache";
}

TEST_F(MeasureCheats, ASynchronisingCallIsRefusedInAnEnforcedTaskAndFlaggedOtherwise) {
  auto advisory = measure("sync_call");
  EXPECT_EQ(advisory.doc["verdict"], "PASS") << advisory.doc["detail"];
  const json& flags = advisory.doc["flags"];
  EXPECT_NE(std::find(flags.begin(), flags.end(), "synchronising_call"), flags.end()) << advisory.out;

  auto begin = run_croq(m_dir.path(),
                        {"protocol", "begin", "--dsl", "cpp", "--shape-key", k_key, "--model", "m1", "--mode", "enforced"},
                        m_env);
  ASSERT_EQ(begin.rc, 0) << begin.err;
  auto enforced = measure("sync_call");
  EXPECT_EQ(enforced.rc, 8);
  EXPECT_EQ(enforced.doc["verdict"], "LIBRARY_CALL_FORBIDDEN");
  EXPECT_EQ(enforced.doc["reason"], "synchronising_call");
  EXPECT_NE(enforced.doc["detail"].get<std::string>().find("calls cudaDeviceSynchronize"), std::string::npos);
  EXPECT_FALSE(enforced.doc["ran"].get<bool>());
}

// Version-2 candidates (tests/data/measure/abi2_cheat_candidate.cpp), each wrapped around croq's
// own cpp reference of its operator: built into the task of `key` and measured.
class Abi2Cheats : public MeasureCheats {
 protected:
  test::CroqRun measure2(const std::string& op, const std::string& mode, const std::string& key) {
    const fs::path bin = m_dir.path() / "tuning" / cpu_device_key() / "cpp" / "bin" / key / "m1";
    fs::create_directories(bin);
    const fs::path out = bin / ("iter001_" + mode + ".so");
    ProcessSpec spec;
    spec.argv = {"g++", "-O2", "-shared", "-fPIC", "-pthread", "-DCROQ_TEST_MODE=" + mode,
                 "-DCROQ_TEST_OPERATOR_" + op + "=1", "-I" + std::string(CROQ_SOURCE_DIR) + "/include",
                 std::string(CROQ_TEST_DATA_DIR) + "/measure/abi2_cheat_candidate.cpp", "-o", out.string()};
    spec.timeout = std::chrono::seconds(120);
    SystemProcessRunner r;
    ProcessResult res = r.run(spec);
    EXPECT_TRUE(res.ok()) << res.err;
    return run_croq(m_dir.path(),
                    {"measure", "--dsl", "cpp", "--shape-key", key, "--model", "m1", "--iter", "iter001_" + mode,
                     "--warmup", "2", "--min-reps", "10", "--max-reps", "20", "--time-budget-ms", "1500"},
                    m_env);
  }
};

const char* k_blocks_key = "blockscaled_e4m3bf16_128x256x512";
const char* k_sparse_key = "gemm_sp_f32_64x128x256";
const char* k_dense_key = "matmul_f32_256x128x256";

// The kernel ABI passes the inputs as const, and croq's reference is made from them after a launch:
// a candidate that wrote into them (A, B, the metadata, the scales) could have the reference agree
// with a wrong output, half of the work skipped. Now the inputs are compared with what the runner
// wrote before every comparison, after croq_gemm_prepare and after the timing: VERIFY_FAIL
// input_modified. The same kernels left honest pass.
TEST_F(Abi2Cheats, ACandidateThatWritesIntoItsInputsIsInputModified) {
  auto honest = measure2("blockscaled", "honest", k_blocks_key);
  EXPECT_EQ(honest.doc["verdict"], "PASS") << honest.out << honest.err;
  auto scales = measure2("blockscaled", "zero_scales", k_blocks_key);
  EXPECT_EQ(scales.rc, 8);
  EXPECT_EQ(scales.doc["verdict"], "VERIFY_FAIL") << scales.doc["detail"];
  EXPECT_EQ(scales.doc["reason"], "input_modified") << scales.doc["detail"];
  EXPECT_NE(scales.doc["detail"].get<std::string>().find("A's scales"), std::string::npos) << scales.doc["detail"];

  auto sparse_honest = measure2("gemm_sp", "honest", k_sparse_key);
  EXPECT_EQ(sparse_honest.doc["verdict"], "PASS") << sparse_honest.out << sparse_honest.err;
  auto prepare = measure2("gemm_sp", "prepare_writes", k_sparse_key);
  EXPECT_EQ(prepare.rc, 8);
  EXPECT_EQ(prepare.doc["reason"], "input_modified") << prepare.doc["detail"];
  EXPECT_NE(prepare.doc["detail"].get<std::string>().find("after croq_gemm_prepare"), std::string::npos)
      << prepare.doc["detail"];
}

// Work left to a thread after the launch returned is outside the timed interval: the output is
// compared as the launch left it when it returned (the rows the thread writes later are the poison).
TEST_F(Abi2Cheats, RowsFinishedAfterTheLaunchReturnedAreNotTheLaunchsOutput) {
  auto honest = measure2("matmul", "honest", k_dense_key);
  EXPECT_EQ(honest.doc["verdict"], "PASS") << honest.out << honest.err;
  auto late = measure2("matmul", "late_rows", k_dense_key);
  EXPECT_EQ(late.rc, 8);
  EXPECT_EQ(late.doc["verdict"], "VERIFY_FAIL") << late.doc["detail"];
  // Caught at the first comparison (unwritten_output) or at a timed launch verified at random
  // (timed_mismatch), whichever the thread's timing meets first; either way it is the poison left in
  // the rows the launch did not write.
  const std::string reason = late.doc["reason"];
  EXPECT_TRUE(reason == "unwritten_output" || reason == "timed_mismatch") << reason << ": " << late.doc["detail"];
  EXPECT_NE(late.doc["detail"].get<std::string>().find("NaN or infinite"), std::string::npos) << late.doc["detail"];
}

// A kernel that reads the block scales first and skips the k blocks whose share of a sum is below
// the tolerance's reach (scales' product under 3e-4 of the largest block's) saves nothing: every
// block of the check set keeps at least 1/256 of the largest's scales. Before, block scales spanned
// 10^4 per tensor: it skipped 15 % of the multiply-adds and passed.
TEST_F(Abi2Cheats, NoBlockOfTheCheckSetIsNegligible) {
  auto r = measure2("blockscaled", "small_blocks", k_blocks_key);
  std::ifstream in(m_log);
  std::string word, of;
  long long skipped = 0, total = 0, s = 0, n = 0;
  while (in >> word >> s >> of >> n) skipped += s, total += n;
  ASSERT_GT(total, 0) << "the candidate logged no launch: " << r.out << r.err;
  if (r.doc["verdict"] == "PASS") {
    EXPECT_EQ(skipped, 0) << "skipped " << skipped << " of " << total << " multiply-adds and passed";
  } else {
    EXPECT_EQ(r.doc["verdict"], "VERIFY_FAIL") << r.doc["detail"];
  }
}

// An incremental cache: a candidate that keeps its own copy of B finds every column changed before
// every launch (before, one: it recomputed one column of C and copied the rest, 40x the honest
// figure, PASS).
TEST_F(Abi2Cheats, EveryLaunchFindsAllOfBChanged) {
  auto r = measure2("matmul", "count_changed", k_dense_key);
  EXPECT_EQ(r.doc["verdict"], "PASS") << r.doc["detail"];
  std::ifstream in(m_log);
  std::string line;
  int launches = 0;
  while (std::getline(in, line)) {
    ++launches;
    EXPECT_EQ(std::stoll(line), 128) << "columns of B changed since the candidate's last launch on that set";
  }
  EXPECT_GT(launches, 10);
}

// OpenBLAS is the cpp backend's baseline: a candidate that calls it (here under a name of its own,
// bound to cblas_sgemm, so no source scan sees the call) is refused before it runs.
TEST_F(Abi2Cheats, ACandidateThatCallsTheBaselinesBlasIsRefused) {
  auto r = measure2("matmul", "calls_blas", k_dense_key);
  EXPECT_EQ(r.rc, 8);
  EXPECT_EQ(r.doc["verdict"], "LIBRARY_CALL_FORBIDDEN") << r.doc["detail"];
  EXPECT_NE(r.doc["detail"].get<std::string>().find("cblas_sgemm"), std::string::npos) << r.doc["detail"];
  EXPECT_FALSE(r.doc["ran"].get<bool>());
}

}  // namespace
}  // namespace croq
