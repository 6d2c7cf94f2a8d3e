// The monitor's database: versioned migrations, WAL, refusal of newer schemas, tasks, rounds and
// sync positions written together, and several servers (each with its own workspace) sharing one
// database: task owners, sync and scheduler keeping to their own rows, requests for other servers'
// tasks. The tests of the Database interface run against both backends
// (WebDatabaseBackends/*/sqlite and */postgresql): the PostgreSQL instances need a server named by
// CROQ_TEST_POSTGRES, which the ctest test `web_database_postgres` starts in a temporary folder
// (tests/postgres/start_postgres.sh) before running them; without one they are skipped, saying so.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <random>

#include "croq/ledger/documents.hpp"
#include "croq/util/error.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/web/database.hpp"
#include "croq/web/event_bus.hpp"
#include "croq/web/ledger_sync.hpp"
#include "croq/web/postgres_database.hpp"
#include "croq/web/scheduler.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

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

// A task row as a server of that version wrote it (the columns of schema version 1).
const char* k_v1_task =
    "INSERT INTO tasks (uid, task_key, gpu, dsl, shape_key, model, origin, spec, state, created_at, updated_at, "
    "stats) VALUES ('aaa111', 'cpu_x86_64/cpp/matmul_f32_64x64x64/m1', 'cpu_x86_64', 'cpp', 'matmul_f32_64x64x64', "
    "'m1', 'created', '{\"device\":\"cpu\"}', 'queued', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', "
    "'{\"rounds\":1}')";

TEST_P(WebDatabaseBackends, UpgradeFromTheFirstVersionKeepsEveryRow) {
  {
    DatabaseOptions o;
    o.target_version = 1;
    auto db = open_database(location(), o);
    EXPECT_EQ(db->schema_version(), 1);
  }
  scalar(k_v1_task);
  scalar("INSERT INTO rounds (task_uid, seq, round, iter, kernel, tflops, decision, bottleneck, category, idea, "
         "expected_gain, timestamp, source, record) VALUES ('aaa111', 0, 0, 'iter000', 'iter000_x', 10, 'BASELINE', "
         "'', '', '', '', '', 'jsonl', '{}')");
  scalar("INSERT INTO ledger_sync (task_uid, kind, bytes, tail_sig, records, size, mtime_ns) VALUES "
         "('aaa111', 'jsonl', 10, 'sig', 1, 10, 5)");
  scalar("INSERT INTO task_history (task_uid, at, kind, data) VALUES ('aaa111', 't1', 'created', '{}')");
  auto db = open_database(location());
  EXPECT_EQ(db->schema_version(), newest_schema_version());
  ASSERT_TRUE(db->task("aaa111"));
  EXPECT_EQ(db->task("aaa111")->state, "queued");
  EXPECT_EQ(db->task("aaa111")->stats["rounds"], 1);
  EXPECT_EQ(db->task("aaa111")->owner, "");  // not claimed yet
  EXPECT_EQ(db->round_count("aaa111"), 1);
  EXPECT_EQ(db->sync_state("aaa111")->bytes, 10u);
  EXPECT_EQ(db->history("aaa111", 10).size(), 1u);
  // The rebuilt table still anchors the rows that refer to it.
  try {
    db->add_history("nosuchtask", "t2", "x", json::object());
    FAIL() << "a history row of no task was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::conflict);
  }
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

TEST_P(WebDatabaseBackends, DuplicateUidOrKeyOfOneOwnerIsAConflict) {
  auto db = open_database(location());
  TaskRow a = sample_task("aaa111");
  a.owner = "hostA:/a";
  db->insert_task(a);
  try {
    TaskRow same_uid = sample_task("aaa111", "other");
    same_uid.owner = "hostB:/b";
    db->insert_task(same_uid);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::conflict);
  }
  try {
    TaskRow same_key = sample_task("bbb222");
    same_key.owner = "hostA:/a";
    db->insert_task(same_key);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::conflict);
  }
  EXPECT_EQ(db->tasks().size(), 1u);
  // The same key on another machine is another task.
  TaskRow b = sample_task("bbb222");
  b.owner = "hostB:/b";
  db->insert_task(b);
  EXPECT_EQ(db->tasks().size(), 2u);
  EXPECT_EQ(db->task_by_key("hostA:/a", a.key)->uid, "aaa111");
  EXPECT_EQ(db->task_by_key("hostB:/b", a.key)->uid, "bbb222");
  EXPECT_FALSE(db->task_by_key("", a.key));
  // update_task never moves a row to another owner: only claim_task gives an unclaimed one.
  TaskRow moved = *db->task("aaa111");
  moved.owner = "hostB:/b";
  db->update_task(moved);
  EXPECT_EQ(db->task("aaa111")->owner, "hostA:/a");
  EXPECT_FALSE(db->claim_task("aaa111", "hostB:/b"));
  TaskRow c = sample_task("ccc333", "m3");
  db->insert_task(c);
  EXPECT_TRUE(db->claim_task("ccc333", "hostB:/b"));
  EXPECT_FALSE(db->claim_task("ccc333", "hostA:/a"));
  EXPECT_EQ(db->task("ccc333")->owner, "hostB:/b");
}

TEST_P(WebDatabaseBackends, RequestsAreKeptInOrderUntilRemoved) {
  auto db = open_database(location());
  TaskRow a = sample_task("aaa111");
  a.owner = "hostA:/a";
  db->insert_task(a);
  TaskRow b = sample_task("bbb222", "m2");
  b.owner = "hostB:/b";
  db->insert_task(b);
  TaskRequest q;
  q.task_uid = "aaa111";
  q.action = "pause";
  q.requested_by = "hostB:/b";
  q.requested_at = "t1";
  const long long first = db->add_request(q);
  q.action = "cancel";
  const long long second = db->add_request(q);
  EXPECT_LT(first, second);
  q.task_uid = "bbb222";
  db->add_request(q);
  auto for_a = db->requests_for("hostA:/a");
  ASSERT_EQ(for_a.size(), 2u);
  EXPECT_EQ(for_a[0].action, "pause");
  EXPECT_EQ(for_a[1].action, "cancel");
  EXPECT_EQ(for_a[0].requested_by, "hostB:/b");
  EXPECT_EQ(db->task_requests("bbb222").size(), 1u);
  db->remove_request(first);
  ASSERT_EQ(db->requests_for("hostA:/a").size(), 1u);
  EXPECT_EQ(db->requests_for("hostA:/a")[0].id, second);
  q.task_uid = "nosuchtask";
  EXPECT_THROW(db->add_request(q), Error);
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

// ---- several servers on one database ----

namespace {

// One server of a fleet: a workspace of its own, its own connection to the shared database, its
// sync and its scheduler (fake children, so nothing runs), under its default owner name.
struct FleetServer {
  TempDir dir;
  Workspace ws{dir.path()};
  std::unique_ptr<Database> db;
  test::FakeLauncher launcher;
  LedgerSync sync;
  Scheduler sched;

  explicit FleetServer(const std::string& location)
      : db(open_database(location)), sync(ws, *db, nullptr), sched(ws, *db, nullptr, launcher, options()) {}

  static SchedulerOptions options() {
    SchedulerOptions o;
    o.croq_exe = "/usr/bin/croq";
    return o;
  }
  const std::string& owner() const { return sync.owner(); }
  TaskRow add(const std::string& model) {
    return sched.create(TaskSpec::from_json(
        json{{"gpu", "cpu_x86_64"},
             {"dsl", "cpp"},
             {"shape_key", "matmul_f32_64x64x64"},
             {"model", model},
             {"driver", {{"kind", "command"}, {"argv", {"bash", "drive.sh"}}}}}));
  }
  // One step of a server: sync (a full scan), then the scheduler.
  void step() {
    sync.full_scan();
    sched.tick();
  }
};

const TaskRef k_task = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");

bool history_has(Database& db, const std::string& uid, const std::string& kind) {
  for (const auto& h : db.history(uid, 100)) {
    if (h["kind"] == kind) return true;
  }
  return false;
}

}  // namespace

TEST_P(WebDatabaseBackends, EachServerIsNamedByItsHostAndWorkspace) {
  FleetServer a(location());
  char host[256] = {0};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(a.owner(), std::string(host) + ":" + std::filesystem::weakly_canonical(a.dir.path()).string());
  EXPECT_EQ(a.sched.owner(), a.owner());
  FleetServer b(location());
  EXPECT_NE(a.owner(), b.owner());
}

TEST_P(WebDatabaseBackends, TwoServersSeeEveryTaskAndNeitherTakesTheOthersForVanished) {
  FleetServer a(location());
  FleetServer b(location());
  // The same task key on both machines: two tasks, one per owner.
  test::store_rounds(a.ws, k_task, {110, 120});
  test::store_rounds(b.ws, k_task, {90});
  a.sync.full_scan();
  b.sync.full_scan();
  auto rows = a.db->tasks();
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(b.db->tasks().size(), 2u);
  auto mine_a = a.db->task_by_key(a.owner(), k_task.id());
  auto mine_b = a.db->task_by_key(b.owner(), k_task.id());
  ASSERT_TRUE(mine_a && mine_b);
  EXPECT_NE(mine_a->uid, mine_b->uid);
  EXPECT_EQ(a.db->round_count(mine_a->uid), 3);
  EXPECT_EQ(a.db->round_count(mine_b->uid), 2);
  // A task only B has: A's polls and scans leave it (and its rounds) as B wrote them.
  test::store_rounds(b.ws, make_task("cpu_x86_64", "cpp", "matmul_f32_32x32x32", "search"), {70, 80, 85});
  b.sync.full_scan();
  auto only_b = a.db->task_by_key(b.owner(), "cpu_x86_64/cpp/matmul_f32_32x32x32/search");
  ASSERT_TRUE(only_b);
  for (int i = 0; i < 2; ++i) {
    a.sync.poll_known();
    a.sync.full_scan();
    a.sched.tick();
  }
  EXPECT_EQ(a.db->round_count(only_b->uid), 4);
  EXPECT_EQ(a.db->round_count(mine_b->uid), 2);
  EXPECT_EQ(a.db->sync_state(only_b->uid)->records, 4);
  EXPECT_EQ(a.db->task(only_b->uid)->stats["rounds"], only_b->stats["rounds"]);
  EXPECT_EQ(a.db->task(only_b->uid)->state, "external");
  EXPECT_EQ(a.db->task(only_b->uid)->owner, b.owner());
  EXPECT_FALSE(a.db->task_by_key(a.owner(), only_b->key));  // A adopted nothing of B's
  EXPECT_EQ(a.db->tasks().size(), 3u);
}

// A dashboard open on one server follows another server's task live: the poll after that server
// stored rounds or changed the state sends the same events as for a task of its own, with the
// owner named (the first poll only takes note; unchanged rows send nothing).
TEST_P(WebDatabaseBackends, AnotherServersProgressReachesThisServersEventStream) {
  FleetServer a(location());
  FleetServer b(location());
  web::EventBus bus;
  LedgerSync watcher(a.ws, *a.db, &bus);  // A's monitor, with its event stream
  test::store_rounds(b.ws, k_task, {100});
  b.sync.full_scan();
  const auto tb = a.db->task_by_key(b.owner(), k_task.id());
  ASSERT_TRUE(tb);
  EXPECT_EQ(watcher.poll_known().remote_changed, 0);  // first sight
  const uint64_t start = bus.last_id();
  EXPECT_EQ(watcher.poll_known().remote_changed, 0);  // nothing changed
  EXPECT_EQ(bus.last_id(), start);
  test::store_rounds(b.ws, k_task, {120, 130}, std::nullopt, 2);  // two more rounds at B
  b.sync.full_scan();
  TaskRow changed = *b.db->task(tb->uid);
  changed.state = "paused";
  changed.reason = "paused at B";
  changed.updated_at = "2026-12-02T17:00:00Z";
  b.db->update_task(changed);
  const SyncStats s = watcher.poll_known();
  EXPECT_EQ(s.remote_changed, 1);
  auto batch = bus.wait_after(start, std::chrono::milliseconds(0));
  std::string kinds;
  int rounds = 0;
  for (const auto& e : batch.events) {
    EXPECT_EQ(e->task_uid, tb->uid);
    EXPECT_EQ(e->data.value("owner", ""), b.owner()) << e->data.dump();
    kinds += e->kind + " ";
    if (e->kind == "round") ++rounds;
  }
  EXPECT_EQ(rounds, 2) << kinds;
  ASSERT_FALSE(batch.events.empty());
  EXPECT_EQ(batch.events.back()->kind, "state");
  EXPECT_EQ(batch.events.back()->data["state"], "paused");
  // A's own sync never touched B's rows (the baseline and three rounds, as B stored them).
  EXPECT_EQ(a.db->round_count(tb->uid), 4);
  EXPECT_EQ(a.db->task(tb->uid)->owner, b.owner());
}

TEST_P(WebDatabaseBackends, ASchedulerStartsStopsAndAdoptsOnlyItsOwnTasks) {
  FleetServer a(location());
  FleetServer b(location());
  b.launcher.next_pid = 5000;  // B's children are unknown to A's launcher, as on another machine
  TaskRow ta = a.add("a");
  TaskRow tb = b.add("b");  // the same device ("cpu") on another machine
  EXPECT_EQ(ta.owner, a.owner());
  EXPECT_EQ(tb.owner, b.owner());
  a.step();
  EXPECT_EQ(a.db->task(ta.uid)->state, "running");
  EXPECT_EQ(a.db->task(tb.uid)->state, "queued");  // A does not start B's queued task
  EXPECT_EQ(a.launcher.children.size(), 1u);
  b.step();
  EXPECT_EQ(b.db->task(tb.uid)->state, "running");
  EXPECT_EQ(b.launcher.children.size(), 1u);
  // A's scheduler does not take B's child (unknown to it) for one that ended, nor adopt it.
  a.sched.recover();
  for (int i = 0; i < 2; ++i) a.step();
  TaskRow still = *a.db->task(tb.uid);
  EXPECT_EQ(still.state, "running");
  EXPECT_EQ(still.crash_count, 0);
  EXPECT_EQ(still.runs, 1);
  EXPECT_FALSE(history_has(*a.db, tb.uid, "adopted_child"));
  EXPECT_EQ(a.launcher.children.size(), 1u);
  // Each scheduler's device slots are its own machine's.
  EXPECT_EQ(a.sched.devices()["cpu"]["task"], ta.uid);
  EXPECT_EQ(b.sched.devices()["cpu"]["task"], tb.uid);
}

TEST_P(WebDatabaseBackends, AnActionOnAnotherServersTaskIsARequestItsOwnerCarriesOut) {
  FleetServer a(location());
  FleetServer b(location());
  b.launcher.next_pid = 5000;
  TaskRow tb = b.add("b");
  b.step();
  ASSERT_EQ(b.db->task(tb.uid)->state, "running");
  // At A: not done there, refused directly, recorded for B.
  EXPECT_THROW(a.sched.act(tb.uid, "pause"), Error);
  TaskRequest q = a.sched.request(tb.uid, "pause");
  EXPECT_EQ(q.requested_by, a.owner());
  EXPECT_THROW(a.sched.request(tb.uid, "explode"), Error);
  try {
    a.sched.update_spec(tb.uid, TaskSpec::from_json(tb.spec, tb.gpu));
    FAIL() << "A changed B's spec";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::refused);
    EXPECT_NE(std::string(e.what()).find(b.owner()), std::string::npos) << e.what();
  }
  a.step();
  EXPECT_EQ(a.db->task(tb.uid)->state, "running");
  EXPECT_EQ(a.db->task_requests(tb.uid).size(), 1u);  // A leaves it to B
  EXPECT_TRUE(history_has(*a.db, tb.uid, "requested"));
  // B carries it out at its next tick: the child is asked to stop (and, being a fake that ends on
  // SIGTERM, is found stopped in the same tick).
  b.step();
  EXPECT_EQ(b.launcher.children.begin()->second.signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(b.db->task(tb.uid)->state, "paused");
  EXPECT_TRUE(b.db->task_requests(tb.uid).empty());
  EXPECT_TRUE(history_has(*b.db, tb.uid, "request_done"));
  // A request that does not apply when the owner reads it is refused in the history, not lost.
  a.sched.request(tb.uid, "retry");
  b.step();
  EXPECT_EQ(b.db->task(tb.uid)->state, "paused");
  EXPECT_TRUE(b.db->task_requests(tb.uid).empty());
  EXPECT_TRUE(history_has(*b.db, tb.uid, "request_refused"));
  a.sched.request(tb.uid, "resume");
  b.step();
  EXPECT_EQ(b.db->task(tb.uid)->state, "running");
}

TEST_P(WebDatabaseBackends, CheckComparesOnlyTheServersOwnRows) {
  FleetServer a(location());
  FleetServer b(location());
  test::store_rounds(a.ws, k_task, {110});
  test::store_rounds(b.ws, make_task("cpu_x86_64", "cpp", "matmul_f32_32x32x32", "search"), {90});
  a.sync.full_scan();
  b.sync.full_scan();
  CheckReport ra = check_database(a.ws, *a.db, a.owner());
  EXPECT_TRUE(ra.clean()) << ra.to_json().dump();
  EXPECT_EQ(ra.tasks_in_db, 1);
  EXPECT_EQ(ra.tasks_of_other_servers, 1);
  EXPECT_EQ(ra.rounds_in_db, 2);
  EXPECT_EQ(ra.to_json()["owner"], a.owner());
  CheckReport rb = check_database(b.ws, *b.db);  // the default owner is the server's own
  EXPECT_TRUE(rb.clean()) << rb.to_json().dump();
  EXPECT_EQ(rb.tasks_in_db, 1);
}

TEST_P(WebDatabaseBackends, ARowFromBeforeOwnersIsClaimedByTheServerThatHoldsItOnDisk) {
  {
    DatabaseOptions o;
    o.target_version = 2;
    auto db = open_database(location(), o);
  }
  scalar(k_v1_task);  // key cpu_x86_64/cpp/matmul_f32_64x64x64/m1, uid aaa111
  FleetServer a(location());
  FleetServer b(location());
  const TaskRef t = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "m1");
  ensure_task_config(a.ws, t, "aaa111");
  test::store_rounds(a.ws, t, {110, 120});
  // B does not hold it: B leaves it unclaimed, and its --check does not count it as B's.
  SyncStats sb = b.sync.full_scan();
  EXPECT_EQ(sb.tasks_claimed, 0);
  EXPECT_EQ(b.db->task("aaa111")->owner, "");
  EXPECT_THROW(b.sched.request("aaa111", "pause"), Error);  // no owner to carry it out
  EXPECT_EQ(check_database(b.ws, *b.db).tasks_unclaimed, 1);
  EXPECT_TRUE(check_database(b.ws, *b.db).clean());
  // A holds it: claimed (not adopted twice), then synced as A's.
  SyncStats sa = a.sync.full_scan();
  EXPECT_EQ(sa.tasks_claimed, 1);
  EXPECT_EQ(sa.tasks_adopted, 0);
  ASSERT_EQ(a.db->tasks().size(), 1u);
  EXPECT_EQ(a.db->task("aaa111")->owner, a.owner());
  EXPECT_EQ(a.db->round_count("aaa111"), 3);
  EXPECT_TRUE(history_has(*a.db, "aaa111", "claimed"));
  EXPECT_TRUE(check_database(a.ws, *a.db).clean()) << check_database(a.ws, *a.db).to_json().dump();
  // A second server holding a copy of it finds it claimed: a conflict.
  ensure_task_config(b.ws, t, "aaa111");
  SyncStats again = b.sync.full_scan();
  ASSERT_EQ(again.conflicts.size(), 1u);
  EXPECT_EQ(a.db->task("aaa111")->owner, a.owner());
}

TEST_P(WebDatabaseBackends, ATaskWhoseUidAnotherServerOwnsIsAConflictNotStolen) {
  FleetServer a(location());
  FleetServer b(location());
  test::store_rounds(a.ws, k_task, {110, 120});
  a.sync.full_scan();
  const std::string uid = a.db->task_by_key(a.owner(), k_task.id())->uid;
  // B's workspace holds a copy of A's task (the same task_uid), with other rounds.
  ensure_task_config(b.ws, k_task, uid);
  test::store_rounds(b.ws, k_task, {50});
  SyncStats s = b.sync.full_scan();
  ASSERT_EQ(s.conflicts.size(), 1u) << s.to_json().dump();
  EXPECT_NE(s.conflicts[0].find(uid), std::string::npos) << s.conflicts[0];
  EXPECT_NE(s.conflicts[0].find(a.owner()), std::string::npos) << s.conflicts[0];
  EXPECT_EQ(s.tasks_adopted, 0);
  EXPECT_EQ(b.db->tasks().size(), 1u);
  EXPECT_EQ(b.db->task(uid)->owner, a.owner());
  EXPECT_EQ(b.db->round_count(uid), 3);  // A's rounds, untouched
  CheckReport rb = check_database(b.ws, *b.db);
  ASSERT_FALSE(rb.clean());
  EXPECT_EQ(rb.differences[0].kind, "owned_elsewhere");
  EXPECT_TRUE(check_database(a.ws, *a.db).clean());
}
