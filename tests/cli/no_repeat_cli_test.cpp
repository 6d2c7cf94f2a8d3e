// The no-repeat rule by what croq sees (issue 23, point 6): a candidate whose source, comments and
// spacing aside, is the code an earlier round measured is refused at MEASURE, whatever its plan
// declared (another parameter set here).
#include <gtest/gtest.h>

#include "croq/util/fs.hpp"
#include "croq/util/json.hpp"
#include "support/test_support.hpp"

using croq::json;
using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

TEST(NoRepeat, ACandidateWithTheSourceOfAnEarlierRoundIsRefusedWhateverItsPlanSays) {
  TempDir dir;
  auto croq = [&](std::vector<std::string> args) {
    const std::vector<std::string> task = {"--dsl", "cpp", "--shape-key", "matmul_f32_64x64x64", "--model", "norepeat"};
    args.insert(args.begin() + (args[0] == "checkpoint" || args[0] == "protocol" ? 2 : 1), task.begin(), task.end());
    return run_croq(dir.path(), args);
  };
  auto must = [&](std::vector<std::string> args) {
    CroqRun r = croq(args);
    EXPECT_EQ(r.rc, 0) << args[0] << ": " << r.err << r.out;
    return r;
  };
  must({"protocol", "begin", "--rounds", "5"});
  must({"baseline"});
  must({"prepare", "--from", std::string(CROQ_SOURCE_DIR) + "/kernels/cpp/matmul/blocked.cpp"});
  must({"round"});
  CroqRun prof = must({"profile", "--iter", "iter001_blocked"});
  const std::string b = prof.doc.value("bottleneck", "");
  fs::path srcs;
  for (const auto& e : fs::recursive_directory_iterator(dir / "tuning")) {
    if (e.path().filename() == "iter001_blocked.cpp") srcs = e.path().parent_path();
  }
  const std::string base = croq::read_file(srcs / "iter001_blocked.cpp").value_or("");
  std::string kc64 = base;
  const std::string from = "constexpr int64_t k_kc = 128;";
  kc64.replace(kc64.find(from), from.size(), "constexpr int64_t k_kc = 64;");

  // Round 1: k_kc 64, stored as DISCARD (the base stays iter001).
  must({"checkpoint", "write", "--iter", "iter002", "--base", "iter001_blocked", "--bottleneck", b, "--idea", "k_kc 64",
        "--levers", "k_kc", "--params", "{\"k_kc\":64}"});
  must({"next-iter", "--tag", "kc64"});
  croq::atomic_write(srcs / "iter002_kc64.cpp", kc64);
  must({"build", "--iter", "iter002_kc64"});
  must({"checkpoint", "verify", "--iter", "iter002_kc64"});
  CroqRun m = must({"measure", "--iter", "iter002_kc64"});
  // What the decision needs first (a 64x64x64 product's timing on a busy machine may look suspicious
  // and call for a back-to-back re-run; store-round refuses without it).
  must({"measure", "--iter", "iter002_kc64", "--pairs"});
  must({"store-round", "--kernel", "iter002_kc64", "--measurement", m.doc["files"].value("measurement", ""), "--decision",
        "DISCARD"});
  // The store closed round 1's plan: verifying it again is refused and changes nothing (before, it
  // reopened the plan for the stored iteration and no step could follow).
  const std::string state_before = croq({"state"}).doc.dump();
  for (const char* iter : {"iter002_kc64", "iter003"}) {
    CroqRun again = croq({"checkpoint", "verify", "--iter", iter});
    EXPECT_EQ(again.rc, 9) << iter << ": " << again.out << again.err;
  }
  EXPECT_EQ(croq({"state"}).doc.dump(), state_before);

  // Round 2 declares another parameter set but its source is round 1's, re-commented and re-spaced.
  must({"checkpoint", "write", "--iter", "iter003", "--base", "iter001_blocked", "--bottleneck", b, "--idea", "k_kc 48",
        "--levers", "k_kc", "--params", "{\"k_kc\":48}"});
  must({"next-iter", "--tag", "kc48"});
  croq::atomic_write(srcs / "iter003_kc48.cpp", "// k_kc 48 (so the plan says)\n" + kc64 + "\n\n   \n");
  must({"build", "--iter", "iter003_kc48"});
  must({"checkpoint", "verify", "--iter", "iter003_kc48"});
  CroqRun repeat = croq({"measure", "--iter", "iter003_kc48"});
  EXPECT_EQ(repeat.rc, 5) << repeat.out;
  EXPECT_EQ(repeat.doc["error"].value("rule", ""), "no_repeat") << repeat.out;
  EXPECT_NE(repeat.doc["error"].value("message", "").find("iter002_kc64"), std::string::npos) << repeat.out;

  // A real change is measured.
  std::string kc48 = base;
  kc48.replace(kc48.find(from), from.size(), "constexpr int64_t k_kc = 48;");
  croq::atomic_write(srcs / "iter003_kc48.cpp", kc48);
  must({"build", "--iter", "iter003_kc48"});
  must({"checkpoint", "verify", "--iter", "iter003_kc48"});
  must({"measure", "--iter", "iter003_kc48"});
}
