// `croq serve --once` and `croq serve --check` with the monitor database on PostgreSQL, as a user
// runs them (--db postgresql://...). Needs a server named by CROQ_TEST_POSTGRES: the ctest test
// `web_serve_postgres` starts a throwaway one (tests/postgres/with_postgres.sh); without it the test
// is skipped, saying so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "croq/util/fs.hpp"
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

// A schema of its own on the test server, so that runs never see each other's tables; `url`
// selects it through libpq's options. Empty `name` when no server is given (the test skips).
struct TestSchema {
  std::string name, url;
};

TestSchema new_schema(const std::string& prefix) {
  const char* base = std::getenv("CROQ_TEST_POSTGRES");
  if (!base || !*base) return {};
  TestSchema s;
  s.name = prefix + std::to_string(::getpid()) + "_" + std::to_string(std::random_device{}() % 100000);
  s.url = std::string(base) + (std::string(base).find('?') == std::string::npos ? "?" : "&") +
          "options=-csearch_path%3D" + s.name;
  return s;
}

const char* k_no_server =
    "no PostgreSQL server (CROQ_TEST_POSTGRES): `ctest -R web_serve_postgres` starts one "
    "(tests/postgres/start_postgres.sh) and runs this";

}  // namespace

TEST(WebServePostgresCli, OnceIndexesTheLedgersIntoPostgresAndCheckFindsThemInStep) {
  const TestSchema ts = new_schema("cli");
  if (ts.name.empty()) GTEST_SKIP() << k_no_server;
  const std::string& schema = ts.name;
  ASSERT_EQ(psql("CREATE SCHEMA " + schema), "");
  // The URL with a password (ignored by the test server's trust authentication): never printed.
  std::string url = ts.url;
  url.replace(url.find("croq@"), 5, "croq:pw-s3cret@");
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

// Two workspaces (two servers, as on two machines) index into one database: each --once adopts
// only its own tasks, each --check compares only its own rows and is clean, and a copy of the
// other's task (the same task_uid) is reported as a conflict, not taken.
TEST(WebServePostgresCli, TwoWorkspacesShareOneDatabaseAndEachChecksOnlyItsOwnTasks) {
  const TestSchema ts = new_schema("two");
  if (ts.name.empty()) GTEST_SKIP() << k_no_server;
  const std::string& schema = ts.name;
  ASSERT_EQ(psql("CREATE SCHEMA " + schema), "");
  const std::string& url = ts.url;
  TempDir a_dir, b_dir;
  Workspace a(a_dir.path()), b(b_dir.path());
  const TaskRef task = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");
  test::store_rounds(a, task, {110, 120});
  test::store_rounds(b, task, {90});  // the same key on the other machine: another task
  test::store_rounds(b, make_task("cpu_x86_64", "cpp", "matmul_f32_32x32x32", "search"), {70});
  auto once_a = run_croq(a_dir.path(), {"serve", "--once", "--db", url});
  ASSERT_EQ(once_a.rc, 0) << once_a.out << once_a.err;
  auto once_b = run_croq(b_dir.path(), {"serve", "--once", "--db", url});
  ASSERT_EQ(once_b.rc, 0) << once_b.out << once_b.err;
  EXPECT_EQ(once_b.doc["tasks_adopted"], 2);
  EXPECT_NE(once_a.doc.value("owner", ""), once_b.doc.value("owner", ""));
  EXPECT_EQ(psql("SELECT COUNT(*) FROM " + schema + ".tasks"), "3");
  // A's next pass leaves B's rows as they are.
  ASSERT_EQ(run_croq(a_dir.path(), {"serve", "--once", "--db", url}).rc, 0);
  EXPECT_EQ(psql("SELECT COUNT(*) FROM " + schema + ".rounds"), "7");
  auto check_a = run_croq(a_dir.path(), {"serve", "--check", "--db", url});
  EXPECT_EQ(check_a.rc, 0) << check_a.out << check_a.err;
  EXPECT_EQ(check_a.doc["tasks_in_db"], 1);
  EXPECT_EQ(check_a.doc["tasks_of_other_servers"], 2);
  auto check_b = run_croq(b_dir.path(), {"serve", "--check", "--db", url});
  EXPECT_EQ(check_b.rc, 0) << check_b.out << check_b.err;
  EXPECT_EQ(check_b.doc["tasks_in_db"], 2);
  // A folder copied from A into B's workspace keeps A's task_uid: a conflict on B, not a theft.
  const TaskRef copy = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "copied");
  test::store_rounds(b, copy, {60});
  const std::string a_uid = psql("SELECT uid FROM " + schema + ".tasks WHERE owner = '" +
                                 once_a.doc.value("owner", "") + "'");
  atomic_write(b.task_config(copy), json{{"task_uid", a_uid}}.dump(), false);
  auto conflict = run_croq(b_dir.path(), {"serve", "--once", "--db", url});
  EXPECT_EQ(conflict.rc, 0) << conflict.out << conflict.err;
  ASSERT_EQ(conflict.doc["conflicts"].size(), 1u) << conflict.out;
  EXPECT_NE(conflict.err.find("conflict"), std::string::npos) << conflict.err;
  EXPECT_EQ(psql("SELECT owner FROM " + schema + ".tasks WHERE uid = '" + a_uid + "'"), once_a.doc.value("owner", ""));
  auto check_conflict = run_croq(b_dir.path(), {"serve", "--check", "--db", url});
  EXPECT_EQ(check_conflict.rc, 1) << check_conflict.out;
  EXPECT_NE(check_conflict.out.find("owned_elsewhere"), std::string::npos) << check_conflict.out;
  psql("DROP SCHEMA " + schema + " CASCADE");
}
