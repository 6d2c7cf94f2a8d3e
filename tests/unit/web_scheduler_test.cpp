// The scheduler, with a fake launcher and a fake clock: one task per device, budgets, actions,
// crash restarts up to a limit, rate-limit parking, and adoption after a restart.
#include <gtest/gtest.h>
#include <signal.h>

#include "croq/ledger/documents.hpp"
#include "croq/util/error.hpp"
#include "croq/util/time.hpp"
#include "croq/web/ledger_sync.hpp"
#include "croq/web/scheduler.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

using namespace croq;
using namespace croq::web;
using croq::test::FakeLauncher;
using croq::test::TempDir;

namespace {

struct Fixture {
  TempDir dir;
  Workspace ws{dir.path()};
  std::unique_ptr<Database> db = open_database((dir / "m.db").string());
  EventBus bus;
  FakeLauncher launcher;
  // Whole milliseconds, as the timestamps the scheduler writes.
  std::chrono::system_clock::time_point t =
      std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
  std::unique_ptr<Scheduler> sched;
  LedgerSync sync{ws, *db, &bus};

  Fixture() { make_scheduler(); }
  void make_scheduler() {
    SchedulerOptions o;
    o.croq_exe = "/usr/bin/croq";
    o.stop_grace = std::chrono::milliseconds(5000);
    sched = std::make_unique<Scheduler>(ws, *db, &bus, launcher, o, [this] { return t; });
  }
  void advance(double seconds) { t += std::chrono::milliseconds(static_cast<long long>(seconds * 1000)); }

  TaskRow add(const std::string& model, json extra = json::object()) {
    json j = {{"gpu", "cpu_x86_64"},
              {"dsl", "cpp"},
              {"shape_key", "matmul_f32_64x64x64"},
              {"model", model},
              {"driver", {{"kind", "command"}, {"argv", {"bash", "drive.sh", "{shape_key}", "{task_uid}"}}}}};
    for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
    return sched->create(TaskSpec::from_json(j));
  }
  TaskRow row(const std::string& uid) { return *db->task(uid); }
  void tick() {
    for (const auto& r : db->tasks()) sync.sync_task(r);
    sched->tick();
  }
};

}  // namespace

TEST(WebScheduler, CreateWritesTheUidIntoTaskConfigFirst) {
  Fixture f;
  TaskRow r = f.add("a");
  auto cfg = read_task_config(f.ws, make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "a"));
  ASSERT_TRUE(cfg);
  EXPECT_EQ((*cfg)["task_uid"], r.uid);
  EXPECT_EQ((*cfg)["monitor"]["spec"]["driver"]["argv"][0], "bash");
  EXPECT_EQ(r.state, "queued");
  EXPECT_THROW(f.add("a"), Error);  // the same task twice
}

TEST(WebScheduler, StartsTheDriverWithExpandedArgumentsAndTaskEnvironment) {
  Fixture f;
  TaskRow r = f.add("a");
  f.tick();
  ASSERT_EQ(f.launcher.children.size(), 1u);
  const auto& spec = f.launcher.children.begin()->second.spec;
  EXPECT_EQ(spec.argv, (std::vector<std::string>{"bash", "drive.sh", "matmul_f32_64x64x64", r.uid}));
  EXPECT_EQ(spec.env_set.at("CROQ_TASK_UID"), r.uid);
  EXPECT_EQ(spec.env_set.at("CROQ_ROOT"), f.ws.root().string());
  EXPECT_EQ(spec.env_set.count("CUDA_VISIBLE_DEVICES"), 0u);  // device cpu
  EXPECT_NE(spec.log_path.string().find("memory/matmul_f32_64x64x64/a/monitor/run-0001.log"), std::string::npos);
  EXPECT_EQ(f.row(r.uid).state, "running");
  EXPECT_EQ(f.row(r.uid).pid, f.launcher.last_pid());
}

TEST(WebScheduler, OneRunningTaskPerDevice) {
  Fixture f;
  TaskRow a = f.add("a");
  TaskRow b = f.add("b");
  TaskRow c = f.add("c", {{"device", "other"}});
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "running");
  EXPECT_EQ(f.row(b.uid).state, "queued");
  EXPECT_EQ(f.row(c.uid).state, "running");
  f.launcher.end(f.row(a.uid).pid, 0);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "done");
  EXPECT_EQ(f.row(b.uid).state, "running");
}

TEST(WebScheduler, HigherPriorityStartsFirst) {
  Fixture f;
  TaskRow a = f.add("a");
  TaskRow b = f.add("b", {{"priority", 5}});
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "queued");
  EXPECT_EQ(f.row(b.uid).state, "running");
}

TEST(WebScheduler, RestartOnExitStartsANewSessionUntilTheBudget) {
  Fixture f;
  TaskRow a = f.add("a", {{"restart_on_exit", true}, {"budgets", {{"rounds", 2}}}});
  f.tick();
  f.launcher.end(f.row(a.uid).pid, 0);
  f.tick();  // exit seen: queued again, then started
  EXPECT_EQ(f.row(a.uid).state, "running");
  EXPECT_EQ(f.row(a.uid).runs, 2);
  test::store_rounds(f.ws, make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "a"), {110, 120});
  f.launcher.end(f.row(a.uid).pid, 0);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "done");
  EXPECT_NE(f.row(a.uid).reason.find("budget reached"), std::string::npos);
}

TEST(WebScheduler, CrashesAreRestartedUpToTheLimitThenTheTaskFails) {
  Fixture f;
  TaskRow a = f.add("a", {{"budgets", {{"max_restarts", 2}}}});
  for (int crash = 1; crash <= 2; ++crash) {
    f.tick();
    ASSERT_EQ(f.row(a.uid).state, "running") << crash;
    f.launcher.end(f.row(a.uid).pid, 1);
    f.tick();
    EXPECT_EQ(f.row(a.uid).state, "queued");
    EXPECT_EQ(f.row(a.uid).crash_count, crash);
    f.tick();  // the back-off has not passed: still queued
    EXPECT_EQ(f.row(a.uid).state, "queued");
    f.advance(5.0 * crash + 1);
  }
  f.tick();
  f.launcher.end(f.row(a.uid).pid, 0, SIGSEGV);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "failed");
  EXPECT_EQ(f.row(a.uid).last_exit["signal"], SIGSEGV);
  EXPECT_EQ(f.launcher.children.size(), 3u);
  // Retry starts afresh.
  f.sched->act(a.uid, "retry");
  EXPECT_EQ(f.row(a.uid).crash_count, 0);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "running");
}

TEST(WebScheduler, ExitCode75ParksTheTaskAndRetriesItLater) {
  Fixture f;
  TaskRow a = f.add("a", {{"budgets", {{"park_seconds", 60}}}});
  f.tick();
  f.launcher.end(f.row(a.uid).pid, 75);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "parked");
  EXPECT_EQ(f.row(a.uid).crash_count, 0);
  EXPECT_EQ(f.row(a.uid).park_count, 1);
  f.advance(30);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "parked");
  f.advance(31);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "running");
  // A second park in a row waits twice as long.
  f.launcher.end(f.row(a.uid).pid, 75);
  f.tick();
  auto until = parse_iso8601(f.row(a.uid).not_before);
  ASSERT_TRUE(until);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(*until - f.t).count(), 120);
}

TEST(WebScheduler, RateLimitMessageInTheOutputParksTheTask) {
  Fixture f;
  TaskRow a = f.add("a");
  f.tick();
  const auto& spec = f.launcher.children.at(f.row(a.uid).pid).spec;
  {
    std::ofstream(spec.log_path, std::ios::app) << "calling the model...\nError: 429 Too Many Requests\n";
  }
  f.launcher.end(f.row(a.uid).pid, 1);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "parked");
  EXPECT_NE(f.row(a.uid).reason.find("rate limit"), std::string::npos);
}

TEST(WebScheduler, RateLimitPhrases) {
  EXPECT_TRUE(mentions_rate_limit("API Rate Limit exceeded"));
  EXPECT_TRUE(mentions_rate_limit("HTTP 429"));
  EXPECT_TRUE(mentions_rate_limit("usage limit reached, resets at 5pm"));
  EXPECT_FALSE(mentions_rate_limit("measured 429.5 TFLOPS"));
  EXPECT_FALSE(mentions_rate_limit("segmentation fault"));
}

TEST(WebScheduler, RoundsBudgetStopsTheChildAndMarksTheTaskDone) {
  Fixture f;
  TaskRow a = f.add("a", {{"budgets", {{"rounds", 2}}}});
  f.tick();
  int pid = f.row(a.uid).pid;
  test::store_rounds(f.ws, make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "a"), {110, 120});
  f.launcher.term_ends_child = false;
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "stopping");
  EXPECT_EQ(f.launcher.children.at(pid).signals, (std::vector<int>{SIGTERM}));
  f.advance(6);  // past the grace period: SIGKILL
  f.tick();
  EXPECT_EQ(f.launcher.children.at(pid).signals.back(), SIGKILL);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "done");
  EXPECT_NE(f.row(a.uid).reason.find("2 of 2 rounds"), std::string::npos);
}

TEST(WebScheduler, TimeBudgetCountsEveryRun) {
  Fixture f;
  TaskRow a = f.add("a", {{"budgets", {{"seconds", 100}}}, {"restart_on_exit", true}});
  f.tick();
  f.advance(60);
  f.launcher.end(f.row(a.uid).pid, 0);
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "running");
  EXPECT_NEAR(f.row(a.uid).run_seconds, 60, 0.01);
  f.advance(41);
  f.tick();
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "done");
}

TEST(WebScheduler, PauseStopsResumeQueuesCancelEnds) {
  Fixture f;
  TaskRow a = f.add("a");
  f.tick();
  f.sched->act(a.uid, "pause");
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "paused");
  f.tick();
  EXPECT_EQ(f.launcher.running(), 0);  // a paused task is not started again
  f.sched->act(a.uid, "resume");
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "running");
  EXPECT_EQ(f.row(a.uid).runs, 2);
  f.sched->act(a.uid, "cancel");
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "cancelled");
  EXPECT_EQ(f.row(a.uid).last_exit["outcome"], "stopped");
}

TEST(WebScheduler, ActionsThatDoNotApplyAreRefusedAndChangeNothing) {
  Fixture f;
  TaskRow a = f.add("a");
  try {
    f.sched->act(a.uid, "resume");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::refused);
  }
  EXPECT_EQ(f.row(a.uid).state, "queued");
  EXPECT_THROW(f.sched->act(a.uid, "explode"), Error);
  EXPECT_THROW(f.sched->act("nosuchtask", "pause"), Error);
}

TEST(WebScheduler, AProgramThatCannotStartCountsAsACrash) {
  Fixture f;
  f.launcher.fail_launch = true;
  TaskRow a = f.add("a", {{"budgets", {{"max_restarts", 0}}}});
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "failed");
  EXPECT_NE(f.row(a.uid).reason.find("program not found"), std::string::npos);
}

TEST(WebScheduler, ARestartedServerAdoptsARunningChildAndHandlesOneThatEnded) {
  Fixture f;
  TaskRow a = f.add("a");
  TaskRow b = f.add("b", {{"device", "other"}});
  f.tick();
  int pa = f.row(a.uid).pid, pb = f.row(b.uid).pid;
  // The server dies; meanwhile b's child ends. A new scheduler takes over.
  f.launcher.end(pb, 0);
  f.make_scheduler();
  f.sched->recover();
  EXPECT_EQ(f.row(a.uid).state, "running");
  EXPECT_NE(f.row(a.uid).reason.find("adopted"), std::string::npos);
  f.tick();
  EXPECT_EQ(f.row(a.uid).pid, pa);
  EXPECT_EQ(f.row(b.uid).state, "done");
  EXPECT_EQ(f.launcher.children.size(), 2u);  // nothing started twice
}

TEST(WebScheduler, AChildGoneWithoutAStatusIsACrash) {
  Fixture f;
  TaskRow a = f.add("a");
  f.tick();
  f.launcher.children.clear();  // vanished (SIGKILL, reboot)
  f.tick();
  EXPECT_EQ(f.row(a.uid).state, "queued");
  EXPECT_EQ(f.row(a.uid).crash_count, 1);
}

TEST(WebScheduler, StateChangesAreWrittenBesideTheLedgerAndPublished) {
  Fixture f;
  TaskRow a = f.add("a");
  f.tick();
  auto st = read_monitor_state(f.ws, make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "a"));
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["state"], "running");
  EXPECT_EQ((*st)["task_uid"], a.uid);
  int states = 0;
  for (const auto& e : f.bus.wait_after(0, std::chrono::milliseconds(0), 1000).events) states += e->kind == "state";
  EXPECT_GE(states, 2);  // starting, started
}
