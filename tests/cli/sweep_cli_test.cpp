// croq sweep end to end on N fake devices (CROQ_SWEEP_FAKE_DEVICES): kill -9 of the sweep at random
// moments loses no stored round and the next run resumes where it stopped; every worker is pinned to
// its device and no two drivers ever share one; the skill's skip-done / reopen rules; an unhealthy
// device is skipped and its shape moves to another worker. The fast tests drive each shape with
// croq_sweep_driver (tests/helpers: the device's lease for each "measurement", rounds stored through
// the ledger's store_round, no compiler); one test runs croq's own search (`croq tune`) on the cpp
// backend.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "croq/util/fs.hpp"
#include "croq/util/json.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

using croq::json;
using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_gpu = "cpu_test";

std::vector<json> jsonl(const fs::path& file) {
  std::vector<json> out;
  auto text = croq::read_file(file);
  if (!text) return out;
  for (const auto& line : croq::split_lines(*text)) {
    if (line.empty()) continue;
    if (auto j = croq::try_parse_json(line)) out.push_back(*j);
  }
  return out;
}

// Every task's records, by shape key.
std::map<std::string, std::vector<json>> ledgers(const fs::path& root) {
  std::map<std::string, std::vector<json>> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root / "tuning", ec); !ec && it != fs::end(it); it.increment(ec)) {
    if (it->path().filename() != "idea-log.jsonl") continue;
    out[it->path().parent_path().parent_path().filename().string()] = jsonl(it->path());
  }
  return out;
}

struct Env {
  TempDir dir;
  fs::path manifest;
  std::map<std::string, std::string> env;
  Env(int devices, const json& manifest_doc) {
    manifest = dir.path() / "manifest.json";
    croq::atomic_write(manifest, manifest_doc.dump());
    fs::create_directories(dir.path() / "ws" / "tuning");
    env = {{"CROQ_SWEEP_FAKE_DEVICES", std::to_string(devices)}, {"CROQ_LEASE_DIR", (dir.path() / "leases").string()}};
  }
  fs::path root() const { return dir.path() / "ws"; }
  std::vector<std::string> args(int rounds, int hold_ms = 15) const {
    return {"sweep", "run", "--manifest", manifest.string(), "--dsl", "cpp", "--gpu", k_gpu, "--rounds",
            std::to_string(rounds), "--driver", "command", "--command",
            std::string(CROQ_SWEEP_DRIVER_BIN) + " {root} {gpu} {dsl} {model} {key} {target} " + std::to_string(hold_ms)};
  }
};

json small_manifest(int shapes) {
  json s = json::array();
  for (int i = 0; i < shapes; ++i) s.push_back(json::array({64 + 8 * i, 64, 64}));
  return {{"schema", "croq-sweep-manifest-v1"}, {"operator", "matmul"}, {"dtypes", {"f32"}}, {"shapes", s}};
}

pid_t spawn(const fs::path& root, const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {CROQ_BIN, "--root", root.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::unsetenv("CROQ_ROOT");
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execv(CROQ_BIN, cargv.data());
    ::_exit(127);
  }
  return pid;
}

// Processes whose command line names `needle` (the drivers of a workspace).
int processes_naming(const std::string& needle) {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc", ec); !ec && it != fs::end(it); it.increment(ec)) {
    auto cmd = croq::read_file(it->path() / "cmdline");
    if (!cmd) continue;
    std::replace(cmd->begin(), cmd->end(), '\0', ' ');
    if (cmd->find(needle) != std::string::npos && cmd->find("croq_cli_tests") == std::string::npos) ++n;
  }
  return n;
}

// Lease holdings [acquire, release] of each device from its history; checks none overlap.
void expect_no_overlapping_holdings(const fs::path& lease_dir, const std::set<std::string>& devices) {
  for (const auto& d : devices) {
    auto h = jsonl(lease_dir / ("croq-gpu-" + d + ".history"));
    std::map<long long, double> open;  // pid -> acquired at
    std::vector<std::pair<double, double>> spans;
    for (const auto& e : h) {
      const long long pid = e.value("pid", 0LL);
      if (e.value("event", "") == "acquire") open[pid] = e.value("t_ms", 0.0);
      if (e.value("event", "") == "release" && open.count(pid)) {
        spans.emplace_back(open[pid], e.value("t_ms", 0.0));
        open.erase(pid);
      }
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) {
      EXPECT_LE(spans[i - 1].second, spans[i].first + 0.5) << "two holdings of " << d << " overlap";
    }
  }
}

// The sweep log's launch..exit intervals per device, within each sweep run: never two at once.
void expect_one_driver_per_device(const fs::path& root) {
  std::map<std::string, int> live;
  for (const auto& e : jsonl(root / "tuning" / "sweep-log.jsonl")) {
    const std::string ev = e.value("event", "");
    if (ev == "sweep_start") live.clear();  // a killed run's drivers died with it
    if (ev == "launch") {
      EXPECT_EQ(++live[e.value("device", "")], 1) << "two drivers on device " << e.value("device", "") << ": " << e.dump();
    }
    if (ev == "exit") --live[e.value("device", "")];
  }
}

}  // namespace

TEST(SweepCli, KillNineAtRandomMomentsLosesNoRoundAndResumesWhereItStopped) {
  constexpr int k_rounds = 10, k_shapes = 6, k_devices = 3;
  Env w(k_devices, small_manifest(k_shapes));
  std::mt19937 rng(20261202);
  std::map<std::string, std::vector<json>> before;
  int kills = 0;
  // Each measurement holds its device 30 ms, so the whole sweep takes well over a second even on
  // an idle machine, and a kill lands every 50-200 ms of it.
  constexpr int k_hold_ms = 30;
  for (int i = 0; i < 6; ++i) {
    pid_t pid = spawn(w.root(), w.args(k_rounds, k_hold_ms), w.env);
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 200)(rng)));
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) break;  // finished before the kill
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ++kills;
    // The drivers die with the sweep (no orphan keeps working on its tasks).
    for (int t = 0; t < 100 && processes_naming(w.root().string()) > 0; ++t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(processes_naming(w.root().string()), 0) << "a driver outlived the killed sweep";
    auto now = ledgers(w.root());
    for (const auto& [key, recs] : before) {
      ASSERT_GE(now[key].size(), recs.size()) << key << " lost records";
      for (size_t r = 0; r < recs.size(); ++r) EXPECT_EQ(now[key][r].dump(), recs[r].dump()) << key << " record " << r;
    }
    before = now;
  }
  EXPECT_GE(kills, 3);
  CroqRun last = run_croq(w.root(), w.args(k_rounds), w.env);
  ASSERT_EQ(last.rc, 0) << last.out << last.err;
  EXPECT_EQ(last.doc.value("done", 0), k_shapes) << last.out;
  auto after = ledgers(w.root());
  ASSERT_EQ(after.size(), static_cast<size_t>(k_shapes));
  std::set<std::string> devices;
  for (const auto& [key, recs] : after) {
    // Every record from before the last kill is still there, unchanged; rounds 0..k_rounds once each.
    for (size_t r = 0; r < before[key].size(); ++r) EXPECT_EQ(recs[r].dump(), before[key][r].dump()) << key;
    std::vector<int> rounds;
    for (const auto& r : recs) {
      rounds.push_back(r.value("round", -1));
      devices.insert(r.value("device", ""));
    }
    std::vector<int> want = {0};  // the baseline, then rounds 1..k_rounds
    for (int r = 1; r <= k_rounds; ++r) want.push_back(r);
    EXPECT_EQ(rounds, want) << key;
  }
  // Every device was used (each worker pinned to its own), and none was shared.
  EXPECT_EQ(devices, (std::set<std::string>{"cpu0", "cpu1", "cpu2"}));
  expect_no_overlapping_holdings(w.dir.path() / "leases", devices);
  expect_one_driver_per_device(w.root());
  // state.json in the skill's format: every shape done at its budget, from scratch, far.
  json state = json::parse(*croq::read_file(w.root() / "tuning" / "state.json"));
  ASSERT_EQ(state["shapes"].size(), static_cast<size_t>(k_shapes));
  for (auto it = state["shapes"].begin(); it != state["shapes"].end(); ++it) {
    EXPECT_EQ(it.value().value("status", ""), "done") << it.key();
    EXPECT_EQ(it.value().value("mode", ""), "from_scratch");
    EXPECT_EQ(it.value().value("current_iter", 0), k_rounds);
    EXPECT_EQ(it.value().value("region", ""), "far");
    EXPECT_TRUE(croq::ends_with(it.key(), "_fs")) << it.key();
  }
}

TEST(SweepCli, SkipsShapesDoneAtTheBudgetAndReopensThoseClosedBelowIt) {
  Env w(2, small_manifest(3));
  CroqRun first = run_croq(w.root(), w.args(3), w.env);
  ASSERT_EQ(first.rc, 0) << first.out << first.err;
  EXPECT_EQ(first.doc.value("done", 0), 3);
  // Again with the same budget: nothing is launched, nothing stored.
  auto log_size = jsonl(w.root() / "tuning" / "sweep-log.jsonl").size();
  CroqRun again = run_croq(w.root(), w.args(3), w.env);
  ASSERT_EQ(again.rc, 0) << again.err;
  int launches = 0;
  auto log = jsonl(w.root() / "tuning" / "sweep-log.jsonl");
  for (size_t i = log_size; i < log.size(); ++i) launches += log[i].value("event", "") == "launch";
  EXPECT_EQ(launches, 0);
  for (const auto& [key, recs] : ledgers(w.root())) EXPECT_EQ(recs.size(), 4u) << key;  // baseline + 3 rounds
  // A larger budget reopens every shape (done below it) and tops it up to exactly that budget
  // (croq tune --rounds counts from the last round; the sweep's budget is the total).
  CroqRun more = run_croq(w.root(), w.args(5), w.env);
  ASSERT_EQ(more.rc, 0) << more.err;
  EXPECT_NE(more.err.find("reopened"), std::string::npos) << more.err;
  for (const auto& [key, recs] : ledgers(w.root())) {
    EXPECT_EQ(recs.size(), 6u) << key;  // baseline + 5 rounds
    EXPECT_EQ(recs.back().value("round", 0), 5) << key;
  }
  CroqRun st = run_croq(w.root(), {"sweep", "status"}, w.env);
  ASSERT_EQ(st.rc, 0) << st.err;
  EXPECT_EQ(st.doc["counts"].value("done", 0), 3) << st.out;
  EXPECT_FALSE(st.doc.value("running", true));
  // Status and the report take rounds and figures from the ledgers, never from state.json's
  // copies: a shape written into state.json by hand (888 TFLOPS, 150 rounds, done) has none, and
  // a real shape's edited copy is the ledger's again.
  const fs::path state_path = w.root() / "tuning" / "state.json";
  json state = json::parse(*croq::read_file(state_path));
  const std::string real = state["shapes"].begin().key();
  json fake = state["shapes"][real];
  fake["best_tflops"] = 888.0;
  fake["current_iter"] = 150;
  state["shapes"]["matmul_f32_96x96x96_fs"] = fake;
  state["shapes"][real]["best_tflops"] = 999.0;
  croq::atomic_write(state_path, state.dump(), false);
  CroqRun edited = run_croq(w.root(), {"sweep", "status"}, w.env);
  ASSERT_EQ(edited.rc, 0) << edited.err;
  for (const auto& row : edited.doc["shapes"]) {
    EXPECT_NE(row.value("best_tflops", json()).dump(), "888.0") << row.dump();
    EXPECT_NE(row.value("best_tflops", json()).dump(), "999.0") << row.dump();
    if (row.value("key", "") == "matmul_f32_96x96x96_fs") {
      EXPECT_TRUE(row["best_tflops"].is_null()) << row.dump();
      EXPECT_EQ(row.value("current_iter", -1), 0) << row.dump();
    }
  }
  CroqRun report = run_croq(w.root(), {"report", "--sweep", "--out", (w.root() / "rep").string()}, w.env);
  ASSERT_EQ(report.rc, 0) << report.err;
  const std::string csv = *croq::read_file(w.root() / "rep" / "sweep.csv");
  EXPECT_EQ(csv.find("888"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("999"), std::string::npos) << csv;
  EXPECT_EQ(csv.find(",150,"), std::string::npos) << csv;
}

TEST(SweepCli, AnUnhealthyDeviceIsSkippedAndReportedAndItsShapeMovesToAnotherWorker) {
  Env w(3, small_manifest(4));
  const fs::path health = w.dir.path() / "health.txt";
  croq::atomic_write(health, "cpu1 ECC errors (test)\n");
  w.env["CROQ_SWEEP_FAKE_HEALTH"] = health.string();
  // cpu0's driver fails its device after its first round (the helper marks it in the health file).
  w.env["CROQ_SWEEP_DRIVER_FAIL_ON"] = "cpu0";
  CroqRun run = run_croq(w.root(), w.args(4), w.env);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(run.doc.value("done", 0), 4) << run.out;
  std::map<std::string, json> dev;
  for (const auto& d : run.doc["devices"]) dev[d.value("device", "")] = d;
  EXPECT_FALSE(dev["cpu1"].value("healthy", true));
  EXPECT_NE(dev["cpu1"].value("reason", "").find("ECC"), std::string::npos);
  EXPECT_FALSE(dev["cpu0"].value("healthy", true));
  EXPECT_TRUE(dev["cpu2"].value("healthy", false));
  std::set<std::string> used;
  bool moved = false;
  for (const auto& [key, recs] : ledgers(w.root())) {
    std::set<std::string> on;
    for (const auto& r : recs) on.insert(r.value("device", ""));
    EXPECT_EQ(on.count("cpu1"), 0u) << key << " ran on the unhealthy device";
    if (on.count("cpu0") && on.count("cpu2")) moved = true;
    EXPECT_EQ(recs.back().value("round", 0), 4) << key;
  }
  EXPECT_TRUE(moved) << "the shape of the failed device did not move to another worker";
  EXPECT_NE(run.err.find("never resets"), std::string::npos) << run.err;
}

TEST(SweepCli, SeveralWorkersOnOneDeviceRunShapesSideBySideWhileTheirMeasurementsTakeTurns) {
  // One device, three workers on it: their drivers run at once (builds overlap on the CPU) and the
  // device's lease still keeps every measurement alone.
  Env w(1, small_manifest(4));
  auto args = w.args(3, 30);
  args.insert(args.end(), {"--workers-per-device", "3"});
  CroqRun run = run_croq(w.root(), args, w.env);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(run.doc.value("done", 0), 4) << run.out;
  int live = 0, most = 0;
  for (const auto& e : jsonl(w.root() / "tuning" / "sweep-log.jsonl")) {
    const std::string ev = e.value("event", "");
    EXPECT_TRUE(e.value("device", "cpu0") == "cpu0") << e.dump();
    if (ev == "launch") most = std::max(most, ++live);
    if (ev == "exit") --live;
  }
  EXPECT_GE(most, 2) << "the workers of one device never ran two shapes at once";
  EXPECT_LE(most, 3) << "more drivers than workers on the device";
  expect_no_overlapping_holdings(w.dir.path() / "leases", {"cpu0"});
  for (const auto& [key, recs] : ledgers(w.root())) EXPECT_EQ(recs.back().value("round", 0), 3) << key;
  EXPECT_NE(run.err.find("3 worker(s) on cpu0"), std::string::npos) << run.err;
  auto sweep_doc = croq::try_parse_json(croq::read_file(w.root() / "tuning" / "sweep.json").value_or("{}"));
  ASSERT_TRUE(sweep_doc.has_value());
  EXPECT_EQ(sweep_doc->value("workers_per_device", 0), 3);
  // Out of range: refused before anything runs.
  auto bad = w.args(3);
  bad.insert(bad.end(), {"--workers-per-device", "0"});
  EXPECT_NE(run_croq(w.root(), bad, w.env).rc, 0);
}

TEST(SweepCli, RefusesABadManifestAndASecondSweepChangingNothing) {
  Env w(1, json{{"schema", "croq-sweep-manifest-v1"}, {"operator", "matmul"}, {"dtypes", {"f32"}},
                {"shapes", {{64, 64}}}});
  CroqRun bad = run_croq(w.root(), w.args(2), w.env);
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("shapes[0]"), std::string::npos) << bad.out;
  EXPECT_FALSE(fs::exists(w.root() / "tuning" / "state.json"));
  // A sweep running holds the workspace: a second one is refused (busy), and stop ends the first.
  croq::atomic_write(w.manifest, small_manifest(1).dump());
  pid_t pid = spawn(w.root(), w.args(400, 30), w.env);
  for (int i = 0; i < 200 && !fs::exists(w.root() / "tuning" / "sweep.json"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CroqRun second = run_croq(w.root(), w.args(400), w.env);
  EXPECT_EQ(second.rc, 6) << second.out << second.err;
  CroqRun stop = run_croq(w.root(), {"sweep", "stop", "--wait", "--timeout", "30"}, w.env);
  EXPECT_EQ(stop.rc, 0) << stop.out << stop.err;
  EXPECT_TRUE(stop.doc.value("was_running", false));
  EXPECT_TRUE(stop.doc.value("stopped", false));
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  json state = json::parse(*croq::read_file(w.root() / "tuning" / "state.json"));
  EXPECT_EQ(state["shapes"].begin().value().value("status", ""), "active");  // resumed first next time
}

// --gpus picks the devices the workers are pinned to: with three devices, "cpu0,cpu2" runs every shape
// on those two only; a device the machine does not have is a usage error that starts nothing.
TEST(SweepCli, GpusPicksTheDevicesAndAnUnknownOneChangesNothing) {
  Env w(3, small_manifest(4));
  std::vector<std::string> args = w.args(2);
  std::vector<std::string> unknown = args;
  unknown.insert(unknown.end(), {"--gpus", "cpu0,cpu7"});
  CroqRun bad = run_croq(w.root(), unknown, w.env);
  EXPECT_EQ(bad.rc, 2) << bad.out << bad.err;
  EXPECT_NE((bad.out + bad.err).find("cpu7"), std::string::npos) << bad.out << bad.err;
  EXPECT_NE((bad.out + bad.err).find("cpu0, cpu1, cpu2"), std::string::npos) << bad.out << bad.err;
  EXPECT_FALSE(fs::exists(w.root() / "tuning" / "state.json"));
  EXPECT_TRUE(ledgers(w.root()).empty());
  args.insert(args.end(), {"--gpus", "cpu0, cpu2,cpu0"});
  CroqRun run = run_croq(w.root(), args, w.env);
  ASSERT_EQ(run.rc, 0) << run.out << run.err;
  EXPECT_EQ(run.doc.value("done", 0), 4) << run.out;
  std::set<std::string> used;
  for (const auto& ev : jsonl(w.root() / "tuning" / "sweep-log.jsonl")) {
    if (ev.value("event", "") == "launch") used.insert(ev.value("device", ""));
  }
  EXPECT_EQ(used, (std::set<std::string>{"cpu0", "cpu2"}));
}

// croq's own search on the cpp backend: two fake devices, two shapes, one round each; killed once
// after the first stored round, then resumed to the end.
TEST(SweepCli, CroqTuneOnTheCppBackendPinnedToFakeDevicesResumesAfterKill) {
  Env w(2, small_manifest(2));
  std::vector<std::string> args = {"sweep", "run", "--manifest", w.manifest.string(), "--dsl", "cpp",
                                   "--rounds", "1", "--seed", "7", "--profile-preset", "quick"};
  pid_t pid = spawn(w.root(), args, w.env);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  size_t seen = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    seen = 0;
    for (const auto& [k, recs] : ledgers(w.root())) seen += recs.size();
    if (seen >= 2) break;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto before = ledgers(w.root());
  CroqRun again = run_croq(w.root(), args, w.env, {}, std::chrono::minutes(8));
  ASSERT_EQ(again.rc, 0) << again.out << again.err.substr(again.err.size() > 3000 ? again.err.size() - 3000 : 0);
  EXPECT_EQ(again.doc.value("done", 0), 2) << again.out;
  auto after = ledgers(w.root());
  ASSERT_EQ(after.size(), 2u);
  for (const auto& [key, recs] : after) {
    for (size_t r = 0; r < before[key].size(); ++r) EXPECT_EQ(recs[r].dump(), before[key][r].dump()) << key;
    std::vector<int> rounds;
    for (const auto& r : recs) rounds.push_back(r.value("round", -1));
    EXPECT_EQ(rounds, (std::vector<int>{0, 0, 1})) << key;
  }
  // croq measure took each worker's own lease slot (cpu0, cpu1), never the shared CPU lease.
  std::set<std::string> held;
  for (const auto& d : {"cpu0", "cpu1", "cpu"}) {
    if (!jsonl(w.dir.path() / "leases" / (std::string("croq-gpu-") + d + ".history")).empty()) held.insert(d);
  }
  EXPECT_EQ(held, (std::set<std::string>{"cpu0", "cpu1"}));
  expect_no_overlapping_holdings(w.dir.path() / "leases", held);
  expect_one_driver_per_device(w.root());
}
