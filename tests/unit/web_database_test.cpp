// The monitor's database: versioned migrations, WAL, refusal of newer schemas, tasks, rounds and
// sync positions written together. The tests of the Database interface run against both backends
// (WebDatabaseBackends/*/sqlite and */postgresql): the PostgreSQL instances need a server named by
// CROQ_TEST_POSTGRES, which the ctest test `web_database_postgres` starts in a temporary folder
// (tests/postgres/start_postgres.sh) before running them; without one they are skipped, saying so.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <cstdlib>
#include <random>

#include "croq/util/error.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/web/database.hpp"
#include "croq/web/postgres_database.hpp"
#include "support/test_support.hpp"

using namespace croq;
using namespace croq::web;
using croq::test::TempDir;

namespace {

TaskRow sample_task(const std::string& uid, const std::string& model = "m1") {
  TaskRow t;
  t.uid = uid;
  t.gpu = "cpu_x86_64";
  t.dsl = "cpp";
  t.shape_key = "matmul_f32_64x64x64";
  t.model = model;
  t.key = t.gpu + "/" + t.dsl + "/" + t.shape_key + "/" + t.model;
  t.origin = "created";
  t.state = "queued";
  t.created_at = t.updated_at = "2026-01-01T00:00:00.000Z";
  t.spec = {{"device", "cpu"}};
  return t;
}

RoundRow sample_round(int seq, const std::string& decision, std::optional<double> tflops, const std::string& bottleneck,
                      const std::string& idea = "an idea") {
  RoundRow r;
  r.seq = seq;
  r.round = seq;
  r.iter = "iter00" + std::to_string(seq);
  r.kernel = r.iter + "_x";
  r.tflops = tflops;
  r.decision = decision;
  r.bottleneck = bottleneck;
  r.category = "tiling";
  r.idea = idea;
  r.record = "{}";
  return r;
}

// One database of a backend per test: a SQLite file in a temporary folder, or a schema of its own
// in the PostgreSQL server of CROQ_TEST_POSTGRES (search_path set through the URL).
class WebDatabaseBackends : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir;
  std::string schema;

  void SetUp() override {
    if (GetParam() != "postgresql") return;
    const char* url = std::getenv("CROQ_TEST_POSTGRES");
    if (!url || !*url) {
      GTEST_SKIP() << "no PostgreSQL server (CROQ_TEST_POSTGRES): `ctest -R web_database_postgres` starts one "
                      "(tests/postgres/start_postgres.sh) and runs these";
    }
    if (!postgres_supported()) GTEST_FAIL() << "CROQ_TEST_POSTGRES is set but croq was built without libpq";
    schema = "t" + std::to_string(::getpid()) + "_" + std::to_string(std::random_device{}() % 1000000);
    ASSERT_EQ(psql("CREATE SCHEMA " + schema), "");
  }
  void TearDown() override {
    if (!schema.empty()) psql("DROP SCHEMA " + schema + " CASCADE");
  }

  std::string location() const {
    if (GetParam() == "sqlite") return (dir / "m.db").string();
    std::string url = std::getenv("CROQ_TEST_POSTGRES");
    return url + (url.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" + schema;
  }

  // The first column of the first row of `sql`, run outside croq ("" for a statement).
  std::string scalar(const std::string& sql) const {
    if (GetParam() == "sqlite") {
      sqlite3* h = nullptr;
      sqlite3_open((dir / "m.db").c_str(), &h);
      sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr);
      std::string v;
      if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      }
      sqlite3_finalize(st);
      sqlite3_close(h);
      return v;
    }
    return psql("SET search_path TO " + schema + "; " + sql);
  }

  static std::string psql(const std::string& sql) {
    ProcessSpec spec;
    spec.argv = {"psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql, std::getenv("CROQ_TEST_POSTGRES")};
    spec.timeout = std::chrono::milliseconds(30000);
    SystemProcessRunner runner;
    ProcessResult r = runner.run(spec);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.describe() << " " << r.err;
    return trim(r.out);
  }
};

std::string backend_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

}  // namespace

INSTANTIATE_TEST_SUITE_P(Backends, WebDatabaseBackends, ::testing::Values("sqlite", "postgresql"), backend_name);

TEST(WebDatabase, NewDatabaseGetsTheNewestSchemaInWalMode) {
  TempDir dir;
  auto db = open_database((dir / "m.db").string());
  EXPECT_EQ(db->schema_version(), newest_schema_version());
  json info = db->info();
  EXPECT_EQ(info["journal_mode"], "wal");
  EXPECT_EQ(info["backend"], "sqlite");
}

TEST_P(WebDatabaseBackends, ReopeningAppliesNoMigrationTwice) {
  { auto db = open_database(location()); }
  { auto db = open_database(GetParam() == "sqlite" ? "sqlite:" + location() : location()); }
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM schema_migrations"), std::to_string(newest_schema_version()));
}

TEST_P(WebDatabaseBackends, UpgradeFromTheFirstVersionKeepsEveryRow) {
  {
    DatabaseOptions o;
    o.target_version = 1;
    auto db = open_database(location(), o);
    EXPECT_EQ(db->schema_version(), 1);
    db->insert_task(sample_task("aaa111"));
  }
  auto db = open_database(location());
  EXPECT_EQ(db->schema_version(), newest_schema_version());
  ASSERT_TRUE(db->task("aaa111"));
  EXPECT_EQ(db->task("aaa111")->state, "queued");
}

TEST_P(WebDatabaseBackends, NewerSchemaIsRefusedAndLeftUntouched) {
  { auto db = open_database(location()); }
  scalar("INSERT INTO schema_migrations VALUES (999, 'future', 'x')");
  try {
    open_database(location());
    FAIL() << "a newer schema was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::corrupt);
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos);
  }
  EXPECT_EQ(scalar("SELECT MAX(version) FROM schema_migrations"), "999");
}

TEST(WebDatabase, AnUnreachablePostgresIsAUsageErrorThatNeverShowsThePassword) {
  try {
    open_database("postgresql://croq:s3cret@127.0.0.1:1/none?connect_timeout=3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("croq:***@127.0.0.1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(redact_postgres_location("postgresql://u@h/db?password=x&host=/tmp"), "postgresql://u@h/db?password=***&host=/tmp");
}

TEST(WebDatabase, ReadOnlyOpenOfAMissingFileIsNotFound) {
  TempDir dir;
  DatabaseOptions o;
  o.read_only = true;
  try {
    open_database((dir / "none.db").string(), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "none.db"));
}

TEST_P(WebDatabaseBackends, DuplicateUidOrKeyIsAConflict) {
  auto db = open_database(location());
  db->insert_task(sample_task("aaa111"));
  try {
    db->insert_task(sample_task("aaa111", "other"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::conflict);
  }
  try {
    db->insert_task(sample_task("bbb222"));  // same key
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::conflict);
  }
  EXPECT_EQ(db->tasks().size(), 1u);
}

TEST_P(WebDatabaseBackends, UpdateKeepsTheStatsThatOnlyTheSyncWrites) {
  auto db = open_database(location());
  db->insert_task(sample_task("aaa111"));
  SyncUpdate u;
  u.stats = json{{"rounds", 7}};
  db->apply_sync("aaa111", u);
  TaskRow t = *db->task("aaa111");
  t.state = "running";
  t.stats = json::object();  // ignored by update_task
  db->update_task(t);
  EXPECT_EQ(db->task("aaa111")->state, "running");
  EXPECT_EQ(db->task("aaa111")->stats["rounds"], 7);
}

TEST_P(WebDatabaseBackends, SyncAppendsThenReplacesRoundsWithTheirPosition) {
  auto db = open_database(location());
  db->insert_task(sample_task("aaa111"));
  SyncUpdate u;
  u.rounds = {sample_round(0, "KEEP", 10.0, "memory_bound"), sample_round(1, "DISCARD", 5.0, "compute_bound")};
  u.state.kind = "jsonl";
  u.state.bytes = 200;
  u.state.records = 2;
  db->apply_sync("aaa111", u);
  SyncUpdate more;
  more.rounds = {sample_round(2, "COMPILE_FAIL", 0.0, "mixed")};
  more.state = u.state;
  more.state.bytes = 300;
  more.state.records = 3;
  db->apply_sync("aaa111", more);
  EXPECT_EQ(db->round_count("aaa111"), 3);
  EXPECT_EQ(db->sync_state("aaa111")->bytes, 300u);
  SyncUpdate again;
  again.replace = true;
  again.rounds = {sample_round(0, "KEEP", 11.0, "memory_bound")};
  again.state.kind = "jsonl";
  again.state.records = 1;
  db->apply_sync("aaa111", again);
  auto rows = db->rounds("aaa111");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(*rows[0].tflops, 11.0);
}

TEST_P(WebDatabaseBackends, FailedSyncChangesNothing) {
  auto db = open_database(location());
  db->insert_task(sample_task("aaa111"));
  SyncUpdate u;
  u.rounds = {sample_round(0, "KEEP", 10.0, "memory_bound"), sample_round(0, "KEEP", 10.0, "memory_bound")};
  u.state.kind = "jsonl";
  u.state.bytes = 100;
  EXPECT_THROW(db->apply_sync("aaa111", u), Error);  // duplicate seq
  EXPECT_EQ(db->round_count("aaa111"), 0);
  EXPECT_FALSE(db->sync_state("aaa111"));
}

TEST_P(WebDatabaseBackends, RoundFiltersSelectByDecisionBottleneckCategoryAndText) {
  auto db = open_database(location());
  db->insert_task(sample_task("aaa111"));
  SyncUpdate u;
  u.rounds = {sample_round(0, "KEEP", 10.0, "memory_bound", "Wider TILES"),
              sample_round(1, "DISCARD", 5.0, "compute_bound", "more stages"),
              sample_round(2, "SEGFAULT", 0.0, "memory_bound", "unroll"),
              sample_round(3, "VERIFY_FAIL", 0.0, "mixed", "swizzle")};
  u.state.kind = "jsonl";
  db->apply_sync("aaa111", u);
  RoundQuery q;
  q.decision = "FAIL";
  EXPECT_EQ(db->rounds("aaa111", q).size(), 2u);
  q = {};
  q.bottleneck = "memory_bound";
  EXPECT_EQ(db->rounds("aaa111", q).size(), 2u);
  q = {};
  q.text = "tiles";
  ASSERT_EQ(db->rounds("aaa111", q).size(), 1u);
  q = {};
  q.after_seq = 1;
  q.newest_first = true;
  q.limit = 1;
  auto rows = db->rounds("aaa111", q);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].seq, 3);
}

TEST_P(WebDatabaseBackends, HistoryIsNewestFirst) {
  auto db = open_database(location());
  db->insert_task(sample_task("aaa111"));
  db->add_history("aaa111", "t1", "created", {{"state", "queued"}});
  db->add_history("aaa111", "t2", "started", {{"state", "running"}});
  auto h = db->history("aaa111", 10);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0]["kind"], "started");
  EXPECT_EQ(h[1]["data"]["state"], "queued");
}
