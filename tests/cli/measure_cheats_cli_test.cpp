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

TEST_F(MeasureCheats, ACacheBySampledContentIsCaughtByTheChangedColumn) {
  auto r = measure("cache_content");
  EXPECT_EQ(r.rc, 8);
  EXPECT_EQ(r.doc["verdict"], "VERIFY_FAIL") << r.doc["detail"];
  EXPECT_NE(r.doc["reason"], "second_seed_mismatch") << "caught before the second seed";
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

}  // namespace
}  // namespace croq
