// The command line itself: help, unknown verbs, and the shape of errors.
#include <gtest/gtest.h>

#include "support/test_support.hpp"

using croq::test::run_croq;
using croq::test::TempDir;

TEST(Cli, UnknownVerbSuggestsTheNearestOne) {
  TempDir dir;
  auto r = run_croq(dir.path(), {"store-roud"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("did you mean `croq store-round`"), std::string::npos) << r.err;
  EXPECT_EQ(r.doc["ok"], false);
  EXPECT_EQ(r.doc["error"]["code"], "usage");
}

// An unknown verb is named as typed (before, CLI11's message listed every argument last first:
// "cpp --dsl tuen"); an argument a verb does not take is named with the verb.
TEST(Cli, AnUnknownVerbOrArgumentIsNamedAsTyped) {
  TempDir dir;
  auto verb = run_croq(dir.path(), {"tuen", "--dsl", "cpp"});
  EXPECT_EQ(verb.rc, 2);
  EXPECT_EQ(verb.doc["error"]["message"], "unknown verb 'tuen'") << verb.err;
  EXPECT_EQ(verb.doc["error"]["hint"], "did you mean `croq tune`?") << verb.err;
  auto arg = run_croq(dir.path(), {"state", "--bogus", "1", "2"});
  EXPECT_EQ(arg.rc, 2);
  EXPECT_EQ(arg.doc["error"]["message"], "croq state does not take --bogus 1 2") << arg.err;
}

// A mistyped flag whose verb then misses a required option: the mistyped flag is named first
// (before, `croq tune --dls cpp KEY` said only "--dsl is required").
TEST(Cli, AMistypedRequiredOptionIsSuggested) {
  TempDir dir;
  auto r = run_croq(dir.path(), {"tune", "--dls", "cpp", "matmul_f32_64x64x64"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.doc["error"]["message"], "--dsl is required") << r.err;
  EXPECT_NE(r.doc["error"]["hint"].get<std::string>().find("--dls: did you mean --dsl?"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "tuning"));
}

// `croq help <group>` lists the group's verbs (croq --help names the groups), and a misspelt group
// is suggested as one.
TEST(Cli, HelpOfAGroupListsItsVerbs) {
  TempDir dir;
  for (const char* group : {"sweep", "checkpoint", "session", "gpu", "task"}) {
    auto r = run_croq(dir.path(), {"help", group});
    EXPECT_EQ(r.rc, 0) << group << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("croq ") + group + " "), std::string::npos) << r.out;
  }
  auto sweep = run_croq(dir.path(), {"help", "sweep"});
  EXPECT_NE(sweep.out.find("croq sweep status"), std::string::npos) << sweep.out;
  auto typo = run_croq(dir.path(), {"help", "swep"});
  EXPECT_EQ(typo.rc, 2);
  EXPECT_NE(typo.err.find("did you mean `croq help sweep`"), std::string::npos) << typo.err;
}

TEST(Cli, EveryVerbHasHelp) {
  TempDir dir;
  for (const char* verb : {"store-round", "next-iter", "resume", "reinforce"}) {
    auto r = run_croq(dir.path(), {verb, "--help"});
    EXPECT_EQ(r.rc, 0) << verb;
    EXPECT_NE(r.out.find("--shape-key"), std::string::npos) << verb;
  }
}

// `croq --version` (and so every measurement's `croq.git`) names the commit the binary was built
// from, taken at build time: a hash recorded when CMake first configured the build goes stale with
// each commit, and a measurement would then claim code it was not measured with.
TEST(Cli, VersionNamesTheCommitTheBinaryWasBuiltFrom) {
  croq::ProcessSpec git;
  git.argv = {"git", "-C", CROQ_SOURCE_DIR, "rev-parse", "--short=12", "HEAD"};
  git.timeout = std::chrono::seconds(30);
  croq::ProcessResult head = croq::SystemProcessRunner().run(git);
  if (!head.ok()) GTEST_SKIP() << "the source tree is not a git checkout";
  std::string sha = head.out.substr(0, head.out.find('\n'));
  TempDir dir;
  auto v = run_croq(dir.path(), {"--version"});
  ASSERT_EQ(v.rc, 0);
  const std::string got = v.doc.value("git", "");
  EXPECT_EQ(got.substr(0, sha.size()), sha) << "croq says " << got << ", the tree is at " << sha
                                            << " (rebuild after committing: scripts/test.sh builds first)";
}

// croq tune on a machine that lacks what the dsl needs: one line per missing piece with its fix
// (before, a raw JSON array), exit 7 (no device or tool), and no task made.
TEST(Cli, TuneOnAMachineThatCannotRunTheDslSaysWhatIsMissingAndHowToFixIt) {
  TempDir dir;
  auto r = run_croq(dir.path(), {"tune", "matmul_f16fp32_256x256x256", "--dsl", "cuda", "--gpu", "sm90_NVIDIA_H200"},
                    {{"CROQ_NCU", "/nonexistent/ncu"}});
  EXPECT_EQ(r.rc, 7) << r.err;
  EXPECT_NE(r.err.find("  - ncu: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("    fix: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("[{"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "tuning" / "sm90_NVIDIA_H200")) << "no task made";
}
