// croq serve's --once and --check called as a function (web::run_serve), without the command line.
#include <gtest/gtest.h>

#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/web/serve.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

TEST(WebServeStep, OnceIndexesTheWorkspaceAndCheckFindsItInStep) {
  test::TempDir dir;
  Workspace ws(dir.path());
  SystemProcessRunner runner;
  std::vector<std::string> notes;
  StepDeps deps{runner, [&](const std::string& l) { notes.push_back(l); }};
  std::vector<json> docs;
  auto emit = [&](const json& d) { docs.push_back(d); };
  web::ServeOptions o;
  o.once = true;
  EXPECT_EQ(web::run_serve(ws, o, emit, deps), ExitCode::ok);
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_TRUE(docs[0].value("ok", false));
  EXPECT_EQ(docs[0].value("root", ""), dir.path().string());
  EXPECT_TRUE(fs::is_regular_file(dir.path() / ".croq" / "monitor.db"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("croq serve --once: ", 0), 0u) << notes[0];
  o.once = false;
  o.check = true;
  EXPECT_EQ(web::run_serve(ws, o, emit, deps), ExitCode::ok);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_TRUE(docs[1].value("ok", false));
}

}  // namespace
}  // namespace croq
