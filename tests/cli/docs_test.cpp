// The reference documentation stays in step with the verb table: docs/cli.md is exactly what
// `croq help --markdown` prints, and every verb answers --help with its summary and details.
#include <gtest/gtest.h>

#include "croq/search/family.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

using croq::test::run_croq;
using croq::test::TempDir;

TEST(Docs, CliReferenceIsInStepWithTheVerbTable) {
  TempDir dir;
  auto r = run_croq(dir.path(), {"help", "--markdown"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("# croq command reference\n", 0), 0u);
  const auto path = std::filesystem::path(CROQ_SOURCE_DIR) / "docs" / "cli.md";
  auto on_disk = croq::read_file(path);
  ASSERT_TRUE(on_disk.has_value()) << path << " is missing; create it with: build/bin/croq help --markdown > docs/cli.md";
  EXPECT_TRUE(*on_disk == r.out) << "docs/cli.md is out of step with the verb table (src/cli/verbs.cpp and the verbs' "
                                    "options); regenerate it with: build/bin/croq help --markdown > docs/cli.md";
}

// The verb table, from `croq help --json`.
struct VerbEntry {
  std::string name, summary, details;
};
std::vector<VerbEntry> verb_table() {
  TempDir dir;
  auto r = run_croq(dir.path(), {"help", "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  std::vector<VerbEntry> out;
  for (const auto& v : r.doc) out.push_back({v["name"], v["summary"], v["details"]});
  return out;
}

TEST(Docs, EveryVerbAnswersHelp) {
  TempDir dir;
  const auto table = verb_table();
  ASSERT_GE(table.size(), 12u);
  for (const auto& v : table) {
    std::vector<std::string> args;
    std::string name = v.name;
    for (size_t p; (p = name.find(' ')) != std::string::npos; name = name.substr(p + 1)) args.push_back(name.substr(0, p));
    args.push_back(name);
    args.push_back("--help");
    auto r = run_croq(dir.path(), args);
    EXPECT_EQ(r.rc, 0) << v.name << ": " << r.err;
    EXPECT_NE(r.out.find(v.summary), std::string::npos) << v.name << ": " << r.out;
    const std::string details = v.details;
    EXPECT_NE(r.out.find(details.substr(0, std::min<size_t>(details.size(), 40))), std::string::npos)
        << v.name << ": the details are part of --help";
    EXPECT_EQ(r.err, "") << v.name;
  }
  auto top = run_croq(dir.path(), {"--help"});
  EXPECT_EQ(top.rc, 0);
  for (const auto& v : table) EXPECT_NE(top.out.find(v.name), std::string::npos) << v.name;
  // Every verb is in the reference, with its details.
  auto md = run_croq(dir.path(), {"help", "--markdown"});
  for (const auto& v : table) {
    EXPECT_NE(md.out.find("### croq " + v.name + "\n"), std::string::npos) << v.name;
    EXPECT_NE(md.out.find(v.details), std::string::npos) << v.name;
  }
}

TEST(Docs, LedgerVerbsShowTheirTaskOptionsInHelp) {
  TempDir dir;
  for (const std::vector<std::string>& verb :
       {std::vector<std::string>{"store-round"}, {"next-iter"}, {"resume"}, {"reinforce"}, {"attempt"}, {"task", "init"},
        {"checkpoint", "write"}, {"checkpoint", "read"}, {"checkpoint", "verify"}}) {
    auto args = verb;
    args.push_back("--help");
    auto r = run_croq(dir.path(), args);
    EXPECT_EQ(r.rc, 0) << verb[0];
    for (const char* opt : {"--gpu", "--dsl", "--shape-key", "--model", "--lock-timeout"}) {
      EXPECT_NE(r.out.find(opt), std::string::npos) << verb[0] << " " << opt;
    }
  }
  auto s = run_croq(dir.path(), {"store-round", "--help"});
  for (const char* opt : {"--iter", "--kernel", "--tflops", "--decision", "--bottleneck", "--idea", "--idea-file",
                          "--round", "--category", "--expected-gain", "--extra"}) {
    EXPECT_NE(s.out.find(opt), std::string::npos) << opt;
  }
}

// `croq tune --help` names every dsl and every kernel family of the registry (it once listed three
// dsls of four), and `croq sweep run --help` every dsl croq's search covers.
TEST(Docs, TuneAndSweepHelpNameEveryFamilyOfTheRegistry) {
  TempDir dir;
  auto tune = run_croq(dir.path(), {"tune", "--help"});
  auto sweep = run_croq(dir.path(), {"sweep", "run", "--help"});
  ASSERT_EQ(tune.rc, 0) << tune.err;
  ASSERT_EQ(sweep.rc, 0) << sweep.err;
  const auto families = croq::kernel_families();
  ASSERT_GE(families.size(), 9u);
  for (const auto& f : families) {
    EXPECT_NE(tune.out.find(f->name()), std::string::npos) << f->name();
    EXPECT_NE(tune.out.find(f->dsl() + ":"), std::string::npos) << f->dsl();
  }
  auto dsl_line = [](const std::string& help) {
    const size_t at = help.find("--dsl");
    return at == std::string::npos ? std::string() : help.substr(at, help.find('\n', at) - at);
  };
  for (const auto& f : families) {
    EXPECT_NE(dsl_line(tune.out).find(f->dsl()), std::string::npos) << f->dsl() << " in " << dsl_line(tune.out);
    EXPECT_NE(dsl_line(sweep.out).find(f->dsl()), std::string::npos) << f->dsl() << " in " << dsl_line(sweep.out);
  }
}
