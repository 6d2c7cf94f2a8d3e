// Issue 25, point 2, as the attack was tried: store-round with a measurement file written by hand
// outside the workspace (5000 TFLOPS for 64^3, candidate.sha256 "00", no binary behind it), and a
// typed BASELINE. An enforced task refuses both and writes nothing; an advisory task stores the
// hand-written figure, marked unverified rather than measured.
#include <gtest/gtest.h>

#include "croq/gpu/device_key.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;
using test::run_croq;

const char* k_key = "matmul_f32_64x64x64";

class ProvenanceAttack : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(m_dir.path() / "tuning"); }
  // `croq <verb words> <this task> <rest>`
  test::CroqRun croq(std::vector<std::string> verb, const std::vector<std::string>& rest = {}) {
    verb.insert(verb.end(), {"--dsl", "cpp", "--shape-key", k_key, "--model", "m1"});
    verb.insert(verb.end(), rest.begin(), rest.end());
    return run_croq(m_dir.path(), verb);
  }
  fs::path idea_log() const {
    return m_dir.path() / "tuning" / cpu_device_key() / "cpp" / "logs" / k_key / "m1" / "idea-log.jsonl";
  }
  fs::path fake_measurement() {
    json fake = {{"schema", "croq-measurement-v1"},
                 {"kind", "candidate"},
                 {"verdict", "PASS"},
                 {"reason", "ok"},
                 {"candidate", {{"path", "/nowhere/iter001_fake.so"}, {"sha256", "00"}}},
                 {"problem", {{"op", "matmul"}, {"m", 64}, {"n", 64}, {"k", 64}, {"dtype", "f32"}}},
                 {"tflops", 5000.0},
                 {"timing", {{"median_ms", 1e-7}, {"cv", 0.0}, {"reps", 100}}},
                 {"source", "measured"}};
    fs::path f = m_outside / "fake.json";
    atomic_write(f, fake.dump());
    return f;
  }
  std::vector<std::string> keep_args(const fs::path& file) {
    return {"--iter", "iter001", "--kernel", "iter001_fake", "--round", "0", "--decision", "KEEP", "--measurement",
            file.string()};
  }
  test::TempDir m_dir;
  test::TempDir m_outside;
};

TEST_F(ProvenanceAttack, AnEnforcedTaskRefusesAHandWrittenMeasurement) {
  ASSERT_EQ(croq({"protocol", "begin"}).rc, 0);
  auto r = croq({"store-round"}, keep_args(fake_measurement()));
  EXPECT_EQ(r.rc, 5) << r.out << r.err;
  EXPECT_EQ(r.doc["error"].value("rule", ""), "measurement_from_croq") << r.out;
  EXPECT_NE(r.doc["error"].value("message", "").find("not a measurement croq wrote"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(idea_log())) << "nothing may be stored";
}

TEST_F(ProvenanceAttack, AnEnforcedTaskRefusesATypedBaseline) {
  ASSERT_EQ(croq({"protocol", "begin"}).rc, 0);
  auto r = croq({"store-round"}, {"--iter", "iter000", "--kernel", "iter000_openblas", "--decision", "BASELINE",
                                  "--tflops", "5000"});
  EXPECT_EQ(r.rc, 5) << r.out << r.err;
  EXPECT_EQ(r.doc["error"].value("rule", ""), "measured_numbers_only") << r.out;
  EXPECT_FALSE(fs::exists(idea_log()));
  // Nor as a hand-written baseline document.
  json base = {{"schema", "croq-measurement-v1"}, {"kind", "baseline"}, {"verdict", "PASS"},
               {"problem", {{"m", 64}, {"n", 64}, {"k", 64}}}, {"tflops", 5000.0},
               {"timing", {{"median_ms", 1e-7}, {"cv", 0.0}, {"reps", 100}}}};
  atomic_write(m_outside / "base.json", base.dump());
  r = croq({"store-round"}, {"--iter", "iter000", "--kernel", "iter000_openblas", "--decision", "BASELINE",
                             "--measurement", (m_outside / "base.json").string()});
  EXPECT_EQ(r.rc, 5) << r.out << r.err;
  EXPECT_EQ(r.doc["error"].value("rule", ""), "measurement_from_croq") << r.out;
  EXPECT_FALSE(fs::exists(idea_log()));
}

TEST_F(ProvenanceAttack, AnAdvisoryTaskStoresItAsUnverifiedNotMeasured) {
  auto r = croq({"store-round"}, keep_args(fake_measurement()));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.doc["record"]["source"], "unverified");
  EXPECT_NE(r.doc["record"]["measurement"].value("unverified", "").find("not a measurement croq wrote"),
            std::string::npos);
  EXPECT_NE(r.err.find("source unverified"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace croq
