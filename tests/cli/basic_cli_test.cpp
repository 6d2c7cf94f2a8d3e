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

TEST(Cli, EveryVerbHasHelp) {
  TempDir dir;
  for (const char* verb : {"store-round", "next-iter", "resume", "reinforce"}) {
    auto r = run_croq(dir.path(), {verb, "--help"});
    EXPECT_EQ(r.rc, 0) << verb;
    EXPECT_NE(r.out.find("--shape-key"), std::string::npos) << verb;
  }
}
