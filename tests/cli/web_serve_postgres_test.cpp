// `croq serve --once` and `croq serve --check` with the monitor database on PostgreSQL, as a user
// runs them (--db postgresql://...). Needs a server named by CROQ_TEST_POSTGRES: the ctest test
// `web_serve_postgres` starts a throwaway one (tests/postgres/with_postgres.sh); without it the test
// is skipped, saying so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

using namespace croq;
using croq::test::run_croq;
using croq::test::TempDir;

namespace {

std::string psql(const std::string& sql) {
  ProcessSpec spec;
  spec.argv = {"psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql, std::getenv("CROQ_TEST_POSTGRES")};
  spec.timeout = std::chrono::milliseconds(30000);
  SystemProcessRunner runner;
  ProcessResult r = runner.run(spec);
  EXPECT_TRUE(r.ok()) << sql << ": " << r.describe() << " " << r.err;
  return trim(r.out);
}

}  // namespace

TEST(WebServePostgresCli, OnceIndexesTheLedgersIntoPostgresAndCheckFindsThemInStep) {
  const char* base = std::getenv("CROQ_TEST_POSTGRES");
  if (!base || !*base) {
    GTEST_SKIP() << "no PostgreSQL server (CROQ_TEST_POSTGRES): `ctest -R web_serve_postgres` starts one "
                    "(tests/postgres/start_postgres.sh) and runs this";
  }
  const std::string schema = "cli" + std::to_string(::getpid()) + "_" + std::to_string(std::random_device{}() % 100000);
  ASSERT_EQ(psql("CREATE SCHEMA " + schema), "");
  // The URL with a password (ignored by the test server's trust authentication): never printed.
  std::string url = base;
  url.replace(url.find("croq@"), 5, "croq:pw-s3cret@");
  url += std::string(url.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" + schema;
  TempDir dir;
  Workspace ws(dir.path());
  const TaskRef task = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");
  test::store_rounds(ws, task, {110, 120});
  auto once = run_croq(dir.path(), {"serve", "--once", "--db", url});
  ASSERT_EQ(once.rc, 0) << once.out << once.err;
  EXPECT_EQ(once.doc["tasks_adopted"], 1);
  EXPECT_EQ(once.doc["rounds_added"], 3);
  EXPECT_EQ(once.out.find("pw-s3cret"), std::string::npos) << once.out;
  EXPECT_NE(once.doc.value("db", "").find("croq:***@"), std::string::npos) << once.out;
  EXPECT_EQ(psql("SELECT COUNT(*) FROM " + schema + ".rounds"), "3");
  auto clean = run_croq(dir.path(), {"serve", "--check", "--db", url});
  EXPECT_EQ(clean.rc, 0) << clean.out << clean.err;
  EXPECT_EQ(clean.doc["rounds_in_db"], 3);
  // A new round on disk: --check sees the database behind, --once catches up.
  test::store_rounds(ws, make_task("cpu_x86_64", "cpp", "matmul_f32_32x32x32", "search"), {90});
  auto diff = run_croq(dir.path(), {"serve", "--check", "--db", url});
  EXPECT_EQ(diff.rc, 1) << diff.out;
  ASSERT_EQ(run_croq(dir.path(), {"serve", "--once", "--db", url}).rc, 0);
  auto again = run_croq(dir.path(), {"serve", "--check", "--db", url});
  EXPECT_EQ(again.rc, 0) << again.out;
  EXPECT_EQ(again.doc["tasks_in_db"], 2);
  // An unreachable server: exit 2, the password not shown.
  auto bad = run_croq(dir.path(), {"serve", "--once", "--db", "postgresql://croq:pw-s3cret@127.0.0.1:1/x?connect_timeout=3"});
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_EQ((bad.out + bad.err).find("pw-s3cret"), std::string::npos) << bad.out << bad.err;
  psql("DROP SCHEMA " + schema + " CASCADE");
}
