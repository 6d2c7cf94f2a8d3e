// croq tune end to end on the cpp dsl (no GPU needed): the real verbs, real builds of the cpp_tiled
// family, the real CPU runner and the OpenBLAS baseline. It shows that the loop finds a kernel better
// than its starting one, that the protocol refuses rule violations made by hand through the same
// verbs, and that a tune killed with SIGKILL in the middle of a round resumes without losing a record.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <set>
#include <thread>

#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/json.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

using croq::json;
using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_key = "matmul_f32_512x512x512";
constexpr auto k_long = std::chrono::milliseconds(600000);

struct TaskPaths {
  std::string gpu;
  fs::path logs;
  fs::path srcs;
};

std::vector<std::string> split_on(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == sep) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

TaskPaths paths_of(const fs::path& root, const std::string& task_id) {
  auto parts = split_on(task_id, '/');
  EXPECT_EQ(parts.size(), 4u) << task_id;
  TaskPaths p;
  p.gpu = parts.at(0);
  p.logs = root / "tuning" / parts[0] / "cpp" / "logs" / parts[2] / parts[3];
  p.srcs = root / "tuning" / parts[0] / "cpp" / "srcs" / parts[2] / parts[3];
  return p;
}

std::vector<json> records(const fs::path& logs) {
  std::vector<json> out;
  auto text = croq::read_file(logs / "idea-log.jsonl");
  if (!text) return out;
  for (const auto& line : croq::split_lines(*text)) {
    if (line.empty()) continue;
    out.push_back(json::parse(line));
  }
  return out;
}

std::vector<std::string> task_args(const std::string& gpu) {
  return {"--gpu", gpu, "--dsl", "cpp", "--shape-key", k_key, "--model", "croq-search"};
}

std::vector<std::string> with(std::vector<std::string> args, const std::string& gpu) {
  auto t = task_args(gpu);
  args.insert(args.end(), t.begin(), t.end());
  return args;
}

// Starts `croq --root <root> args...` in its own process group with its output discarded (so a test
// can kill the whole group with SIGKILL); returns the pid, or -1.
pid_t spawn_croq(const fs::path& root, const std::vector<std::string>& args, const fs::path& err_file = {}) {
  std::vector<std::string> argv = {CROQ_BIN, "--root", root.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(err_file.empty() ? null : ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
    ::unsetenv("CROQ_ROOT");
    ::execv(CROQ_BIN, cargv.data());
    ::_exit(127);
  }
  return pid;
}

// One tune of 8 rounds (each ctest process runs one test, so the three checks share one test).
TempDir* s_dir = nullptr;
CroqRun* s_run = nullptr;

void completes_the_rounds_and_keeps_a_kernel_better_than_the_starting_one() {
  ASSERT_EQ(s_run->rc, 0) << s_run->err.substr(s_run->err.size() > 4000 ? s_run->err.size() - 4000 : 0);
  const json& doc = s_run->doc;
  ASSERT_TRUE(doc.is_object()) << s_run->out;
  EXPECT_EQ(doc.value("rounds", 0), 8);
  TaskPaths p = paths_of(s_dir->path(), doc.value("task", ""));
  auto recs = records(p.logs);
  ASSERT_EQ(recs.size(), 10u);  // iter000 baseline, iter001 the starting kernel, 8 rounds
  EXPECT_EQ(recs[0].value("decision", ""), "BASELINE");
  EXPECT_EQ(recs[1].value("iter", ""), "iter001");
  const double start = recs[1].value("tflops", 0.0);
  ASSERT_GT(start, 0);
  int keeps = 0;
  double best_keep = 0;
  for (size_t i = 2; i < recs.size(); ++i) {
    const json& r = recs[i];
    EXPECT_EQ(r.value("round", -1), static_cast<int>(i) - 1) << r.dump();
    if (r.value("decision", "") == "KEEP") {
      ++keeps;
      best_keep = std::max(best_keep, r.value("tflops", 0.0));
      // Every KEEP carries the measurement it was decided on.
      ASSERT_TRUE(r.contains("measurement")) << r.dump();
      EXPECT_EQ(r.value("source", ""), "measured") << r.dump();
    }
    EXPECT_NE(r.value("bottleneck", ""), "unknown");
  }
  EXPECT_GE(keeps, 1) << "no round was kept";
  EXPECT_GT(best_keep, start) << "the best kept kernel is not faster than iter001";
  // The summary names the best kernel and the TSV view has a row per record (plus the header).
  ASSERT_TRUE(doc["best"].is_object());
  EXPECT_GE(doc["best"].value("tflops", 0.0), best_keep);
  auto tsv = croq::read_file(p.logs / "results.tsv");
  ASSERT_TRUE(tsv);
  int rows = 0;
  for (const auto& line : croq::split_lines(*tsv)) rows += !line.empty();
  EXPECT_EQ(rows, 11);
}

void every_idea_stood_on_a_profile_of_its_base() {
  ASSERT_EQ(s_run->rc, 0);
  TaskPaths p = paths_of(s_dir->path(), s_run->doc.value("task", ""));
  auto text = croq::read_file(p.logs / "evidence.jsonl");
  ASSERT_TRUE(text);
  int profiles = 0;
  for (const auto& line : croq::split_lines(*text)) {
    if (line.empty()) continue;
    json e = json::parse(line);
    if (e.value("kind", "") == "profile") {
      ++profiles;
      EXPECT_EQ(e["summary"].value("preset", ""), "cpu-timing");
      EXPECT_NE(e["summary"].value("bottleneck", "unknown"), "unknown");
    }
  }
  EXPECT_GE(profiles, 1);
}

void rule_violations_made_by_hand_are_refused() {
  ASSERT_EQ(s_run->rc, 0);
  const fs::path& root = s_dir->path();
  TaskPaths p = paths_of(root, s_run->doc.value("task", ""));
  auto before = records(p.logs);

  // A typed number is not a measurement: STORE refuses it in an enforced task.
  CroqRun typed = run_croq(root, with({"store-round", "--iter", "iter099", "--kernel", "iter099_fake", "--decision", "KEEP",
                                       "--tflops", "999", "--bottleneck", "compute_bound", "--idea", "typed"},
                                      p.gpu));
  EXPECT_EQ(typed.rc, 5) << typed.out << typed.err;
  EXPECT_NE(typed.out.find("\"refused\""), std::string::npos) << typed.out;

  // IMPLEMENT needs a checkpoint: building with none open is refused.
  fs::path src = p.srcs / "iter099_byhand.cpp";
  fs::copy_file(p.srcs / (before[1].value("kernel", "") + ".cpp"), src);
  CroqRun build = run_croq(root, with({"build", "--iter", "iter099_byhand"}, p.gpu));
  EXPECT_EQ(build.rc, 5) << build.out << build.err;
  EXPECT_NE(build.out.find("checkpoint_before_implement"), std::string::npos) << build.out;

  // An idea that repeats a stored combination is refused (after a fresh profile of the best).
  const json* last_with_params = nullptr;
  for (const auto& r : before) {
    if (r.contains("params") && r.value("decision", "") != "BASELINE") last_with_params = &r;
  }
  ASSERT_NE(last_with_params, nullptr);
  CroqRun prof = run_croq(root, with({"profile", "--iter", s_run->doc["best"].value("kernel", "")}, p.gpu), {}, {}, k_long);
  ASSERT_EQ(prof.rc, 0) << prof.out << prof.err;
  std::string bottleneck = prof.doc.value("bottleneck", "");
  CroqRun repeat = run_croq(
      root, with({"checkpoint", "write", "--iter", "iter099", "--bottleneck", bottleneck, "--idea", "the same again",
                  "--base", last_with_params->value("base", ""), "--params", (*last_with_params)["params"].dump(),
                  "--structural", last_with_params->value("structural", "")},
                 p.gpu));
  EXPECT_EQ(repeat.rc, 5) << repeat.out << repeat.err;
  EXPECT_NE(repeat.out.find("no_repeat"), std::string::npos) << repeat.out;

  // Nothing of the above was stored.
  EXPECT_EQ(records(p.logs).size(), before.size());
}

TEST(TuneCli, TunesACppMatmulEndToEndUnderTheEnforcedProtocol) {
  TempDir dir;
  CroqRun run = run_croq(dir.path(), {"tune", k_key, "--dsl", "cpp", "--rounds", "8", "--seed", "11"}, {}, {}, k_long);
  s_dir = &dir;
  s_run = &run;
  {
    SCOPED_TRACE("the rounds and the KEEP");
    completes_the_rounds_and_keeps_a_kernel_better_than_the_starting_one();
  }
  {
    SCOPED_TRACE("profiles before ideas");
    every_idea_stood_on_a_profile_of_its_base();
  }
  {
    SCOPED_TRACE("violations by hand");
    rule_violations_made_by_hand_are_refused();
  }
  {
    SCOPED_TRACE("the compaction-safe summary");
    TaskPaths p = paths_of(dir.path(), run.doc.value("task", ""));
    CroqRun r = run_croq(dir.path(), with({"resume", "--summary"}, p.gpu));
    ASSERT_EQ(r.rc, 0) << r.out << r.err;
    const std::string text = r.doc["summary"].get<std::string>();
    EXPECT_EQ(text.rfind("NEXT: ", 0), 0u) << text;  // the immediate next action comes first
    EXPECT_NE(text.find("Active bases"), std::string::npos) << text;
    EXPECT_NE(text.find("Re-read: "), std::string::npos) << text;
    EXPECT_NE(text.find("idea-log.jsonl"), std::string::npos) << text;
    EXPECT_NE(text.find("Do not: "), std::string::npos) << text;
    size_t rounds = 0;
    for (size_t at = text.find("\n  round "); at != std::string::npos; at = text.find("\n  round ", at + 1)) ++rounds;
    EXPECT_EQ(rounds, 10u) << text;  // the last 10 rounds
    EXPECT_LE(std::count(text.begin(), text.end(), '\n'), 40) << "more than one screen";
  }
  {
    // A task croq tune drives is given more rounds by croq tune (it begins the protocol itself).
    SCOPED_TRACE("more rounds");
    TaskPaths p = paths_of(dir.path(), run.doc.value("task", ""));
    CroqRun st = run_croq(dir.path(), with({"state"}, p.gpu));
    ASSERT_EQ(st.rc, 0) << st.err;
    EXPECT_EQ(st.doc.value("step", ""), "SHAPE_COMPLETE") << st.out;
    const std::string next = st.doc.value("next_action", "");
    EXPECT_NE(next.find("`croq tune " + k_key + " --gpu "), std::string::npos) << next;
    EXPECT_EQ(next.find("protocol begin"), std::string::npos) << next;
  }
  s_dir = nullptr;
  s_run = nullptr;
}

// SIGKILL in the middle of a round, then the same command again: it resumes the invocation and
// finishes it; every record stored before the kill is still there, and the rounds are contiguous.
TEST(TuneCli, ResumesAfterSigkillWithoutLosingARecord) {
  TempDir dir;
  pid_t pid = spawn_croq(dir.path(), {"tune", k_key, "--dsl", "cpp", "--rounds", "5", "--seed", "5"});
  ASSERT_GE(pid, 0);
  // Wait until round 2 is stored (baseline, iter001, round 1, round 2), then kill the whole group.
  fs::path log;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(8);
  size_t seen = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir.path() / "tuning", ec); !ec && it != fs::end(it); it.increment(ec)) {
      if (it->path().filename() == "idea-log.jsonl") log = it->path();
    }
    if (!log.empty()) seen = records(log.parent_path()).size();
    if (seen >= 4) break;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) FAIL() << "tune ended before it could be killed";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(seen, 4u) << "tune did not store two rounds in time";
  std::this_thread::sleep_for(std::chrono::milliseconds(700));  // into the next round's steps
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto before = records(log.parent_path());
  ASSERT_GE(before.size(), 4u);

  CroqRun again = run_croq(dir.path(), {"tune", k_key, "--dsl", "cpp", "--rounds", "5", "--seed", "5"}, {}, {}, k_long);
  ASSERT_EQ(again.rc, 0) << again.err.substr(again.err.size() > 4000 ? again.err.size() - 4000 : 0);
  EXPECT_NE(again.err.find("\"resume\""), std::string::npos) << "the second run did not resume the invocation";
  auto after = records(log.parent_path());
  ASSERT_GE(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i].dump(), before[i].dump()) << "record " << i << " changed";
  // Rounds 0..5 each stored exactly once.
  std::vector<int> rounds;
  for (const auto& r : after) rounds.push_back(r.value("round", -1));
  std::vector<int> want = {0, 0, 1, 2, 3, 4, 5};
  EXPECT_EQ(rounds, want);
  CroqRun valid = run_croq(dir.path(), with({"session", "validate"}, paths_of(dir.path(), again.doc.value("task", "")).gpu));
  EXPECT_EQ(valid.rc, 0) << valid.out << valid.err;
}

// Ctrl-C during a tune (SIGINT to its process group, as a terminal sends it) ends it as before, the
// stored rounds intact, after a line that gives the command that goes on from them.
TEST(TuneCli, AnInterruptedTuneSaysHowToGoOn) {
  TempDir dir;
  const fs::path err = dir.path() / "err.txt";
  pid_t pid = spawn_croq(dir.path(), {"tune", k_key, "--dsl", "cpp", "--rounds", "40", "--seed", "5"}, err);
  ASSERT_GE(pid, 0);
  fs::path log;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(8);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir.path() / "tuning", ec); !ec && it != fs::end(it); it.increment(ec)) {
      if (it->path().filename() == "idea-log.jsonl") log = it->path();
    }
    if (!log.empty() && records(log.parent_path()).size() >= 3) break;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) FAIL() << "tune ended before it could be interrupted";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(log.empty());
  const auto before = records(log.parent_path());
  ::kill(-pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
  const std::string text = croq::read_file(err).value_or("");
  EXPECT_NE(text.find("croq tune: interrupted; every round stored so far is kept"), std::string::npos) << text;
  EXPECT_NE(text.find("tune " + std::string(k_key) + " --dsl cpp --rounds 40 --seed 5"), std::string::npos) << text;
  const auto after = records(log.parent_path());
  ASSERT_GE(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i].dump(), before[i].dump()) << "record " << i << " changed";
}

// Milliseconds since the epoch of croq's ISO timestamps ("2026-12-01T06:12:33.123Z").
double iso_ms(const std::string& t) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(t.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &ms) < 6) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(::timegm(&tm)) * 1000.0 + ms;
}

// --jobs 2 tunes two shapes at once, each in its own croq process: both complete their rounds,
// their runs overlap in time, and the CPU lease keeps their measurements from overlapping.
TEST(TuneCli, JobsTunesShapesAtOnceWhileTheLeaseKeepsMeasurementsApart) {
  TempDir dir;
  const std::vector<std::string> keys = {"matmul_f32_256x256x256", "matmul_f32_192x256x128"};
  // A lease folder of its own: the two tunes share it, no other test's measurement holds it.
  CroqRun run = run_croq(dir.path(), {"tune", keys[0], keys[1], "--dsl", "cpp", "--rounds", "2", "--seed", "3", "--jobs", "2"},
                         {{"CROQ_LEASE_DIR", (dir.path() / "leases").string()}}, {}, k_long);
  ASSERT_EQ(run.rc, 0) << run.out << run.err.substr(run.err.size() > 4000 ? run.err.size() - 4000 : 0);
  ASSERT_TRUE(run.doc.is_object()) << run.out;
  ASSERT_EQ(run.doc["shapes"].size(), 2u);
  EXPECT_EQ(run.doc.value("failed", -1), 0);
  std::vector<std::pair<double, double>> tunes;
  for (size_t i = 0; i < keys.size(); ++i) {
    const json& sm = run.doc["shapes"][i];
    const std::string task = sm.value("task", "");
    EXPECT_NE(task.find(keys[i]), std::string::npos) << "summaries come back in the order of the keys: " << sm.dump();
    EXPECT_EQ(sm.value("rounds", 0), 2) << sm.dump();
    TaskPaths p = paths_of(dir.path(), task);
    EXPECT_EQ(records(p.logs).size(), 4u);  // baseline, iter001, 2 rounds
    auto tune = croq::read_file(p.logs / "tune.json");
    ASSERT_TRUE(tune);
    json t = json::parse(*tune);
    EXPECT_TRUE(t.value("completed", false));
    tunes.emplace_back(iso_ms(t.value("started_at", "")), iso_ms(t.value("finished_at", "")));
  }
  EXPECT_LT(tunes[0].first, tunes[1].second);
  EXPECT_LT(tunes[1].first, tunes[0].second) << "the two tunes did not run at the same time";
  // The runner intervals of every measurement (both tasks, baselines included) do not overlap.
  std::vector<std::pair<double, double>> spans;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir.path() / "tuning", ec); !ec && it != fs::end(it); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("measure_", 0) != 0 || it->path().extension() != ".json") continue;
    json m = json::parse(*croq::read_file(it->path()));
    const double start = iso_ms(m.value("created_at", ""));
    const double wall = m.value("process", json::object()).value("wall_ms", 0.0);
    ASSERT_GT(start, 0) << it->path();
    spans.emplace_back(start, start + wall);
  }
  ASSERT_GE(spans.size(), 8u);  // 2 x (baseline, iter001, 2 rounds)
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    // created_at is taken when the runner starts, wall_ms when croq sees it end: allow 50 ms.
    EXPECT_GE(spans[i].first + 50, spans[i - 1].second) << "two measurements overlapped";
  }
  // Commits from concurrent tunes would contend for the git index: refused before anything runs.
  CroqRun git = run_croq(dir.path(), {"tune", keys[0], keys[1], "--dsl", "cpp", "--jobs", "2", "--git-commit"});
  EXPECT_EQ(git.rc, 2) << git.out << git.err;
  EXPECT_NE(git.err.find("--git-commit"), std::string::npos) << git.err;
}

// SIGTERM to a tune of several shapes stops them as asked: the shapes that were running are
// reported stopped (their rounds stay, the same command goes on from them) and the one not yet
// started as not started; none of them as failed.
TEST(TuneCli, AStoppedTuneOfSeveralShapesSaysStoppedNotFailed) {
  TempDir dir;
  const std::vector<std::string> keys = {"matmul_f32_256x256x256", "matmul_f32_192x256x128", "matmul_f32_128x128x128"};
  const fs::path out = dir.path() / "out.json", err = dir.path() / "err.txt";
  pid_t pid = ::fork();
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::unsetenv("CROQ_ROOT");
    ::setenv("CROQ_LEASE_DIR", (dir.path() / "leases").c_str(), 1);
    std::vector<std::string> argv = {CROQ_BIN, "--root", dir.path().string(), "tune", keys[0], keys[1], keys[2],
                                     "--dsl", "cpp", "--rounds", "40", "--seed", "3", "--jobs", "2"};
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execv(CROQ_BIN, cargv.data());
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  // Wait until both running shapes have stored a round past their starting kernel.
  auto rounds_stored = [&] {
    int shapes = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir.path() / "tuning", ec); !ec && it != fs::end(it); it.increment(ec)) {
      if (it->path().filename() == "idea-log.jsonl" && records(it->path().parent_path()).size() >= 3) ++shapes;
    }
    return shapes;
  };
  int status = 0;
  for (int i = 0; i < 1200 && rounds_stored() < 2; ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) FAIL() << "tune ended before it could be stopped";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(rounds_stored(), 2);
  ::kill(pid, SIGTERM);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);  // not done: the rounds asked for were not all run
  const std::string text = croq::read_file(out).value_or("");
  const std::string notes = croq::read_file(err).value_or("");
  json doc = json::parse(text, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << text << notes;
  EXPECT_EQ(doc.value("failed", -1), 0) << doc.dump();
  EXPECT_EQ(doc.value("stopped_shapes", -1), 2) << doc.dump();
  EXPECT_EQ(doc.value("not_started", -1), 1) << doc.dump();
  ASSERT_EQ(doc["shapes"].size(), 3u);
  EXPECT_TRUE(doc["shapes"][0].value("stopped", false)) << doc["shapes"][0].dump();
  EXPECT_TRUE(doc["shapes"][2].value("not_started", false)) << doc["shapes"][2].dump();
  bool said_stopped = false;
  for (const auto& line : croq::split_lines(notes)) {
    if (line.rfind("croq tune: ", 0) != 0) continue;  // the shapes' own progress lines
    EXPECT_EQ(line.find("failed"), std::string::npos) << line;
    said_stopped = said_stopped || line.find("run the same command") != std::string::npos;
  }
  EXPECT_TRUE(said_stopped) << notes;
}

// Failed rounds give their iteration number back, and the next plan takes the same number: each
// plan still gets a kernel of its own name and writes none of an earlier failure's files. Here the
// cpp_tiled template (a copy under CROQ_HOME) computes every configuration but the family's default
// wrongly, so each round after the starting kernel is a VERIFY_FAIL stored as an attempt planned as
// iter002; the source and the measurement each attempt's record points to must still be its own.
TEST(TuneCli, FailedRoundsKeepTheirOwnSourcesAndMeasurements) {
  TempDir dir;
  const fs::path home = dir.path() / "home";
  fs::create_directories(home);
  fs::copy(fs::path(CROQ_SOURCE_DIR) / "kernels", home / "kernels", fs::copy_options::recursive);
  const fs::path tmpl = home / "kernels/cpp/matmul/tiled/tiled_gemm.cpp";
  std::string text = croq::read_file(tmpl).value();
  const std::string fill = "std::fill(C, C + p->m * p->n, 0.0f);";
  const size_t at = text.find(fill);
  ASSERT_NE(at, std::string::npos) << "the template no longer clears C this way: update the test";
  text.replace(at, fill.size(), "std::fill(C, C + p->m * p->n, CROQ_TEST_BROKEN ? 1000.0f : 0.0f);");
  text = "#if CROQ_BM == 64 && CROQ_BN == 128 && CROQ_BK == 64 && CROQ_PACK_B == 0 && CROQ_MR == 1 && "
         "CROQ_NR == 16 && CROQ_VEC == 8 && CROQ_UNROLL == 1 && CROQ_THREADS == 1\n#define CROQ_TEST_BROKEN 0\n#else\n"
         "#define CROQ_TEST_BROKEN 1\n#endif\n" +
         text;
  croq::atomic_write(tmpl, text);

  CroqRun run = run_croq(dir.path(), {"tune", k_key, "--dsl", "cpp", "--rounds", "3", "--seed", "5"},
                         {{"CROQ_HOME", home.string()}}, {}, k_long);
  ASSERT_EQ(run.rc, 0) << run.out << run.err.substr(run.err.size() > 4000 ? run.err.size() - 4000 : 0);
  TaskPaths p = paths_of(dir.path(), run.doc.value("task", ""));
  auto recs = records(p.logs);
  ASSERT_EQ(recs.size(), 5u);  // the baseline, iter001 (the default: correct), three failed rounds
  EXPECT_EQ(recs[1].value("kernel", ""), "iter001_cpp_tiled_default");
  EXPECT_EQ(recs[1].value("decision", ""), "KEEP");
  std::set<std::string> planned_names;
  for (size_t i = 2; i < recs.size(); ++i) {
    const json& r = recs[i];
    SCOPED_TRACE(r.dump());
    EXPECT_EQ(r.value("decision", ""), "VERIFY_FAIL");
    const std::string kernel = r.value("kernel", "");
    ASSERT_EQ(kernel.rfind("attempt", 0), 0u);
    const std::string planned = r.value("planned_iter", "");
    EXPECT_EQ(planned, "iter002");  // every failure gave the number back
    const std::string name = planned + kernel.substr(kernel.find('_'));
    EXPECT_TRUE(planned_names.insert(name).second) << name << " was used by two rounds";
    // The source under the planned name is this round's configuration.
    auto src = croq::read_file(p.srcs / (name + ".cpp"));
    ASSERT_TRUE(src.has_value()) << name;
    ASSERT_TRUE(r.contains("params"));
    for (const auto& [k, v] : r["params"].items()) {
      EXPECT_NE(src->find("#define CROQ_" + k + " " + v.get<std::string>() + "\n"), std::string::npos) << name << " " << k;
    }
    // The measurement the record points to is the one stored with it.
    ASSERT_TRUE(r.contains("measurement")) << "a VERIFY_FAIL keeps its measurement";
    const fs::path file = dir.path() / r["measurement"].value("file", "");
    auto doc = croq::read_file(file);
    ASSERT_TRUE(doc.has_value()) << file;
    EXPECT_EQ(croq::sha256_hex(*doc), r["measurement"].value("sha256", "")) << file << " was written over";
  }
  // And the workspace's own check agrees.
  CroqRun v = run_croq(dir.path(), with({"session", "validate"}, p.gpu));
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
}

// A workspace copied without its binaries (bin/ left out, as a tarball of tuning/ often is) resumes:
// croq tune is killed after a plan is verified, every .so is deleted, and the rerun builds again
// what it measures or profiles (the plan's candidate, verified again; the base it re-measures).
TEST(TuneCli, ResumesWhenTheBuiltKernelsAreGone) {
  TempDir dir;
  pid_t pid = spawn_croq(dir.path(), {"tune", "matmul_f32_256x256x256", "--dsl", "cpp", "--rounds", "3", "--seed", "2"});
  ASSERT_GE(pid, 0);
  // Wait until a plan is VERIFIED (its candidate built, not yet measured), then kill the group.
  bool verified = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(8);
  while (!verified && std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir.path() / "tuning", ec); !ec && it != fs::end(it); it.increment(ec)) {
      if (it->path().filename() != "current_idea.json") continue;
      auto text = croq::read_file(it->path());
      if (text && text->find("\"VERIFIED\"") != std::string::npos) verified = true;
    }
    int status = 0;
    if (!verified && ::waitpid(pid, &status, WNOHANG) == pid) FAIL() << "tune ended before a plan was verified";
    if (!verified) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(verified) << "no plan was verified in time";
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  int removed = 0;
  std::error_code ec;
  std::vector<fs::path> sos;
  for (auto it = fs::recursive_directory_iterator(dir.path() / "tuning", ec); !ec && it != fs::end(it); it.increment(ec)) {
    if (it->path().extension() == ".so") sos.push_back(it->path());
  }
  for (const auto& so : sos) removed += fs::remove(so, ec);
  ASSERT_GE(removed, 2) << "the starting kernel and the plan's candidate were built";

  CroqRun again = run_croq(dir.path(), {"tune", "matmul_f32_256x256x256", "--dsl", "cpp", "--rounds", "3", "--seed", "2"}, {},
                           {}, k_long);
  ASSERT_EQ(again.rc, 0) << again.out << again.err.substr(again.err.size() > 4000 ? again.err.size() - 4000 : 0);
  EXPECT_NE(again.err.find("\"rebuild\""), std::string::npos) << "nothing was rebuilt";
  EXPECT_EQ(again.doc.value("rounds", 0), 3);
  TaskPaths p = paths_of(dir.path(), again.doc.value("task", ""));
  EXPECT_EQ(records(p.logs).size(), 5u);  // baseline, iter001, 3 rounds
  CroqRun valid = run_croq(dir.path(), {"session", "validate", "--gpu", p.gpu, "--dsl", "cpp", "--shape-key",
                                         "matmul_f32_256x256x256", "--model", "croq-search"});
  EXPECT_EQ(valid.rc, 0) << valid.out << valid.err;
}

}  // namespace

// `croq protocol begin` for the croq-search task of `key` (cpp), then the decision rule's values
// changed in its protocol.json; the file's path (empty when begin failed).
fs::path begin_with_rule(const fs::path& root, const std::string& key, const json& rule) {
  CroqRun begin = run_croq(root, {"protocol", "begin", "--dsl", "cpp", "--shape-key", key, "--model", "croq-search"});
  EXPECT_EQ(begin.rc, 0) << begin.out << begin.err;
  fs::path protocol;
  for (const auto& e : fs::recursive_directory_iterator(root / "tuning")) {
    if (e.path().filename() == "protocol.json") protocol = e.path();
  }
  if (protocol.empty()) return protocol;
  json cfg = json::parse(*croq::read_file(protocol));
  for (auto it = rule.begin(); it != rule.end(); ++it) cfg["decision_rule"][it.key()] = it.value();
  croq::atomic_write(protocol, cfg.dump());
  return protocol;
}

// Close calls (docs/protocol.md "Decisions"): with the task's noise floor raised to 50 %, every
// gain of a round between 0.3 % and the margin is a close call, and croq tune settles it on
// back-to-back pairs of the best and the candidate: the pair measurements are there, each in its
// own file with its evidence, and each such round's reason is the paired decision's.
TEST(TuneCli, ACloseCallIsSettledOnBackToBackPairs) {
  TempDir dir;
  const std::string key = "matmul_f32_256x256x256";
  const fs::path protocol = begin_with_rule(dir.path(), key, {{"noise_floor", 0.5}});
  ASSERT_FALSE(protocol.empty());

  CroqRun run = run_croq(dir.path(), {"tune", key, "--dsl", "cpp", "--rounds", "4", "--seed", "11"}, {}, {}, k_long);
  ASSERT_EQ(run.rc, 0) << run.out << run.err.substr(run.err.size() > 4000 ? run.err.size() - 4000 : 0);
  TaskPaths p = paths_of(dir.path(), run.doc.value("task", ""));
  EXPECT_EQ(json::parse(*croq::read_file(protocol))["decision_rule"].value("noise_floor", 0.0), 0.5);
  // The pair measurements and their evidence.
  int pair_measures = 0;
  for (const auto& line : croq::split_lines(*croq::read_file(p.logs / "evidence.jsonl"))) {
    if (line.empty()) continue;
    json e = json::parse(line);
    const std::string file = e.value("file", "");
    if (e.value("kind", "") != "measure" || file.find("/pair_iter") == std::string::npos) continue;
    ++pair_measures;
    EXPECT_TRUE(fs::exists(dir.path() / file)) << file;
  }
  int close_calls = 0;
  for (const auto& r : records(p.logs)) {
    const std::string why = r.value("decision_reason", "");
    if (why.find("back-to-back pairs") == std::string::npos) continue;
    ++close_calls;
    EXPECT_NE(why.find("settled on 3 back-to-back pairs"), std::string::npos) << why;
  }
  EXPECT_GE(close_calls, 1) << "no round of this tune was a close call";
  // Five measurements make three pairs with the round's own; four after a suspicious jump's re-run,
  // whose two measurements are already one pair.
  EXPECT_GE(pair_measures, 4 * close_calls);
}

// A suspicious jump that its re-run leaves a close call (here: every gain is suspicious and inside
// the margin) is settled on back-to-back pairs weighed as a re-run: the round is stored with the
// pairs' decision. Before, the pairs were weighed as a first decision, which asked for the re-run
// again, and a confirmed gain (+50 % on a loaded machine) was stored as that pending DISCARD.
TEST(TuneCli, ASuspiciousJumpLeftCloseByItsRerunIsSettledOnPairs) {
  TempDir dir;
  const std::string key = "matmul_f32_256x256x256";
  ASSERT_FALSE(begin_with_rule(dir.path(), key, {{"noise_floor", 0.5}, {"suspicious_gain", 0.001}}).empty());

  CroqRun run = run_croq(dir.path(), {"tune", key, "--dsl", "cpp", "--rounds", "4", "--seed", "11"}, {}, {}, k_long);
  ASSERT_EQ(run.rc, 0) << run.out << run.err.substr(run.err.size() > 4000 ? run.err.size() - 4000 : 0);
  TaskPaths p = paths_of(dir.path(), run.doc.value("task", ""));
  int settled = 0;
  for (const auto& r : records(p.logs)) {
    const std::string why = r.value("decision_reason", "");
    EXPECT_EQ(why.find("is suspicious"), std::string::npos) << r.value("kernel", "") << ": " << why;
    if (why.find("settled on") != std::string::npos) ++settled;
  }
  EXPECT_GE(settled, 1) << "no round of this tune was a suspicious jump settled on pairs";
}

// What cannot be tuned is refused before any task is made, so no half-made task is left behind to
// show in croq status or to block the right key as "a typo": a key of two dimensions, a sparse K that
// is not a multiple of 8, a GPU key for the cpp dsl, a dsl the machine cannot run.
TEST(TuneCli, WhatCannotBeTunedIsRefusedBeforeATaskIsMade) {
  TempDir dir;
  fs::create_directories(dir.path() / "tuning");
  auto files = [&] {
    size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir.path() / "tuning")) n += e.is_regular_file() ? 1 : 0;
    return n;
  };
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"tune", "matmul_f32_128x128", "--dsl", "cpp"},
           {"tune", "gemm_sp_f16fp32_256x256x250", "--dsl", "cpp"},
           {"tune", "matmul_f32_64x64x64", "--dsl", "cpp", "--gpu", "sm90_NVIDIA_H200"},
           // A parameter the family does not have, or a value it does not take (before, dropped
           // without a word: the tune started from the family's default).
           {"tune", "matmul_f32_64x64x64", "--dsl", "cpp", "--start-params", R"({"BMM": 64})"},
           {"tune", "matmul_f32_64x64x64", "--dsl", "cpp", "--start-params", R"({"BM": 65})"}}) {
    CroqRun r = run_croq(dir.path(), args);
    EXPECT_EQ(r.rc, 2) << args[1] << ": " << r.err;
    EXPECT_EQ(files(), 0u) << args[1];
  }
  CroqRun cuda = run_croq(dir.path(), {"tune", "matmul_f16fp32_256x256x256", "--dsl", "cuda", "--gpu", "sm90_NVIDIA_H200"},
                          {{"PATH", "/usr/bin:/bin"}, {"CUDA_VISIBLE_DEVICES", "none"}});
  if (cuda.rc != 0) {
    EXPECT_EQ(files(), 0u) << "a failed environment check left files: " << cuda.err;
  }
}

// --list-space prints the family's whole legal space for a shape (what a brute-force autotune of the
// same space would measure: bench/gpu/triton/brute_force.py samples it) and tunes nothing.
TEST(TuneCli, ListSpaceIsTheProductOfTheFamilysValuesFilteredByItsConstraints) {
  TempDir dir;
  CroqRun r = run_croq(dir.path(), {"tune", "matmul_f16fp32_4096x4096x4096", "matmul_f16fp32_768x768x768", "--dsl",
                                    "triton", "--gpu", "sm90_NVIDIA_H200", "--list-space"});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_EQ(r.doc["shapes"].size(), 2u) << r.out;
  const json& big = r.doc["shapes"][0];
  EXPECT_EQ(big["family"], "triton_gemm");
  EXPECT_EQ(big["arch"], "sm_90a");
  // BLOCK_M 4 x BLOCK_N 4 x BLOCK_K 3 x GROUP_M 4 x NUM_WARPS 2 x NUM_STAGES 5 x PERSISTENT, TMA,
  // WARP_SPEC 2 each x SPLIT_K 4 x C_TMA 2.
  EXPECT_EQ(big["product"].get<long long>(), 122880);
  EXPECT_EQ(big["examined"].get<long long>(), 122880);
  EXPECT_FALSE(big["truncated"].get<bool>());
  const auto& configs = big["configs"];
  ASSERT_EQ(big["legal"].get<size_t>(), configs.size());
  EXPECT_GT(configs.size(), 1000u);
  EXPECT_LT(configs.size(), 122880u);
  std::set<std::string> seen;
  bool has_default = false;
  for (const auto& c : configs) {
    EXPECT_TRUE(seen.insert(c.dump()).second) << "twice: " << c.dump();
    // The family's constraints hold on every listed configuration.
    if (c["WARP_SPEC"] == "1") {
      EXPECT_TRUE(c["TMA"] == "1" && c["PERSISTENT"] == "1") << c.dump();
    }
    if (c["SPLIT_K"] != "1") {
      EXPECT_TRUE(c["PERSISTENT"] == "0" && c["TMA"] == "0") << c.dump();
    }
    if (c["C_TMA"] == "1") {
      EXPECT_TRUE(c["TMA"] == "1" && c["PERSISTENT"] == "1") << c.dump();
    }
    const long long stages = std::stoll(c["NUM_STAGES"].get<std::string>());
    const long long bm = std::stoll(c["BLOCK_M"].get<std::string>()), bn = std::stoll(c["BLOCK_N"].get<std::string>());
    // C_TMA keeps half a tile of f32 C in shared memory beside the pipeline.
    const long long smem = stages * (bm + bn) * std::stoll(c["BLOCK_K"].get<std::string>()) * 2 +
                           (c["C_TMA"] == "1" ? bm * (bn / 2) * 4 : 0);
    EXPECT_LE(smem, 232448) << c.dump();
    has_default = has_default || c == big["default"];
  }
  EXPECT_TRUE(has_default) << "the family's default is legal, so it is listed";
  // A small problem rules out the large tiles (a tile more than twice the problem): fewer legal.
  EXPECT_LT(r.doc["shapes"][1]["legal"].get<size_t>(), configs.size());
  EXPECT_FALSE(fs::exists(dir / "tuning")) << "listing the space tunes nothing";

  // A shape the dsl has no family for is refused with the usage code.
  CroqRun bad = run_croq(dir.path(), {"tune", "gemm_sp_f16_4096x8192x8192", "--dsl", "triton", "--gpu",
                                      "sm90_NVIDIA_H200", "--list-space"});
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("no kernel family of dsl triton"), std::string::npos) << bad.err;
  // The hint names every family, from the table (a hand-written list once left cpp_fp8 out).
  EXPECT_NE(bad.err.find("cpp: cpp_tiled, cpp_sparse, cpp_fp8"), std::string::npos) << bad.err;
}

namespace {

// A shape key given twice is one task, tuned once: before, `--jobs 2` started two processes on it
// and the second failed ("already has task_uid").
TEST(TuneCli, AKeyGivenTwiceIsTunedOnce) {
  TempDir dir;
  const std::string key = "matmul_f32_64x64x64";
  CroqRun run = run_croq(dir.path(), {"tune", key, key, "--dsl", "cpp", "--rounds", "1", "--jobs", "2"}, {}, {}, k_long);
  EXPECT_EQ(run.rc, 0) << run.out << run.err.substr(run.err.size() > 4000 ? run.err.size() - 4000 : 0);
  EXPECT_NE(run.err.find(key + " is given more than once; tuned once"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("already has task_uid"), std::string::npos) << run.err;
}

}  // namespace
