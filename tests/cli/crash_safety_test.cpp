// Crash safety and concurrency of the ledger, on real processes:
//  - a process storing rounds in a loop is killed with SIGKILL at 200 random moments; after each
//    kill every file parses, no record is half-written (a torn last line at most, which the next
//    store cuts off), and the records are exactly a prefix of what was stored, in order;
//  - 8 processes each reserve the next iteration and store it 200 times into one task at once:
//    1,600 records, none lost or duplicated, all ids unique, 1,600 TSV rows; and the same, fewer
//    rounds, through the `croq next-iter` and `croq store-round` verbs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/session/maintenance.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "helpers/store_loop.hpp"
#include "support/test_support.hpp"

using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

// A child process running the store loop, its stdout read through a pipe.
struct LoopChild {
  pid_t pid = -1;
  int out_fd = -1;
  std::string out;  // what it printed so far
};

LoopChild start_loop(const fs::path& root, long first_seq) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    std::string first = std::to_string(first_seq);
    ::execl(CROQ_STORE_LOOP_BIN, CROQ_STORE_LOOP_BIN, root.c_str(), first.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  return {pid, fds[0], {}};
}

// Blocks until the child has printed "ready" (or ended).
void wait_ready(LoopChild& c) {
  char buf[256];
  while (c.out.find("ready\n") == std::string::npos) {
    ssize_t n = ::read(c.out_fd, buf, sizeof buf);
    if (n <= 0) return;
    c.out.append(buf, static_cast<size_t>(n));
  }
}

// Kills the child and returns the highest seq it acknowledged (0 if none), and how it ended.
long kill_and_collect(LoopChild& c, int* status) {
  ::kill(c.pid, SIGKILL);
  ::waitpid(c.pid, status, 0);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(c.out_fd, buf, sizeof buf)) > 0) c.out.append(buf, static_cast<size_t>(n));
  ::close(c.out_fd);
  long last = 0;
  for (const auto& line : croq::split_lines(c.out)) {
    if (line.rfind("stored ", 0) == 0) last = std::stol(line.substr(7));
  }
  return last;
}

struct Survivors {
  long records = 0;        // whole records, all checked
  bool torn_tail = false;  // an unterminated last line (a write cut short by the kill)
  long tsv_rows = 0;
};

// Checks every file of the task after a kill; returns what survived. `acked` is the highest seq
// acknowledged so far (by any run): that many records must be there, and at most one more (the
// store in flight when the kill came).
Survivors check_after_kill(const croq::Workspace& ws, const croq::TaskRef& task, long acked, int kill_no) {
  using namespace croq;
  Survivors s;
  SCOPED_TRACE("kill #" + std::to_string(kill_no));
  const std::string log = read_file(ws.idea_log(task)).value_or("");
  const size_t end = log.rfind('\n') == std::string::npos ? 0 : log.rfind('\n') + 1;
  s.torn_tail = end < log.size();
  JsonlParse p = parse_idea_log(std::string_view(log).substr(0, end));
  EXPECT_EQ(p.invalid_lines, 0) << "every whole line is a whole record";
  std::set<int> iters, attempts, rounds;
  int last_round = 0;
  for (size_t i = 0; i < p.records.size(); ++i) {
    const RoundRecord& r = p.records[i];
    const long seq = static_cast<long>(i) + 1;
    EXPECT_EQ(get_integer(r.extra, "seq").value_or(-1), seq) << "records are a prefix of the stored sequence, in order";
    EXPECT_EQ(r.idea, test::expected_idea(seq)) << "record " << seq << " holds exactly what was stored";
    EXPECT_EQ(std::string(decision_name(r.decision)), test::loop_decision(seq));
    if (auto n = r.iter_number()) {
      EXPECT_TRUE(iters.insert(*n).second) << "iteration id reused: " << r.iter;
    }
    if (auto a = r.attempt_index()) {
      EXPECT_TRUE(attempts.insert(*a).second) << "attempt id reused: " << r.iter;
    }
    EXPECT_TRUE(rounds.insert(r.round).second);
    EXPECT_GT(r.round, last_round);
    last_round = r.round;
  }
  s.records = static_cast<long>(p.records.size());
  EXPECT_GE(s.records, acked) << "an acknowledged store was lost";
  EXPECT_LE(s.records, acked + 1) << "at most the store in flight landed unacknowledged";

  // The view: whole rows, a prefix of the records.
  const std::string tsv = read_file(ws.results_tsv(task)).value_or("");
  if (!tsv.empty()) {
    EXPECT_EQ(tsv.back(), '\n') << "no torn TSV row";
    std::vector<std::string> warnings;
    auto rows = parse_results_tsv(tsv, &warnings);
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    s.tsv_rows = static_cast<long>(rows.size());
    EXPECT_LE(s.tsv_rows, s.records);
    EXPECT_GE(s.tsv_rows, s.records - 2) << "the view is at most one store behind (plus the one in flight)";
    for (size_t i = 0; i < rows.size() && i < p.records.size(); ++i) {
      EXPECT_EQ(rows[i].kernel, p.records[i].kernel) << "row " << i + 1;
      EXPECT_EQ(rows[i].idea, p.records[i].idea) << "row " << i + 1;
    }
  }
  // The JSON documents are replaced whole: each parses.
  for (const fs::path& doc : {ws.checkpoint(task), ws.reservations(task), ws.ledger_index(task)}) {
    if (auto text = read_file(doc)) {
      EXPECT_TRUE(try_parse_json(*text).has_value()) << doc << ": " << preview(*text);
    }
  }
  if (fs::exists(ws.checkpoint(task))) {
    EXPECT_NO_THROW(read_checkpoint(ws, task));
  }
  return s;
}

TEST(CrashSafety, KillNineDuringAStoreLoopLeavesAPrefixOfWhatWasStored) {
  using namespace croq;
  TempDir dir;
  fs::create_directories(dir / "tuning");
  Workspace ws(dir.path());
  TaskRef task = make_task(test::k_loop_gpu, "cuda", test::k_loop_shape, test::k_loop_model);
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // The kill comes a random time after the loop is ready, drawn from [0, window]. A store takes a
  // few milliseconds on an idle machine and much longer on a busy one, so the window adapts: it
  // grows while kills land before any store completes and shrinks while several complete, keeping
  // the kills spread over the stores themselves.
  double window_us = 20000;
  int torn_seen = 0, killed_mid_run = 0;
  long next_seq = 1;
  for (int k = 0; k < 200; ++k) {
    LoopChild child = start_loop(dir.path(), next_seq);
    ASSERT_GT(child.pid, 0);
    wait_ready(child);
    ::usleep(static_cast<useconds_t>(std::uniform_real_distribution<double>(0, window_us)(rng)));
    int status = 0;
    long acked = std::max(kill_and_collect(child, &status), next_seq - 1);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the loop ended by itself (status " << status << "): it failed";
    killed_mid_run += WTERMSIG(status) == SIGKILL;
    Survivors s = check_after_kill(ws, task, acked, k);
    if (::testing::Test::HasFailure()) break;
    torn_seen += s.torn_tail;
    const long landed = s.records + 1 - next_seq;
    if (landed == 0) window_us = std::min(window_us * 1.5, 2e6);
    else if (landed >= 3) window_us = std::max(window_us / 1.5, 1000.0);
    next_seq = s.records + 1;
  }
  EXPECT_EQ(killed_mid_run, 200);
  RecordProperty("torn_tails_seen", torn_seen);
  RecordProperty("records_stored", static_cast<int>(next_seq - 1));
  ASSERT_GT(next_seq, 20) << "too few rounds stored to mean anything";

  // The next store repairs what a kill left (a torn line, a lagging view) ...
  LoopChild last = start_loop(dir.path(), next_seq);
  ASSERT_GT(last.pid, 0);
  wait_ready(last);
  int status = 0;
  for (int i = 0; i < 400; ++i) {
    ::usleep(5000);
    if (read_file(ws.idea_log(task)).value_or("").size() > 0 &&
        parse_idea_log(read_file(ws.idea_log(task)).value_or("")).records.size() > static_cast<size_t>(next_seq)) {
      break;
    }
  }
  long acked = std::max(kill_and_collect(last, &status), next_seq - 1);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the last loop failed by itself";
  Survivors s = check_after_kill(ws, task, acked, 200);
  ASSERT_GE(s.records, next_seq);
  // ... and `session clean --invalid-only` leaves a ledger that validates, with no temporary
  // files of the dead writers and the view in step.
  auto clean = run_croq(dir.path(), {"session", "clean", "--gpu", test::k_loop_gpu, "--dsl", "cuda", "--invalid-only"});
  EXPECT_EQ(clean.rc, 0) << clean.out << clean.err;
  auto v = run_croq(dir.path(), {"session", "validate", "--gpu", test::k_loop_gpu, "--dsl", "cuda"});
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
  EXPECT_EQ(v.doc["pass"], true) << v.out;
  EXPECT_TRUE(v.doc["tasks"][0]["errors"].empty()) << v.out;
  for (const auto& w : v.doc["tasks"][0]["warnings"]) {
    EXPECT_EQ(w.get<std::string>().find("temporary"), std::string::npos) << w;
  }
  JsonlParse all = Ledger(ws, task).read_all();
  EXPECT_TRUE(all.warnings.empty());
  EXPECT_EQ(Ledger(ws, task).read_tsv(nullptr).size(), all.records.size());
  auto resume = run_croq(dir.path(), {"resume", "--gpu", test::k_loop_gpu, "--dsl", "cuda", "--shape-key",
                                      test::k_loop_shape, "--model", test::k_loop_model});
  EXPECT_EQ(resume.doc["records"], all.records.size());
  EXPECT_TRUE(resume.doc["warnings"].empty()) << resume.out;
}

// What the ledger holds after concurrent writers: every round once, ids unique and gapless.
void check_race_ledger(const croq::Workspace& ws, size_t expected, int workers, int rounds_each) {
  using namespace croq;
  TaskRef t = make_task(test::k_loop_gpu, "cuda", test::k_race_shape, test::k_race_model);
  JsonlParse p = Ledger(ws, t).read_all();
  EXPECT_TRUE(p.warnings.empty());
  ASSERT_EQ(p.records.size(), expected);
  std::set<int> iters, rounds;
  std::set<std::string> kernels, ideas;
  for (const auto& r : p.records) {
    iters.insert(r.iter_number().value_or(-1));
    rounds.insert(r.round);
    kernels.insert(r.kernel);
    ideas.insert(r.idea);
  }
  EXPECT_EQ(iters.size(), expected) << "iteration ids are unique";
  EXPECT_EQ(*iters.begin(), 1);
  EXPECT_EQ(*iters.rbegin(), static_cast<int>(expected)) << "no number was skipped";
  EXPECT_EQ(rounds.size(), expected);
  EXPECT_EQ(*rounds.rbegin(), static_cast<int>(expected));
  EXPECT_EQ(kernels.size(), expected);
  EXPECT_EQ(ideas.size(), expected) << "every worker's every round is there once";
  for (int w = 0; w < workers; ++w) {
    for (int i = 0; i < rounds_each; ++i) ASSERT_EQ(ideas.count(test::worker_idea(w, i)), 1u) << w << " " << i;
  }
  auto rows = Ledger(ws, t).read_tsv(nullptr);
  ASSERT_EQ(rows.size(), expected) << "the TSV has one row per record";
  for (size_t i = 0; i < rows.size(); ++i) ASSERT_EQ(rows[i].kernel, p.records[i].kernel) << i;
  EXPECT_TRUE(Ledger(ws, t).reservations().live_iters.empty()) << "every reservation was stored";
  EXPECT_TRUE(validate_task(ws, t).errors.empty()) << validate_task(ws, t).to_json().dump();
}

TEST(Concurrency, EightProcessesStoringTwoHundredRoundsEachLoseNothing) {
  using namespace croq;
  TempDir dir;
  fs::create_directories(dir / "tuning");
  constexpr int k_workers = 8, k_rounds = 200;
  std::vector<pid_t> pids;
  for (int w = 0; w < k_workers; ++w) {
    pid_t pid = ::fork();
    if (pid == 0) {
      std::string ws = std::to_string(w), n = std::to_string(k_rounds);
      ::execl(CROQ_STORE_LOOP_BIN, CROQ_STORE_LOOP_BIN, "--worker", ws.c_str(), dir.path().c_str(), n.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker status " << status;
  }
  check_race_ledger(Workspace(dir.path()), k_workers * k_rounds, k_workers, k_rounds);
}

// The same through the croq binary: `croq next-iter` then `croq store-round`, from 8 drivers at
// once (fewer rounds: every call is a process start).
TEST(Concurrency, EightDriversCallingTheVerbsLoseNothing) {
  using namespace croq;
  TempDir dir;
  fs::create_directories(dir / "tuning");
  const std::vector<std::string> task = {"--gpu", test::k_loop_gpu, "--dsl", "cuda", "--shape-key", test::k_race_shape,
                                         "--model", test::k_race_model};
  constexpr int k_workers = 8, k_rounds = 25;
  std::atomic<int> failures{0};
  std::vector<std::string> first_error(k_workers);
  std::vector<std::thread> workers;
  for (int w = 0; w < k_workers; ++w) {
    workers.emplace_back([&, w] {
      for (int i = 0; i < k_rounds && failures == 0; ++i) {
        std::vector<std::string> a = {"next-iter", "--tag", "w" + std::to_string(w) + "_" + std::to_string(i)};
        a.insert(a.end(), task.begin(), task.end());
        auto id = run_croq(dir.path(), a);
        if (id.rc != 0 || !id.doc.contains("kernel")) {
          first_error[w] = "next-iter: " + id.out + id.err;
          ++failures;
          return;
        }
        std::vector<std::string> s = {"store-round",  "--iter",     id.doc["iter"].get<std::string>(),
                                      "--kernel",     id.doc["kernel"].get<std::string>(),
                                      "--tflops",     std::to_string(100 + w),
                                      "--decision",   i % 2 ? "DISCARD" : "KEEP",
                                      "--bottleneck", "compute_bound",
                                      "--idea",       test::worker_idea(w, i)};
        s.insert(s.end(), task.begin(), task.end());
        auto st = run_croq(dir.path(), s);
        if (st.rc != 0 || st.err.find("[store_round] STORE complete") == std::string::npos) {
          first_error[w] = "store-round: " + st.out + st.err;
          ++failures;
          return;
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  for (const auto& e : first_error) EXPECT_TRUE(e.empty()) << e;
  ASSERT_EQ(failures, 0);
  Workspace ws(dir.path());
  check_race_ledger(ws, k_workers * k_rounds, k_workers, k_rounds);
  // Every call left one whole line in the activity trace.
  TaskRef t = make_task(test::k_loop_gpu, "cuda", test::k_race_shape, test::k_race_model);
  auto lines = split_lines(read_file(ws.activity_log(t)).value_or(""));
  EXPECT_EQ(lines.size(), static_cast<size_t>(2 * k_workers * k_rounds));
  for (const auto& l : lines) ASSERT_TRUE(try_parse_json(l).has_value()) << l;
}

}  // namespace
