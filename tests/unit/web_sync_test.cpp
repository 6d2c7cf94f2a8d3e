// Keeping the database in step with the ledgers: adoption without duplicates, incremental reads,
// torn and rewritten files, legacy TSV ledgers, and the --check comparison.
#include <gtest/gtest.h>

#include "croq/ledger/documents.hpp"
#include "croq/util/fs.hpp"
#include "croq/web/ledger_sync.hpp"
#include "croq/web/scheduler.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

using namespace croq;
using namespace croq::web;
using croq::test::store_rounds;
using croq::test::TempDir;

namespace {

struct Fixture {
  TempDir dir;
  Workspace ws{dir.path()};
  std::unique_ptr<Database> db = open_database((dir / ".croq/monitor.db").string());
  EventBus bus;
  LedgerSync sync{ws, *db, &bus};
  TaskRef task = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "search");

  std::vector<EventPtr> events(const std::string& kind) {
    std::vector<EventPtr> out;
    for (const auto& e : bus.wait_after(0, std::chrono::milliseconds(0), 100000).events) {
      if (e->kind == kind) out.push_back(e);
    }
    return out;
  }
};

}  // namespace

TEST(WebSync, TaskFoundOnDiskIsAdoptedAndGetsItsUidWritten) {
  Fixture f;
  store_rounds(f.ws, f.task, {110, 120});
  ASSERT_FALSE(read_task_config(f.ws, f.task));
  SyncStats s = f.sync.full_scan();
  EXPECT_EQ(s.tasks_adopted, 1);
  auto rows = f.db->tasks();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].origin, "adopted");
  EXPECT_EQ(rows[0].state, "external");
  auto cfg = read_task_config(f.ws, f.task);
  ASSERT_TRUE(cfg);
  EXPECT_EQ((*cfg)["task_uid"], rows[0].uid);
  EXPECT_EQ(f.db->round_count(rows[0].uid), 3);
}

TEST(WebSync, AdoptedTaskKeepsTheUidItAlreadyHas) {
  Fixture f;
  ensure_task_config(f.ws, f.task, "seed0uid1234");
  f.sync.full_scan();
  ASSERT_EQ(f.db->tasks().size(), 1u);
  EXPECT_EQ(f.db->tasks()[0].uid, "seed0uid1234");
}

TEST(WebSync, ScanningAgainOrWithAReopenedDatabaseNeverDuplicates) {
  Fixture f;
  store_rounds(f.ws, f.task, {110});
  f.sync.full_scan();
  f.sync.full_scan();
  EXPECT_EQ(f.db->tasks().size(), 1u);
  std::string uid = f.db->tasks()[0].uid;
  f.db.reset();
  auto db2 = open_database((f.dir / ".croq/monitor.db").string());
  LedgerSync sync2(f.ws, *db2, nullptr);
  SyncStats s = sync2.full_scan();
  EXPECT_EQ(s.tasks_adopted, 0);
  ASSERT_EQ(db2->tasks().size(), 1u);
  EXPECT_EQ(db2->tasks()[0].uid, uid);
  EXPECT_EQ(db2->round_count(uid), 2);
}

TEST(WebSync, OnlyNewRecordsAreReadAndAnnounced) {
  Fixture f;
  store_rounds(f.ws, f.task, {110, 120});
  f.sync.full_scan();
  std::string uid = f.db->tasks()[0].uid;
  auto before = f.db->sync_state(uid);
  EXPECT_TRUE(f.events("round").empty());  // a first index is one "task" event, not one per record
  store_rounds(f.ws, f.task, {130, 90}, std::nullopt, 3);
  SyncStats s = f.sync.poll_known();
  EXPECT_EQ(s.rounds_added, 2);
  EXPECT_EQ(f.db->round_count(uid), 5);
  auto after = f.db->sync_state(uid);
  EXPECT_GT(after->bytes, before->bytes);
  auto rounds = f.events("round");
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0]->data["tflops"], 130.0);
  EXPECT_EQ(rounds[1]->data["decision"], "DISCARD");
  EXPECT_EQ(rounds[1]->data["stats"]["best_tflops"], 130.0);
  // Nothing changed: nothing is read.
  EXPECT_EQ(f.sync.poll_known().tasks_changed, 0);
}

TEST(WebSync, TornLastLineWaitsUntilItIsComplete) {
  Fixture f;
  store_rounds(f.ws, f.task, {110});
  f.sync.full_scan();
  std::string uid = f.db->tasks()[0].uid;
  std::string line =
      R"({"round":2,"iter":"iter002","kernel":"iter002_x","tflops":130,"decision":"KEEP","bottleneck":"mixed","idea":"y","timestamp":"2026-01-01T00:00:00Z"})";
  {
    std::ofstream out(f.ws.idea_log(f.task), std::ios::app);
    out << line.substr(0, 40);
  }
  f.sync.poll_known();
  EXPECT_EQ(f.db->round_count(uid), 2);
  {
    std::ofstream out(f.ws.idea_log(f.task), std::ios::app);
    out << line.substr(40) << "\n";
  }
  f.sync.poll_known();
  EXPECT_EQ(f.db->round_count(uid), 3);
  EXPECT_EQ(f.db->rounds(uid).back().kernel, "iter002_x");
}

TEST(WebSync, RewrittenLedgerIsIndexedAgainFromTheStart) {
  Fixture f;
  store_rounds(f.ws, f.task, {110, 120, 130});
  f.sync.full_scan();
  std::string uid = f.db->tasks()[0].uid;
  // A repair (session clean) rewrites the file shorter.
  std::string text = test::slurp(f.ws.idea_log(f.task));
  auto first_nl = text.find('\n');
  atomic_write(f.ws.idea_log(f.task), text.substr(0, first_nl + 1));
  SyncStats s = f.sync.poll_known();
  EXPECT_EQ(s.reindexed, 1);
  EXPECT_EQ(f.db->round_count(uid), 1);
}

TEST(WebSync, LegacyTsvOnlyLedgerIsIndexed) {
  Fixture f;
  ensure_dir(f.ws.kind_dir(f.task, ArtifactKind::logs));
  atomic_write(f.ws.results_tsv(f.task),
               "iter\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\n"
               "iter000\titer000_cublas\t100\tBASELINE\tn/a\tbaseline\n"
               "iter001\titer001_a\t120\tKEEP\tmemory_bound\tfirst\n");
  f.sync.full_scan();
  ASSERT_EQ(f.db->tasks().size(), 1u);
  std::string uid = f.db->tasks()[0].uid;
  EXPECT_EQ(f.db->round_count(uid), 2);
  EXPECT_EQ(f.db->sync_state(uid)->kind, "tsv");
  EXPECT_EQ(f.db->task(uid)->stats["baseline_tflops"], 100.0);
}

TEST(WebSync, SummaryMeansWhatTheLedgerIndexMeans) {
  Fixture f;
  store_rounds(f.ws, f.task, {110, 0, 150, 140});
  f.sync.full_scan();
  json st = f.db->tasks()[0].stats;
  EXPECT_EQ(st["best_tflops"], 150.0);
  EXPECT_EQ(st["baseline_tflops"], 100.0);
  EXPECT_DOUBLE_EQ(st["pct_of_baseline"].get<double>(), 150.0);
  EXPECT_EQ(st["decisions"]["COMPILE_FAIL"], 1);
  EXPECT_EQ(st["rounds"], 4);
}

TEST(WebSync, CheckIsCleanAfterASyncAndFindsEveryKindOfDifference) {
  Fixture f;
  store_rounds(f.ws, f.task, {110, 120});
  CheckReport before = check_database(f.ws, *f.db);
  ASSERT_EQ(before.differences.size(), 1u);
  EXPECT_EQ(before.differences[0].kind, "missing_in_db");

  f.sync.full_scan();
  CheckReport clean = check_database(f.ws, *f.db);
  EXPECT_TRUE(clean.clean()) << clean.to_json().dump();
  EXPECT_TRUE(clean.pending.empty());
  EXPECT_EQ(clean.rounds_on_disk, 3);
  EXPECT_EQ(clean.rounds_in_db, 3);

  // The disk moves ahead: the database holds a prefix (pending, not a difference).
  store_rounds(f.ws, f.task, {130}, std::nullopt, 3);
  CheckReport behind = check_database(f.ws, *f.db);
  EXPECT_TRUE(behind.clean());
  ASSERT_EQ(behind.pending.size(), 1u);
  EXPECT_EQ(behind.pending[0].kind, "behind");

  // The database says something the disk does not.
  std::string uid = f.db->tasks()[0].uid;
  SyncUpdate bad;
  bad.replace = true;
  auto rows = f.db->rounds(uid);
  rows[1].tflops = 999.0;
  bad.rounds = rows;
  bad.state = *f.db->sync_state(uid);
  f.db->apply_sync(uid, bad);
  CheckReport tampered = check_database(f.ws, *f.db);
  ASSERT_FALSE(tampered.clean());
  EXPECT_EQ(tampered.differences[0].kind, "round_differs");

  // A folder that disappeared.
  std::filesystem::remove_all(f.ws.kind_dir(f.task, ArtifactKind::logs));
  CheckReport gone = check_database(f.ws, *f.db);
  ASSERT_FALSE(gone.clean());
  EXPECT_EQ(gone.differences.back().kind, "missing_on_disk");
}

TEST(WebSync, ALostDatabaseIsRebuiltWithSpecAndStateFromDisk) {
  Fixture f;
  test::FakeLauncher launcher;
  SchedulerOptions so;
  so.croq_exe = "/bin/true";
  Scheduler sched(f.ws, *f.db, nullptr, launcher, so);
  TaskSpec spec = TaskSpec::from_json(json{{"gpu", "cpu_x86_64"}, {"dsl", "cpp"}, {"shape_key", "matmul_f32_64x64x64"},
                                           {"model", "search"}, {"driver", {{"argv", {"bash", "x.sh"}}}},
                                           {"budgets", {{"rounds", 9}}}});
  TaskRow created = sched.create(spec);
  sched.act(created.uid, "pause");
  // The database is lost; a new one is built from the files.
  auto db2 = open_database((f.dir / "other.db").string());
  LedgerSync sync2(f.ws, *db2, nullptr);
  sync2.full_scan();
  auto row = db2->task(created.uid);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->origin, "created");
  EXPECT_EQ(row->state, "paused");
  EXPECT_EQ(row->spec["budgets"]["rounds"], 9);
  EXPECT_EQ(row->spec["driver"]["argv"][1], "x.sh");
}

// The monitor shows folders of any DSL, not only those croq builds (a tilelang tuning folder of
// the croq-tune skill's original tools, with only its results.tsv): adopted, its rounds indexed.
TEST(WebSync, TasksOfADslCroqCannotBuildAreAdoptedAndIndexed) {
  Fixture f;
  TaskRef t = make_task("sm90_H100", "tilelang", "matmul_bf16fp32_2048x2048x1024", "opus-4");
  const fs::path logs = f.ws.kind_dir(t, ArtifactKind::logs);
  fs::create_directories(logs);
  atomic_write(logs / "results.tsv",
               "round\titer\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\n"
               "0\titer000\titer000_cublas\t610.2\tBASELINE\tn/a\tbaseline\n"
               "1\titer001\titer001_draft\t301.5\tKEEP\tmemory_bound\tfirst\n",
               false);
  SyncStats s = f.sync.full_scan();
  EXPECT_EQ(s.tasks_adopted, 1);
  auto rows = f.db->tasks();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].dsl, "tilelang");
  EXPECT_EQ(f.db->round_count(rows[0].uid), 2);
}
