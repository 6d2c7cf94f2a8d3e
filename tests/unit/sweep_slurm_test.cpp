// The Slurm side of `croq sweep` (src/croq/sweep/slurm*.{hpp,cpp}) with fakes at the process
// boundary: the parsers on recorded squeue/sacct/scontrol output of Slurm 22.05, the commands the
// client runs (a fake process runner answers them), the submission's script and files, the
// refusals that change nothing, the task's device, and the status join. The real cluster is
// tests/cli/sweep_slurm_cli_test.cpp.
#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/sweep/slurm.hpp"
#include "croq/sweep/slurm_sweep.hpp"
#include "croq/sweep/state.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"
#include "unit/build_fake_runner.hpp"

using namespace croq;
using namespace croq::sweep;
using croq::test::FakeRule;
using croq::test::FakeRunner;
using croq::test::ScopedRunner;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

// Recorded on a one-node Slurm 22.05 cluster (tests/slurm/start_cluster.sh).
const char* k_squeue = "1|0|RUNNING|None|croqnode|0:01\n1|1|RUNNING|None|croqnode|0:01\n1|2|PENDING|Resources||0:00\n";
const char* k_scontrol =
    "JobId=3 ArrayJobId=1 ArrayTaskId=1 JobName=croq-sweep UserId=ci(1001) GroupId=ci(1001) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=COMPLETED Reason=None Dependency=(null) "
    "Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:02 TimeLimit=UNLIMITED NodeList=croqnode\n"
    "JobId=2 ArrayJobId=1 ArrayTaskId=0 JobName=croq-sweep UserId=ci(1001) JobState=FAILED Reason=NonZeroExitCode "
    "ExitCode=1:0 RunTime=00:00:05 NodeList=croqnode\n"
    "JobId=1 ArrayJobId=1 ArrayTaskId=2-3 JobName=croq-sweep JobState=PENDING Reason=Resources ExitCode=0:0 "
    "RunTime=00:00:00 NodeList=(null)\n";
const char* k_sacct = "7_0|COMPLETED|0:0|00:03:10|gpu01\n7_1|CANCELLED by 1001|0:15|00:01:02|gpu02\n"
                      "7_[2-4]|PENDING|0:0|00:00:00|None assigned\n";

// A Slurm that keeps its jobs in memory: submit records the script, job() answers from `tasks`.
class FakeSlurm : public SlurmClient {
 public:
  std::vector<fs::path> scripts;
  std::vector<std::string> cancelled;
  std::map<std::string, std::vector<SlurmTask>> jobs;
  bool refuse = false;
  int next = 41;

  std::string submit(const fs::path& script, const fs::path&) override {
    if (refuse) throw Error(ExitCode::failure, "sbatch refused the job: invalid partition specified: nope");
    scripts.push_back(script);
    return std::to_string(++next);
  }
  SlurmJobView job(const std::string& id) override {
    SlurmJobView v;
    v.tasks = jobs[id];
    v.accounting = "scontrol";
    return v;
  }
  void cancel(const std::string& id) override {
    cancelled.push_back(id);
    for (auto& t : jobs[id]) t.state = "CANCELLED";
  }
};

FakeRule rule(const std::string& program, int exit_code = 0, const std::string& out = "", const std::string& err = "") {
  FakeRule r;
  r.program = program;
  r.exit_code = exit_code;
  r.out = out;
  r.err = err;
  r.write_output = false;  // squeue and sacct take -o as a format, not a file to write
  return r;
}

SlurmTask task(int i, const std::string& state) {
  SlurmTask t;
  t.index = i;
  t.state = state;
  t.source = "squeue";
  return t;
}

Manifest two_shapes() {
  json doc = {{"schema", "croq-sweep-manifest-v1"}, {"operator", "matmul"}, {"dtypes", {"f32"}},
              {"shapes", {{64, 64, 64}, {72, 64, 64}}}};
  return manifest_from_json(doc, "m.json", "", {});
}

SweepOptions options(const fs::path& root) {
  SweepOptions o;
  o.root = root;
  o.croq_exe = "/opt/croq/bin/croq";
  o.gpu_key = "cpu_test";
  o.dsl = "cpp";
  o.rounds = 2;
  return o;
}

std::vector<std::string> notes;
Note note = [](const std::string& l) { notes.push_back(l); };

class FakeDevices : public DeviceSource {
 public:
  std::vector<Device> devices;
  std::vector<Device> list(std::string*) override { return devices; }
  std::optional<std::string> unhealthy(const Device&) override { return std::nullopt; }
};

}  // namespace

TEST(SweepSlurm, ParsesSqueueSacctAndScontrolAsSlurmPrintsThem) {
  auto q = parse_squeue(k_squeue);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[2].index, 2);
  EXPECT_EQ(q[2].state, "PENDING");
  EXPECT_EQ(q[2].reason, "Resources");
  EXPECT_EQ(q[0].node, "croqnode");
  auto a = parse_sacct(k_sacct);
  ASSERT_EQ(a.size(), 5u);  // 7_[2-4] expanded
  EXPECT_EQ(a[1].state, "CANCELLED");
  EXPECT_EQ(a[1].exit_code, "0:15");
  EXPECT_EQ(a[4].index, 4);
  EXPECT_EQ(a[4].node, "");
  auto c = parse_scontrol_jobs(k_scontrol);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[1].index, 0);
  EXPECT_EQ(c[1].state, "FAILED");
  EXPECT_EQ(c[1].exit_code, "1:0");
  EXPECT_EQ(c[3].index, 3);
  EXPECT_EQ(c[3].node, "");
  EXPECT_EQ(expand_array_indexes("[0-3,7]%2"), (std::vector<int>{0, 1, 2, 3, 7}));
  EXPECT_EQ(expand_array_indexes("0-6:3"), (std::vector<int>{0, 3, 6}));
  EXPECT_TRUE(expand_array_indexes("N/A").empty());
  EXPECT_TRUE(slurm_state_is_live("PENDING"));
  EXPECT_FALSE(slurm_state_is_live("COMPLETED"));
}

TEST(SweepSlurm, TheClientJoinsSqueueWithScontrolWhereAccountingIsOff) {
  FakeRunner fake;
  fake.rules = {rule("squeue", 0, "1|2|PENDING|Resources||0:00\n"),
                rule("sacct", 1, "", "Slurm accounting storage is disabled\n"), rule("scontrol", 0, k_scontrol)};
  ScopedRunner scoped(&fake);
  CommandSlurm slurm;
  SlurmJobView v = slurm.job("1");
  ASSERT_EQ(v.tasks.size(), 4u);
  EXPECT_EQ(v.accounting, "scontrol");
  EXPECT_EQ(v.tasks[0].state, "FAILED");
  EXPECT_EQ(v.tasks[1].state, "COMPLETED");
  EXPECT_EQ(v.tasks[2].source, "squeue");  // the live view wins
  EXPECT_EQ(fake.calls_of("squeue").at(0),
            (std::vector<std::string>{"squeue", "-h", "-r", "-j", "1", "-o", "%F|%K|%T|%r|%N|%M"}));
  EXPECT_THROW(slurm.job("1; rm -rf /"), Error);  // never a word that is not a job id
}

TEST(SweepSlurm, TheClientSubmitsParsablyAndSaysWhatSbatchRefused) {
  FakeRunner fake;
  fake.rules = {rule("sbatch", 0, "1234;croqtest\n"), rule("scancel")};
  ScopedRunner scoped(&fake);
  CommandSlurm slurm;
  EXPECT_EQ(slurm.submit("/ws/tuning/slurm/x/job.sh", "/ws"), "1234");
  EXPECT_EQ(fake.calls_of("sbatch").at(0), (std::vector<std::string>{"sbatch", "--parsable", "/ws/tuning/slurm/x/job.sh"}));
  slurm.cancel("1234");
  EXPECT_EQ(fake.calls_of("scancel").at(0), (std::vector<std::string>{"scancel", "1234"}));
  fake.rules = {rule("sbatch", 1, "", "sbatch: error: Batch job submission failed: Invalid partition name specified\n")};
  try {
    slurm.submit("/ws/job.sh", "/ws");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::failure);
    EXPECT_NE(std::string(e.what()).find("Invalid partition name"), std::string::npos) << e.what();
  }
  fake.rules = {rule("sbatch")};
  fake.rules[0].not_found = true;
  try {
    slurm.submit("/ws/job.sh", "/ws");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::no_device);
  }
}

TEST(SweepSlurm, SubmitWritesAnArrayOfTheShapesLeftWithTheOptionsPassedThrough) {
  TempDir dir;
  const fs::path root = dir.path();
  // The first shape is done at the budget already (its ledger holds both rounds): it is left out of
  // the array.
  StateFile(root).write({{"shapes", {{"matmul_f32_64x64x64_fs",
                                      {{"status", "done"}, {"mode", "from_scratch"}, {"current_iter", 2}}}}}});
  {
    Workspace ws(root);
    Ledger ledger(ws, make_task("cpu_test", "cpp", "matmul_f32_64x64x64_fs", "croq-search"));
    StoreOptions so_;
    so_.auto_round = false;
    for (int r = 0; r <= 2; ++r) {
      RoundRecord rec;
      rec.round = r;
      rec.iter = r == 0 ? "iter000" : fmt::format("iter{:03d}", r);
      rec.kernel = r == 0 ? "iter000_openblas" : rec.iter + "_k";
      rec.decision = r == 0 ? Decision::BASELINE : Decision::DISCARD;
      rec.tflops = 1.0;
      rec.bottleneck = r == 0 ? "n/a" : "compute_bound";
      rec.idea = "x";
      rec.timestamp = fmt::format("2026-11-29T00:00:1{}.000Z", r);
      ledger.store(rec, so_, std::chrono::milliseconds(1000));
    }
  }
  FakeSlurm slurm;
  SlurmOptions so;
  so.partition = "gpu";
  so.account = "proj42";
  so.time_limit = "2-00:00:00";
  so.max_parallel = 4;
  so.sbatch_args = {"--constraint=h200", "--qos=long"};
  json out = submit_slurm_sweep(options(root), two_shapes(), so, slurm, note);
  EXPECT_EQ(out.value("job_id", ""), "42");
  ASSERT_EQ(out["tasks"].size(), 1u);
  EXPECT_EQ(out["tasks"][0].value("key", ""), "matmul_f32_72x64x64_fs");
  EXPECT_EQ(out["skipped_done"], json::array({"matmul_f32_64x64x64_fs"}));
  ASSERT_EQ(slurm.scripts.size(), 1u);
  const std::string script = *read_file(slurm.scripts[0]);
  for (const char* line : {"#SBATCH --array=0-0%4\n", "#SBATCH --gres=gpu:1\n", "#SBATCH --partition=gpu\n",
                           "#SBATCH --account=proj42\n", "#SBATCH --time=2-00:00:00\n", "#SBATCH --constraint=h200\n",
                           "#SBATCH --qos=long\n", "sweep task --submission", "--index \"$SLURM_ARRAY_TASK_ID\""}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << "\n" << script;
  }
  EXPECT_NE(script.find("/opt/croq/bin/croq --root " + root.string()), std::string::npos) << script;
  json doc = json::parse(*read_file(slurm_doc_path(root)));
  EXPECT_EQ(doc.value("job_id", ""), "42");
  EXPECT_EQ(doc["tasks"][0]["shape"].value("m", 0), 72);
  EXPECT_EQ(doc["options"].value("rounds", 0), 2);
  // state.json: the new shape is pending, the done one untouched.
  json state = StateFile(root).read();
  EXPECT_EQ(state["shapes"]["matmul_f32_72x64x64_fs"].value("status", ""), "pending");
  EXPECT_EQ(state["shapes"]["matmul_f32_72x64x64_fs"].value("gpu", ""), "cpu_test");
  EXPECT_EQ(state["shapes"]["matmul_f32_64x64x64_fs"].value("status", ""), "done");

  // While that job has a task queued, a second submission is refused and changes nothing.
  slurm.jobs["42"] = {task(0, "PENDING")};
  const std::string before = *read_file(slurm_doc_path(root));
  try {
    submit_slurm_sweep(options(root), two_shapes(), so, slurm, note);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::busy);
    EXPECT_NE(std::string(e.what()).find("job 42"), std::string::npos) << e.what();
  }
  EXPECT_EQ(*read_file(slurm_doc_path(root)), before);
  EXPECT_EQ(slurm.scripts.size(), 1u);
  // stop cancels it (and only while it has live tasks).
  json st = stop_slurm_sweep(root, slurm, false, std::chrono::milliseconds(0));
  EXPECT_TRUE(st.value("was_live", false));
  EXPECT_EQ(slurm.cancelled, std::vector<std::string>{"42"});
  st = stop_slurm_sweep(root, slurm, false, std::chrono::milliseconds(0));
  EXPECT_FALSE(st.value("was_live", true));
  EXPECT_EQ(slurm.cancelled.size(), 1u);
}

TEST(SweepSlurm, ARefusedSubmissionOrABadOptionLeavesNothingBehind) {
  TempDir dir;
  const fs::path root = dir.path();
  FakeSlurm slurm;
  slurm.refuse = true;
  EXPECT_THROW(submit_slurm_sweep(options(root), two_shapes(), {}, slurm, note), Error);
  EXPECT_FALSE(fs::exists(slurm_doc_path(root)));
  EXPECT_FALSE(fs::exists(root / "tuning" / "state.json"));
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(root / "tuning" / "slurm", ec) || !fs::exists(root / "tuning" / "slurm"));
  slurm.refuse = false;
  SlurmOptions bad;
  bad.sbatch_args = {"--constraint=h200\nrm -rf ~"};
  EXPECT_THROW(submit_slurm_sweep(options(root), two_shapes(), bad, slurm, note), Error);
  bad.sbatch_args = {"constraint=h200"};
  EXPECT_THROW(submit_slurm_sweep(options(root), two_shapes(), bad, slurm, note), Error);
  SlurmOptions spaced;
  spaced.partition = "gpu long";
  EXPECT_THROW(submit_slurm_sweep(options(root), two_shapes(), spaced, slurm, note), Error);
  EXPECT_TRUE(slurm.scripts.empty());
  EXPECT_FALSE(fs::exists(slurm_doc_path(root)));
  // A dry run writes the script and the submission, and submits nothing.
  SlurmOptions dry;
  dry.dry_run = true;
  dry.gres = "none";
  json out = submit_slurm_sweep(options(root), two_shapes(), dry, slurm, note);
  EXPECT_TRUE(slurm.scripts.empty());
  EXPECT_FALSE(fs::exists(slurm_doc_path(root)));
  const std::string script = *read_file(out.value("script", ""));
  EXPECT_NE(script.find("#SBATCH --array=0-1\n"), std::string::npos) << script;
  EXPECT_EQ(script.find("--gres"), std::string::npos) << script;
}

TEST(SweepSlurm, ATaskRunsOnTheGpuSlurmGaveIt) {
  FakeDevices gpus;
  for (int i = 0; i < 4; ++i) gpus.devices.push_back({std::to_string(i), "GPU-uuid-" + std::to_string(i), "", "H200"});
  std::map<std::string, std::string> env;
  auto get = [&](const char* v) -> std::optional<std::string> {
    return env.count(v) ? std::optional<std::string>(env[v]) : std::nullopt;
  };
  env["SLURM_JOB_GPUS"] = "2";
  EXPECT_EQ(slurm_task_device(gpus, get).id, "2");
  env["SLURM_STEP_GPUS"] = "3,1";
  EXPECT_EQ(slurm_task_device(gpus, get).id, "3");
  env = {{"CUDA_VISIBLE_DEVICES", "GPU-uuid-1"}};
  EXPECT_EQ(slurm_task_device(gpus, get).id, "1");
  env.clear();
  EXPECT_THROW(slurm_task_device(gpus, get), Error);  // which of four? never a guess
  FakeDevices one;
  one.devices = {{"cpu", "", "cpu", "host CPU"}};
  EXPECT_EQ(slurm_task_device(one, get).id, "cpu");
}

TEST(SweepSlurm, StatusJoinsTheJobsTasksWithTheShapes) {
  TempDir dir;
  const fs::path root = dir.path();
  FakeSlurm slurm;
  submit_slurm_sweep(options(root), two_shapes(), {}, slurm, note);
  SlurmTask failed = task(1, "FAILED");
  failed.exit_code = "1:0";
  failed.source = "scontrol";
  slurm.jobs["42"] = {task(0, "RUNNING"), failed};
  json st = sweep_status(root);
  add_slurm_status(st, root, slurm);
  ASSERT_TRUE(st.contains("slurm"));
  EXPECT_EQ(st["slurm"].value("job_id", ""), "42");
  EXPECT_EQ(st["slurm"].value("live", 0), 1);
  EXPECT_EQ(st["slurm"]["counts"].value("FAILED", 0), 1);
  std::map<std::string, json> rows;
  for (const auto& r : st["shapes"]) rows[r.value("key", "")] = r;
  EXPECT_EQ(rows["matmul_f32_64x64x64_fs"]["slurm"].value("state", ""), "RUNNING");
  EXPECT_EQ(rows["matmul_f32_72x64x64_fs"]["slurm"].value("exit_code", ""), "1:0");
  EXPECT_EQ(rows["matmul_f32_72x64x64_fs"].value("status", ""), "pending");
  // No job on the workspace: status is unchanged.
  TempDir other;
  json plain = sweep_status(other.path());
  add_slurm_status(plain, other.path(), slurm);
  EXPECT_FALSE(plain.contains("slurm"));
}
