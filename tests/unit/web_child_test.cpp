// The supervised launcher with real processes: output captured into the run log, the exit status
// written by the supervisor, signals to the process group, identity by start time.
#include <gtest/gtest.h>
#include <signal.h>

#include "croq/web/child.hpp"
#include "support/test_support.hpp"
#include "support/web_support.hpp"

using namespace croq;
using namespace croq::web;
using croq::test::slurp;
using croq::test::TempDir;
using croq::test::wait_for;

namespace {

LaunchSpec spec_in(const TempDir& dir, std::vector<std::string> argv) {
  LaunchSpec s;
  s.argv = std::move(argv);
  s.cwd = dir.path();
  s.log_path = dir / "run/run-0001.log";
  s.status_path = dir / "run/run-0001.status.json";
  s.pid_path = dir / "run/run-0001.pid";
  s.env_set = {{"CROQ_TEST_VALUE", "forty two"}};
  return s;
}

ChildStatus wait_exit(SupervisedLauncher& l, const ChildHandle& h) {
  ChildStatus st;
  wait_for([&] {
    st = l.poll(h);
    return st.kind != ChildStatus::Kind::running;
  });
  return st;
}

}  // namespace

TEST(WebChild, OutputGoesToTheRunLogAndTheExitStatusIsRecorded) {
  TempDir dir;
  SystemProcessRunner runner;
  SupervisedLauncher l(runner);
  Launched r = l.launch(spec_in(dir, {"sh", "-c", "echo out $CROQ_TEST_VALUE; echo err >&2; pwd; exit 3"}));
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_GT(r.handle.pid, 0);
  ChildStatus st = wait_exit(l, r.handle);
  EXPECT_EQ(st.kind, ChildStatus::Kind::exited);
  EXPECT_EQ(st.exit_code, 3);
  std::string log = slurp(dir / "run/run-0001.log");
  EXPECT_NE(log.find("out forty two"), std::string::npos);
  EXPECT_NE(log.find("err"), std::string::npos);
  EXPECT_NE(log.find(dir.path().string()), std::string::npos);
  EXPECT_TRUE(read_child_status(dir / "run/run-0001.status.json"));
  EXPECT_EQ(std::stoi(slurp(dir / "run/run-0001.pid")), r.handle.pid);
}

TEST(WebChild, SigtermReachesTheCommandAndTheSupervisorRecordsIt) {
  TempDir dir;
  SystemProcessRunner runner;
  SupervisedLauncher l(runner);
  Launched r = l.launch(spec_in(dir, {"sleep", "60"}));
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(l.poll(r.handle).kind, ChildStatus::Kind::running);
  l.signal(r.handle, SIGTERM);
  ChildStatus st = wait_exit(l, r.handle);
  EXPECT_EQ(st.kind, ChildStatus::Kind::exited);
  EXPECT_EQ(st.signal, SIGTERM);
}

TEST(WebChild, SigkillEndsEverythingAndLeavesNoStatus) {
  TempDir dir;
  SystemProcessRunner runner;
  SupervisedLauncher l(runner);
  Launched r = l.launch(spec_in(dir, {"sleep", "60"}));
  ASSERT_TRUE(r.started);
  l.signal(r.handle, SIGKILL);
  EXPECT_EQ(wait_exit(l, r.handle).kind, ChildStatus::Kind::vanished);
}

TEST(WebChild, AMissingProgramIsNotStarted) {
  TempDir dir;
  SystemProcessRunner runner;
  SupervisedLauncher l(runner);
  Launched r = l.launch(spec_in(dir, {"no-such-program-croq"}));
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("not found"), std::string::npos);
}

TEST(WebChild, ARecycledPidIsNotMistakenForTheChild) {
  TempDir dir;
  SystemProcessRunner runner;
  SupervisedLauncher l(runner);
  Launched r = l.launch(spec_in(dir, {"sleep", "60"}));
  ASSERT_TRUE(r.started);
  ChildHandle wrong = r.handle;
  wrong.start += 1;  // another process with the same pid
  wrong.status_path = dir / "none.json";
  EXPECT_EQ(l.poll(wrong).kind, ChildStatus::Kind::vanished);
  l.signal(wrong, SIGTERM);  // must not reach the real child
  EXPECT_EQ(l.poll(r.handle).kind, ChildStatus::Kind::running);
  l.signal(r.handle, SIGKILL);
  wait_exit(l, r.handle);
}

TEST(WebChild, StartTimeOfTheCurrentProcessIsKnown) {
  EXPECT_TRUE(process_start_time(::getpid()));
  EXPECT_FALSE(process_start_time(0));
}
