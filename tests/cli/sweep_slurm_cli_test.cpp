// `croq sweep submit --slurm` on a real one-node Slurm cluster: tests/slurm/start_cluster.sh starts
// munged, slurmctld and slurmd as the current user in a temporary folder (two fake GPUs, so the
// tasks' --gres=gpu:1 schedules), the test submits a two-shape sweep of croq's own search on the cpp
// backend, follows it with `croq sweep status` (squeue, then scontrol: the test cluster has no
// accounting database) and checks the ledgers, state.json and the sweep log; then a long sweep is
// cancelled with `croq sweep stop` and its shape resumes on the next submission. Skipped, saying
// why, where the Slurm daemons are not installed or cannot start (scripts/setup.sh installs them).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "croq/util/fs.hpp"
#include "croq/util/json.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

using croq::json;
using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::vector<json> jsonl(const fs::path& file) {
  std::vector<json> out;
  auto text = croq::read_file(file);
  if (!text) return out;
  for (const auto& line : croq::split_lines(*text)) {
    if (auto j = croq::try_parse_json(line)) out.push_back(*j);
  }
  return out;
}

std::map<std::string, std::vector<json>> ledgers(const fs::path& root) {
  std::map<std::string, std::vector<json>> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root / "tuning", ec); !ec && it != fs::end(it); it.increment(ec)) {
    if (it->path().filename() != "idea-log.jsonl") continue;
    out[it->path().parent_path().parent_path().filename().string()] = jsonl(it->path());
  }
  return out;
}

croq::ProcessResult script(const std::string& name, const fs::path& dir) {
  croq::ProcessSpec spec;
  spec.argv = {"bash", std::string(CROQ_SOURCE_DIR) + "/tests/slurm/" + name, dir.string()};
  spec.timeout = std::chrono::milliseconds(60000);
  croq::SystemProcessRunner runner;
  return runner.run(spec);
}

// The cluster for the scope of a test.
struct Cluster {
  fs::path dir;
  bool up = false;
  std::string why;
  explicit Cluster(const fs::path& d) : dir(d) {
    croq::ProcessResult r = script("start_cluster.sh", dir);
    up = r.ok();
    why = r.err.empty() ? r.describe() : r.err;
    if (!up && r.exit_code != 77) why = "start_cluster.sh failed (" + r.describe() + "): " + r.err;
    skipped = r.exit_code == 77;
  }
  ~Cluster() { script("stop_cluster.sh", dir); }
  bool skipped = false;
  std::string conf() const { return (dir / "slurm.conf").string(); }
};

// `croq sweep status` until the job has no task queued or running.
json wait_for_job(const fs::path& root, const std::map<std::string, std::string>& env, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  json st;
  while (std::chrono::steady_clock::now() < deadline) {
    CroqRun r = run_croq(root, {"sweep", "status"}, env);
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    st = r.doc;
    if (st.contains("slurm") && st["slurm"].value("live", 1) == 0) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ADD_FAILURE() << "the Slurm job did not end within " << limit.count() << " s: " << st.dump();
  return st;
}

}  // namespace

TEST(SweepSlurmCli, AJobArrayOnARealClusterTunesEachShapeAndStatusJoinsSlurmWithTheLedgers) {
  TempDir dir;
  Cluster cluster(dir.path() / "cluster");
  if (cluster.skipped) GTEST_SKIP() << "no Slurm cluster here, the Slurm test is skipped: " << cluster.why;
  ASSERT_TRUE(cluster.up) << cluster.why;
  const fs::path root = dir.path() / "ws";
  fs::create_directories(root / "tuning");
  const fs::path manifest = dir.path() / "manifest.json";
  croq::atomic_write(manifest, json{{"schema", "croq-sweep-manifest-v1"}, {"operator", "matmul"}, {"dtypes", {"f32"}},
                                    {"shapes", {{64, 64, 64}, {72, 64, 64}}}}
                                   .dump());
  std::map<std::string, std::string> env = {{"SLURM_CONF", cluster.conf()},
                                            {"CROQ_LEASE_DIR", (dir.path() / "leases").string()}};
  CroqRun sub = run_croq(root, {"sweep", "submit", "--slurm", "--manifest", manifest.string(), "--dsl", "cpp", "--gpu",
                                "cpu_test", "--rounds", "1", "--seed", "7", "--profile-preset", "quick", "--partition",
                                "debug", "--time", "10", "--sbatch-arg=--comment=croq-slurm-test"},
                         env);
  ASSERT_EQ(sub.rc, 0) << sub.out << sub.err;
  const std::string job = sub.doc.value("job_id", "");
  ASSERT_FALSE(job.empty()) << sub.out;
  ASSERT_EQ(sub.doc["tasks"].size(), 2u);
  const std::string script_text = *croq::read_file(sub.doc.value("script", ""));
  EXPECT_NE(script_text.find("#SBATCH --comment=croq-slurm-test"), std::string::npos) << script_text;

  json st = wait_for_job(root, env, std::chrono::seconds(300));
  ASSERT_TRUE(st.contains("slurm")) << st.dump();
  EXPECT_EQ(st["slurm"].value("job_id", ""), job);
  EXPECT_EQ(st["slurm"]["counts"].value("COMPLETED", 0), 2) << st.dump();
  for (const auto& t : st["slurm"]["tasks"]) {
    EXPECT_EQ(t.value("exit_code", ""), "0:0") << t.dump();
    EXPECT_EQ(t.value("node", ""), "croqnode") << t.dump();
  }
  // The ledgers: each shape tuned by its own task to the budget (baseline, starting kernel, round 1).
  auto l = ledgers(root);
  ASSERT_EQ(l.size(), 2u) << st.dump();
  for (const auto& [key, recs] : l) {
    std::vector<int> rounds;
    for (const auto& r : recs) rounds.push_back(r.value("round", -1));
    EXPECT_EQ(rounds, (std::vector<int>{0, 0, 1})) << key;
  }
  std::map<std::string, json> rows;
  for (const auto& r : st["shapes"]) rows[r.value("key", "")] = r;
  ASSERT_EQ(rows.size(), 2u);
  std::set<int> indexes;
  for (const auto& [key, r] : rows) {
    EXPECT_EQ(r.value("status", ""), "done") << r.dump();
    EXPECT_EQ(r.value("current_iter", 0), 1) << r.dump();
    EXPECT_EQ(r["slurm"].value("state", ""), "COMPLETED") << r.dump();
    indexes.insert(r["slurm"].value("index", -1));
  }
  EXPECT_EQ(indexes, (std::set<int>{0, 1}));
  // The sweep log names the job and task of every event of the tasks.
  std::set<std::pair<std::string, int>> tagged;
  for (const auto& e : jsonl(root / "tuning" / "sweep-log.jsonl")) {
    if (e.value("event", "") == "shape_done") tagged.insert({e.value("slurm_job", ""), e.value("slurm_task", -1)});
  }
  EXPECT_EQ(tagged, (std::set<std::pair<std::string, int>>{{job, 0}, {job, 1}}));
  EXPECT_TRUE(fs::exists(fs::path(sub.doc.value("dir", "")) / "logs" / "task-0.out"));

  // Submitted again with the same budget: every shape is done, nothing is submitted.
  CroqRun again = run_croq(root, {"sweep", "submit", "--slurm", "--manifest", manifest.string(), "--dsl", "cpp", "--gpu",
                                  "cpu_test", "--rounds", "1"},
                           env);
  ASSERT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_TRUE(again.doc["job_id"].is_null()) << again.out;
  EXPECT_EQ(again.doc["skipped_done"].size(), 2u) << again.out;
}

TEST(SweepSlurmCli, StopCancelsTheJobAndTheShapeResumesOnTheNextSubmission) {
  TempDir dir;
  Cluster cluster(dir.path() / "cluster");
  if (cluster.skipped) GTEST_SKIP() << "no Slurm cluster here, the Slurm test is skipped: " << cluster.why;
  ASSERT_TRUE(cluster.up) << cluster.why;
  const fs::path root = dir.path() / "ws";
  fs::create_directories(root / "tuning");
  const fs::path manifest = dir.path() / "manifest.json";
  croq::atomic_write(manifest, json{{"schema", "croq-sweep-manifest-v1"}, {"operator", "matmul"}, {"dtypes", {"f32"}},
                                    {"shapes", {{64, 64, 64}}}}
                                   .dump());
  std::map<std::string, std::string> env = {{"SLURM_CONF", cluster.conf()},
                                            {"CROQ_LEASE_DIR", (dir.path() / "leases").string()}};
  auto submit = [&](int rounds) {
    return run_croq(root, {"sweep", "submit", "--slurm", "--manifest", manifest.string(), "--dsl", "cpp", "--gpu",
                           "cpu_test", "--rounds", std::to_string(rounds), "--driver", "command", "--command",
                           std::string(CROQ_SWEEP_DRIVER_BIN) + " {root} {gpu} {dsl} {model} {key} {target} 40"},
                    env);
  };
  CroqRun sub = submit(100000);
  ASSERT_EQ(sub.rc, 0) << sub.out << sub.err;
  const std::string job = sub.doc.value("job_id", "");
  // A second submission while the job runs is refused.
  CroqRun second = submit(100000);
  EXPECT_EQ(second.rc, 6) << second.out << second.err;
  // Wait for a few stored rounds, then stop.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto l = ledgers(root);
    if (!l.empty() && l.begin()->second.size() >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(ledgers(root).empty()) << "the task stored no round";
  CroqRun stop = run_croq(root, {"sweep", "stop", "--wait", "--timeout", "60"}, env);
  ASSERT_EQ(stop.rc, 0) << stop.out << stop.err;
  EXPECT_EQ(stop.doc["slurm"].value("job_id", ""), job);
  EXPECT_TRUE(stop.doc["slurm"].value("cancelled", false)) << stop.out;
  EXPECT_TRUE(stop.doc["slurm"].value("stopped", false)) << stop.out;
  CroqRun st = run_croq(root, {"sweep", "status"}, env);
  ASSERT_EQ(st.rc, 0) << st.err;
  EXPECT_EQ(st.doc["slurm"]["tasks"][0].value("state", ""), "CANCELLED") << st.out;
  // The driver stopped with its task; the shape stays active with its rounds.
  const size_t stored = ledgers(root).begin()->second.size();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(ledgers(root).begin()->second.size(), stored) << "a driver outlived its cancelled task";
  json state = json::parse(*croq::read_file(root / "tuning" / "state.json"));
  EXPECT_EQ(state["shapes"].begin().value().value("status", ""), "active") << state.dump();
  // Resubmitted with a budget just above the stored rounds: the task resumes and tops it up.
  const int budget = static_cast<int>(stored);  // rounds 0..stored-1 are stored: one more round
  CroqRun resumed = submit(budget);
  ASSERT_EQ(resumed.rc, 0) << resumed.out << resumed.err;
  EXPECT_EQ(resumed.doc["tasks"][0].value("plan", ""), "resume") << resumed.out;
  json done = wait_for_job(root, env, std::chrono::seconds(120));
  auto recs = ledgers(root).begin()->second;
  EXPECT_EQ(recs.back().value("round", -1), budget);
  EXPECT_EQ(done["shapes"][0].value("status", ""), "done") << done.dump();
}
