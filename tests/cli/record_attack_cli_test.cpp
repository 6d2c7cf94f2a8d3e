// Issue 25, point 6 on the command line: `--tflops 0x10` was read as 16 (and CLI11 alone reads
// "010" as 8 and a float option's "inf"), `--extra` could override core fields of a record.
// Every numeric option now takes decimal text only (a leading zero included); --extra only adds.
#include <gtest/gtest.h>

#include "croq/gpu/device_key.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;
using test::run_croq;

const char* k_key = "matmul_f32_64x64x64";

class RecordAttack : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(m_dir.path() / "tuning"); }
  test::CroqRun croq(std::vector<std::string> verb, const std::vector<std::string>& rest = {}) {
    verb.insert(verb.end(), {"--dsl", "cpp", "--shape-key", k_key, "--model", "m1"});
    verb.insert(verb.end(), rest.begin(), rest.end());
    return run_croq(m_dir.path(), verb);
  }
  fs::path idea_log() const {
    return m_dir.path() / "tuning" / cpu_device_key() / "cpp" / "logs" / k_key / "m1" / "idea-log.jsonl";
  }
  test::TempDir m_dir;
};

TEST_F(RecordAttack, NumericOptionsTakeDecimalTextOnly) {
  const std::vector<std::string> baseline = {"--iter", "iter000", "--kernel", "iter000_openblas", "--decision", "BASELINE"};
  auto with = [&](std::vector<std::string> a, std::vector<std::string> b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  for (const char* bad : {"0x10", "inf", "nan", "1e999", " 16"}) {
    auto r = croq({"store-round"}, with(baseline, {"--tflops", bad}));
    EXPECT_EQ(r.rc, 2) << bad << ": " << r.out;
    EXPECT_NE(r.doc["error"].value("message", "").find("--tflops"), std::string::npos) << r.out;
  }
  EXPECT_FALSE(fs::exists(idea_log()));
  // Options CLI11 converts itself: an integer (hex and octal forms) and a float.
  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {"protocol", "begin", "--rounds", "0x10"},
           {"store-round", "--lock-timeout", "0x10"},
           {"measure", "--iter", "iter001_x", "--cv-target", "inf"},
           {"measure", "--iter", "iter001_x", "--warmup", "0x10"},
           {"measure", "--iter", "iter001_x", "--seed", "0x10"},
           {"measure", "--iter", "iter001_x", "--rest-ratio", "0x1"}}) {
    const std::string verb = bad[0] == "protocol" ? "protocol begin" : bad[0];
    std::vector<std::string> words = bad[0] == "protocol" ? std::vector<std::string>{"protocol", "begin"}
                                                          : std::vector<std::string>{bad[0]};
    std::vector<std::string> rest(bad.begin() + static_cast<long>(words.size()), bad.end());
    auto r = croq(words, rest);
    EXPECT_EQ(r.rc, 2) << verb << " " << rest[rest.size() - 1] << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("decimal"), std::string::npos) << r.out;
  }
  // Decimal text is fine, and a leading zero is not octal: 010 rounds are 10, not 8.
  EXPECT_EQ(croq({"store-round"}, with(baseline, {"--tflops", "16"})).rc, 0);
  auto begin = croq({"protocol", "begin"}, {"--rounds", "010"});
  ASSERT_EQ(begin.rc, 0) << begin.out << begin.err;
  EXPECT_EQ(begin.doc["target_rounds"], 10);
}

TEST_F(RecordAttack, ExtraCannotOverrideCoreRecordFields) {
  const std::vector<std::string> store = {"--iter", "iter000", "--kernel", "iter000_openblas", "--decision",
                                          "BASELINE", "--tflops", "10", "--extra"};
  for (const char* extra : {R"({"schema":"croq-round-v0"})", R"({"planned_iter":"iter005"})", R"({"source":"measured"})",
                            R"({"round":7})", R"({"measurement":{"verdict":"PASS"}})"}) {
    std::vector<std::string> args = store;
    args.push_back(extra);
    auto r = croq({"store-round"}, args);
    EXPECT_EQ(r.rc, 2) << extra << ": " << r.out;
    EXPECT_NE(r.doc["error"].value("message", "").find("--extra may not set"), std::string::npos) << r.out;
  }
  EXPECT_FALSE(fs::exists(idea_log()));
  auto r = croq({"attempt"}, {"--tag", "tma", "--reason", "code_bug", "--extra", R"({"planned_iter":"iter009"})"});
  EXPECT_EQ(r.rc, 2) << r.out;
  std::vector<std::string> args = store;
  args.push_back(R"({"note":"mine"})");
  r = croq({"store-round"}, args);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.doc["record"]["schema"], "croq-round-v1");
  EXPECT_EQ(r.doc["record"]["note"], "mine");
}

}  // namespace
}  // namespace croq
