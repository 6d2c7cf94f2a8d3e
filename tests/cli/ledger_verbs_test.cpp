// The ledger verbs through the real croq binary: each verb's happy path, its documented errors
// and exit codes, the activity trace, and the STORE contract line.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "croq/ledger/records.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

using croq::test::CroqRun;
using croq::test::run_croq;
using croq::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string k_gpu = "sm90_NVIDIA_H200";
const std::string k_key = "matmul_f16fp32_4096x2048x512";
const std::string k_model = "opus-4";

std::vector<std::string> task_args(const std::string& key = k_key) {
  return {"--gpu", k_gpu, "--dsl", "cuda", "--shape-key", key, "--model", k_model};
}

std::vector<std::string> with_task(std::vector<std::string> args, const std::string& key = k_key) {
  auto t = task_args(key);
  args.insert(args.end(), t.begin(), t.end());
  return args;
}

fs::path task_dir(const fs::path& root, const std::string& kind, const std::string& key = k_key) {
  return root / "tuning" / k_gpu / "cuda" / kind / key / k_model;
}

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = croq::read_file(e.path()).value_or("");
  }
  return out;
}

// Files that record what happened rather than what is stored: the trace and the lock holder.
std::map<std::string, std::string> ledger_files(const fs::path& dir) {
  auto all = snapshot(dir);
  for (auto it = all.begin(); it != all.end();) {
    const std::string& name = it->first;
    if (name.find("activity.jsonl") != std::string::npos || name.find(".lock") != std::string::npos) {
      it = all.erase(it);
    } else {
      ++it;
    }
  }
  return all;
}

CroqRun store(const fs::path& root, const std::string& kernel, const std::string& decision, const std::string& tflops,
              std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"store-round", "--iter", kernel, "--kernel", kernel, "--decision", decision};
  if (!tflops.empty()) a.insert(a.end(), {"--tflops", tflops});
  if (decision != "BASELINE") a.insert(a.end(), {"--bottleneck", "memory_bound", "--idea", "idea of " + kernel});
  a.insert(a.end(), more.begin(), more.end());
  return run_croq(root, with_task(a));
}

class VerbTest : public ::testing::Test {
 protected:
  VerbTest() { fs::create_directories(dir / "tuning"); }
  void seed() {
    ASSERT_EQ(run_croq(root(), with_task({"task", "init", "--task-uid", "uid42"})).rc, 0);
    ASSERT_EQ(store(root(), "iter000_cublas", "BASELINE", "600").rc, 0);
    ASSERT_EQ(store(root(), "iter001_draft", "KEEP", "300", {"--round", "0"}).rc, 0);
    ASSERT_EQ(store(root(), "iter002_stages4", "KEEP", "420").rc, 0);
  }
  const fs::path& root() const { return dir.path(); }
  TempDir dir;
};

void expect_error(const CroqRun& r, int rc, const std::string& code, const std::string& message_part = {}) {
  EXPECT_EQ(r.rc, rc) << r.out << r.err;
  EXPECT_EQ(r.doc["ok"], false) << r.out;
  EXPECT_EQ(r.doc["error"]["code"], code) << r.out;
  EXPECT_EQ(r.doc["error"]["exit_code"], rc) << r.out;
  EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
  if (!message_part.empty()) {
    EXPECT_NE(r.doc["error"]["message"].get<std::string>().find(message_part), std::string::npos) << r.out;
  }
}

// ---- where / task init ----

TEST_F(VerbTest, WhereShowsTheRootAndItsOrigin) {
  seed();
  auto r = run_croq(root(), {"where"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(fs::path(r.doc["root"].get<std::string>()), fs::weakly_canonical(root()));
  EXPECT_EQ(r.doc["origin"], "--root");
  ASSERT_EQ(r.doc["tasks"].size(), 1u);
  EXPECT_EQ(r.doc["tasks"][0], k_gpu + "/cuda/" + k_key + "/" + k_model);
  auto env = run_croq({}, {"where"}, {{"CROQ_ROOT", root().string()}});
  EXPECT_EQ(env.doc["origin"], "CROQ_ROOT");
}

TEST_F(VerbTest, WhereRefusesAMissingRoot) {
  auto r = run_croq(root() / "nope", {"where"});
  expect_error(r, 2, "usage", "is not a folder");
}

TEST_F(VerbTest, NoRootIsNeverSilentlyTheCurrentFolder) {
  croq::ProcessSpec spec;
  spec.argv = {CROQ_BIN, "where"};
  spec.cwd = root();  // no tuning/ here (the folder is below /tmp, outside any git repository)
  fs::remove(root() / "tuning");
  spec.env_unset = {"CROQ_ROOT"};
  croq::SystemProcessRunner runner;
  auto r = runner.run(spec);
  if (r.exit_code == 0) GTEST_SKIP() << "a tuning/ folder or git repository above " << root() << ": " << r.out;
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no workspace root"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--root"), std::string::npos) << r.err;
}

TEST_F(VerbTest, TaskInitWritesTheTaskUidFirstAndIsIdempotent) {
  auto r = run_croq(root(), with_task({"task", "init", "--task-uid", "abc123"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["task_uid"], "abc123");
  EXPECT_EQ(r.doc["schema"], "croq-task-v1");
  EXPECT_EQ(r.doc["shape_key"], k_key);
  auto cfg = croq::try_parse_json(*croq::read_file(task_dir(root(), "logs") / "task_config.json"));
  ASSERT_TRUE(cfg);
  EXPECT_EQ((*cfg)["task_uid"], "abc123");
  EXPECT_EQ(run_croq(root(), with_task({"task", "init", "--task-uid", "abc123"})).rc, 0);
  EXPECT_EQ(run_croq(root(), with_task({"task", "init"})).doc["task_uid"], "abc123");
  auto before = ledger_files(root());
  expect_error(run_croq(root(), with_task({"task", "init", "--task-uid", "other"})), 9, "conflict", "already has task_uid");
  expect_error(run_croq(root(), with_task({"task", "init", "--task-uid", "../x"})), 2, "usage");
  EXPECT_EQ(ledger_files(root()), before);
}

TEST_F(VerbTest, TaskInitWithoutUidMakesOne) {
  auto r = run_croq(root(), with_task({"task", "init"}));
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(r.doc["task_uid"].get<std::string>().size(), 12u);
}

// ---- next-iter ----

TEST_F(VerbTest, NextIterReservesMonotonicIds) {
  auto a = run_croq(root(), with_task({"next-iter", "--tag", "stages4"}));
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(a.doc["iter"], "iter001");
  EXPECT_EQ(a.doc["kernel"], "iter001_stages4");
  EXPECT_EQ(a.doc["number"], 1);
  EXPECT_EQ(a.doc["reserved"], true);
  EXPECT_EQ(run_croq(root(), with_task({"next-iter", "--tag", "bk64"})).doc["kernel"], "iter002_bk64");
  auto peek = run_croq(root(), with_task({"next-iter", "--tag", "x2", "--peek"}));
  EXPECT_EQ(peek.doc["iter"], "iter003");
  EXPECT_EQ(peek.doc["reserved"], false);
  EXPECT_EQ(run_croq(root(), with_task({"next-iter", "--tag", "x2"})).doc["iter"], "iter003");
}

// With a plan open for iter003, next-iter hands out iter003 while it is not stored: again after a
// first reservation (croq state's IMPLEMENT step once said to run it again), and when the source
// was written before it (both moved the number past the plan, which then refused it).
TEST_F(VerbTest, NextIterHandsOutTheOpenPlansNumber) {
  seed();  // the baseline, iter001_draft and iter002_stages4
  ASSERT_EQ(run_croq(root(), with_task({"checkpoint", "write", "--iter", "iter003", "--base", "iter002_stages4",
                                        "--bottleneck", "memory_bound", "--idea", "wider tiles"}))
                .rc,
            0);
  EXPECT_EQ(run_croq(root(), with_task({"next-iter", "--tag", "wide"})).doc["iter"], "iter003");
  CroqRun state = run_croq(root(), with_task({"state"}));
  EXPECT_EQ(state.doc.value("next_action", "").find("next-iter"), std::string::npos) << state.out;
  EXPECT_EQ(run_croq(root(), with_task({"next-iter", "--tag", "wide"})).doc["iter"], "iter003");
  croq::atomic_write(task_dir(root(), "srcs") / "iter003_wider.cu", "// written first\n");
  EXPECT_EQ(run_croq(root(), with_task({"next-iter", "--tag", "wider"})).doc["iter"], "iter003");
}

// croq state says when a task is advisory, and how to turn the guards on (a new user's enforced
// steps were taken out of order without a word, the task having no protocol.json).
TEST_F(VerbTest, StateSaysWhenATaskIsAdvisory) {
  CroqRun advisory = run_croq(root(), with_task({"state"}));
  ASSERT_EQ(advisory.rc, 0) << advisory.err;
  EXPECT_NE(advisory.err.find("is advisory"), std::string::npos) << advisory.err;
  EXPECT_NE(advisory.err.find("croq protocol begin"), std::string::npos) << advisory.err;
  ASSERT_EQ(run_croq(root(), with_task({"protocol", "begin"})).rc, 0);
  CroqRun enforced = run_croq(root(), with_task({"state"}));
  EXPECT_EQ(enforced.err.find("is advisory"), std::string::npos) << enforced.err;
}

TEST_F(VerbTest, NextIterAttemptIdsUseNoIterationNumber) {
  auto a = run_croq(root(), with_task({"next-iter", "--tag", "tma", "--attempt"}));
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(a.doc["attempt"], "attemptAAAA");
  EXPECT_EQ(a.doc["kernel"], "attemptAAAA_tma");
  EXPECT_EQ(a.doc["index"], 0);
  EXPECT_EQ(run_croq(root(), with_task({"next-iter", "--tag", "tma", "--attempt"})).doc["attempt"], "attemptAAAB");
  EXPECT_EQ(run_croq(root(), with_task({"next-iter", "--tag", "tma"})).doc["iter"], "iter001");
}

TEST_F(VerbTest, NextIterRefusesBadTagsAndKeys) {
  expect_error(run_croq(root(), with_task({"next-iter", "--tag", "Bad"})), 2, "usage", "invalid tag");
  expect_error(run_croq(root(), with_task({"next-iter", "--tag", "a/b"})), 2, "usage");
  expect_error(run_croq(root(), with_task({"next-iter"})), 2, "usage", "--tag");
  expect_error(run_croq(root(), with_task({"next-iter", "--tag", "ok"}, "matmul_f16_../x")), 2, "usage");
  expect_error(run_croq(root(), with_task({"next-iter", "--tag", "ok"}, "matmul_f17_64x64x64")), 2, "usage", "dtype");
  EXPECT_FALSE(fs::exists(root() / "tuning" / k_gpu)) << "refused calls create nothing";
}

// ---- store-round ----

TEST_F(VerbTest, StoreRoundWritesRecordRowAndTheContractLine) {
  seed();
  auto r = store(root(), "iter003_bk64", "DISCARD", "410.5", {"--category", "tiling", "--expected-gain", "+5%"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["ok"], true);
  EXPECT_EQ(r.doc["record"]["round"], 2);
  EXPECT_EQ(r.doc["record"]["kernel"], "iter003_bk64");
  EXPECT_EQ(r.doc["record"]["tflops"], 410.5);
  EXPECT_EQ(r.doc["record"]["source"], "reported");
  EXPECT_EQ(r.doc["record"]["schema"], "croq-round-v1");
  EXPECT_EQ(r.doc["files"]["idea_log"], "tuning/" + k_gpu + "/cuda/logs/" + k_key + "/" + k_model + "/idea-log.jsonl");
  EXPECT_NE(r.err.find("[store_round] STORE complete: round 2 iter003_bk64 DISCARD 410.50 TFLOPS memory_bound"),
            std::string::npos)
      << r.err;
  auto tsv = croq::read_file(task_dir(root(), "logs") / "results.tsv");
  ASSERT_TRUE(tsv);
  EXPECT_NE(tsv->find("iter003\titer003_bk64\t410.50\tDISCARD\tmemory_bound\tidea of iter003_bk64\n"), std::string::npos);
  // The contract line is printed even with --quiet.
  std::vector<std::string> q = {"--quiet", "store-round", "--iter", "iter004", "--kernel", "iter004_qq", "--decision",
                                "KEEP",    "--tflops",      "1",      "--bottleneck", "mixed", "--idea", "quiet"};
  auto t = task_args();
  q.insert(q.end(), t.begin(), t.end());
  auto quiet = run_croq(root(), q);
  EXPECT_EQ(quiet.rc, 0) << quiet.err;
  EXPECT_NE(quiet.err.find("[store_round] STORE complete"), std::string::npos);
}

TEST_F(VerbTest, StoreRoundEveryDecision) {
  seed();
  EXPECT_EQ(store(root(), "iter003_aa", "DISCARD", "400").rc, 0);
  for (const char* d : {"COMPILE_FAIL", "VERIFY_FAIL", "RUNTIME_FAIL", "SEGFAULT", "HANG"}) {
    auto r = store(root(), "iter004_fail", d, "");
    ASSERT_EQ(r.rc, 0) << d << r.out << r.err;
    EXPECT_EQ(r.doc["record"]["decision"], d);
    EXPECT_EQ(r.doc["record"]["tflops"], 0.0);
    EXPECT_EQ(r.doc["record"]["kernel"].get<std::string>().rfind("attempt", 0), 0u) << "a failure becomes an attempt";
    EXPECT_EQ(r.doc["planned_iter"], "iter004");
  }
  auto next = run_croq(root(), with_task({"next-iter", "--tag", "again"}));
  EXPECT_EQ(next.doc["iter"], "iter004") << "failures freed iter004";
  EXPECT_EQ(store(root(), "iter004_again", "KEEP", "430").rc, 0);
  auto resume = run_croq(root(), with_task({"resume"}));
  EXPECT_EQ(resume.doc["decisions"]["SEGFAULT"], 1);
  EXPECT_EQ(resume.doc["current_best_kernel"], "iter004_again");
}

TEST_F(VerbTest, StoreRoundDuplicatesAreConflictsAndChangeNothing) {
  seed();
  auto before = ledger_files(root());
  expect_error(store(root(), "iter002_stages4", "KEEP", "420"), 9, "conflict", "iter002 is already stored");
  expect_error(store(root(), "iter002_other", "DISCARD", "1"), 9, "conflict");
  expect_error(store(root(), "iter003_new", "KEEP", "1", {"--round", "1"}), 9, "conflict", "round 1 is already stored");
  expect_error(store(root(), "iter000_cublas", "BASELINE", "600"), 9, "conflict");
  EXPECT_EQ(ledger_files(root()), before);
}

TEST_F(VerbTest, StoreRoundRefusesBadArgumentsAndChangesNothing) {
  seed();
  auto before = ledger_files(root());
  const std::vector<std::vector<std::string>> bad = {
      {"--tflops", "abc"},
      {"--tflops", "1.5x"},
      {"--tflops", "nan"},
      {"--tflops", "-3"},
      {"--tflops", "1e999"},
      {"--round", "1.5"},
      {"--round", "two"},
      {"--round", "-1"},
      {"--round", "99999999999999"},
      {"--bottleneck", "unknown"},
      {"--bottleneck", "io_bound"},
      {"--decision", "MAYBE"},
      {"--category", "magic"},
      {"--extra", "[1,2]"},
      {"--extra", "{not json"},
      {"--lock-timeout", "abc"},
      {"--lock-timeout", "-5"},
      {"--kernel", "iter009_other"},
      {"--idea", std::string(20000, 'x')},
      {"--idea", "bad \xff utf8"},
      {"--idea", ""},
      {"--no-such-flag"},
  };
  for (const auto& extra : bad) {
    std::vector<std::string> a = {"store-round", "--iter", "iter003_good", "--decision", "KEEP", "--tflops", "1",
                                  "--bottleneck", "mixed", "--idea", "fine"};
    // The bad value takes the place of the good one, or is added.
    auto at = std::find(a.begin(), a.end(), extra[0]);
    if (extra.size() == 2 && at != a.end()) *(at + 1) = extra[1];
    else a.insert(a.end(), extra.begin(), extra.end());
    auto r = run_croq(root(), with_task(a));
    EXPECT_EQ(r.rc, 2) << croq::preview(extra.back(), 40) << ": " << r.out << r.err;
    EXPECT_EQ(r.doc["ok"], false) << r.out;
    EXPECT_FALSE(r.doc["error"]["message"].get<std::string>().empty());
  }
  EXPECT_EQ(ledger_files(root()), before);
}

TEST_F(VerbTest, StoreRoundIdeaFromAFileOrStdinRoundTripsExactly) {
  seed();
  const std::string idea = "it's \"quoted\"\ttab\nnew line\r\n\\n literal ü 日本 🚀 $(echo no) `no` ; | & > <";
  croq::atomic_write(root() / "idea.txt", idea);
  std::vector<std::string> a = {"store-round", "--iter",       "iter003_ff", "--decision", "KEEP", "--tflops",
                                "1",           "--bottleneck", "mixed",     "--idea-file", (root() / "idea.txt").string()};
  auto r = run_croq(root(), with_task(a));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["record"]["idea"], idea);
  std::vector<std::string> b = {"store-round", "--iter", "iter004_ss", "--decision", "KEEP", "--tflops",
                                "1",           "--bottleneck", "mixed", "--idea-file", "-"};
  auto s = run_croq(root(), with_task(b), {}, idea);
  ASSERT_EQ(s.rc, 0) << s.err;
  // What is on disk reads back the same through both encodings.
  auto log = *croq::read_file(task_dir(root(), "logs") / "idea-log.jsonl");
  auto p = croq::parse_idea_log(log);
  ASSERT_EQ(p.records.size(), 5u);
  EXPECT_EQ(p.records[3].idea, idea);
  EXPECT_EQ(p.records[4].idea, idea);
  std::vector<std::string> w;
  auto rows = croq::parse_results_tsv(*croq::read_file(task_dir(root(), "logs") / "results.tsv"), &w);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[4].idea, idea);
  // --idea and --idea-file exclude each other.
  a.insert(a.end(), {"--idea", "both"});
  EXPECT_EQ(run_croq(root(), with_task(a)).rc, 2);
}

TEST_F(VerbTest, StoreRoundRefusesAOneMebibyteIdea) {
  seed();
  croq::atomic_write(root() / "big.txt", std::string(1 << 20, 'i'));
  auto before = ledger_files(root());
  std::vector<std::string> a = {"store-round", "--iter",       "iter003_big", "--decision",  "KEEP", "--tflops",
                                "1",           "--bottleneck", "mixed",       "--idea-file", (root() / "big.txt").string()};
  expect_error(run_croq(root(), with_task(a)), 2, "usage", "the limit is 16384");
  a.back() = "-";
  expect_error(run_croq(root(), with_task(a), {}, std::string(1 << 20, 'i')), 2, "usage", "the limit is 16384");
  a.back() = (root() / "missing.txt").string();
  expect_error(run_croq(root(), with_task(a)), 4, "not_found");
  EXPECT_EQ(ledger_files(root()), before);
}

// ---- attempt ----

TEST_F(VerbTest, AttemptLogsAFailedTryWithoutEndingTheRound) {
  seed();
  auto r = run_croq(root(), with_task({"attempt", "--tag", "tma", "--reason", "code_bug", "--idea", "TMA \"loads\"",
                                       "--planned-iter", "iter003"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["attempt"], "attemptAAAA");
  EXPECT_EQ(r.doc["kernel"], "attemptAAAA_tma");
  EXPECT_EQ(r.doc["planned_iter"], "iter003");
  auto log = croq::read_file(task_dir(root(), "logs") / "attempt-log.jsonl");
  ASSERT_TRUE(log);
  auto j = croq::try_parse_json(croq::split_lines(*log)[0]);
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["idea"], "TMA \"loads\"");
  EXPECT_EQ(run_croq(root(), with_task({"resume"})).doc["records"], 3) << "an attempt is not a stored round";
  expect_error(run_croq(root(), with_task({"attempt", "--tag", "tma"})), 2, "usage", "--reason");
  expect_error(run_croq(root(), with_task({"attempt", "--tag", "tma", "--reason", "x", "--planned-iter", "soon"})), 2,
               "usage");
}

// ---- checkpoint ----

TEST_F(VerbTest, CheckpointWriteReadVerifyLifecycle) {
  seed();
  fs::path srcs = task_dir(root(), "srcs");
  fs::create_directories(srcs);
  croq::atomic_write(srcs / "iter002_stages4.cu", "#define STAGES 3\n#define BM 128\nkernel();\n");
  auto w = run_croq(root(), with_task({"checkpoint", "write", "--iter", "iter003", "--bottleneck", "latency_bound",
                                       "--idea", "4 stages", "--expected-gain", "+20 TFLOPS", "--levers", "STAGES, BK"}));
  ASSERT_EQ(w.rc, 0) << w.err;
  EXPECT_EQ(w.doc["schema"], "croq-checkpoint-v1");
  EXPECT_EQ(w.doc["status"], "PLANNED");
  EXPECT_EQ(w.doc["iter"], "iter003");
  EXPECT_EQ(w.doc["round"], 2);
  EXPECT_EQ(w.doc["base"], "iter002_stages4") << "the base defaults to the current best";
  EXPECT_EQ(w.doc["levers"], croq::json::array({"STAGES", "BK"}));
  auto r = run_croq(root(), with_task({"checkpoint", "read"}));
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(r.doc["status"], "IMPLEMENTING");
  EXPECT_EQ(r.doc["idea"], "4 stages");
  EXPECT_EQ(run_croq(root(), with_task({"resume"})).doc["open_checkpoint"]["iter"], "iter003");

  // Built as planned.
  croq::atomic_write(srcs / "iter003_stages4.cu", "#define STAGES 4\n#define BM 128\nkernel();\n");
  auto v = run_croq(root(), with_task({"checkpoint", "verify", "--iter", "iter003"}));
  EXPECT_EQ(v.rc, 0) << v.out;
  EXPECT_EQ(v.doc["status"], "VERIFIED");
  EXPECT_EQ(v.doc["significant"], false);
  EXPECT_EQ(v.doc["levers_found"], croq::json::array({"STAGES"}));
  EXPECT_EQ(v.doc["levers_missing"], croq::json::array({"BK"}));
  // Another iteration than planned: exit 3.
  croq::atomic_write(srcs / "iter004_other.cu", "#define STAGES 4\n");
  auto d = run_croq(root(), with_task({"checkpoint", "verify", "--iter", "iter004"}));
  EXPECT_EQ(d.rc, 3) << d.out;
  EXPECT_EQ(d.doc["status"], "DRIFT");
  EXPECT_EQ(d.doc["significant"], true);
  EXPECT_NE(d.err.find("planned iter003 but built iter004"), std::string::npos) << d.err;
  // Storing the planned iteration closes the plan.
  auto s = store(root(), "iter003_stages4", "KEEP", "450");
  EXPECT_EQ(s.doc["checkpoint_closed"], true);
  EXPECT_TRUE(run_croq(root(), with_task({"resume"})).doc["open_checkpoint"].is_null());
}

TEST_F(VerbTest, CheckpointErrors) {
  expect_error(run_croq(root(), with_task({"checkpoint", "read"})), 4, "not_found", "no checkpoint");
  expect_error(run_croq(root(), with_task({"checkpoint", "verify", "--iter", "iter001"})), 4, "not_found");
  expect_error(run_croq(root(), with_task({"checkpoint", "write", "--iter", "iter001", "--bottleneck", "unknown",
                                           "--idea", "x"})),
               2, "usage", "bottleneck");
  expect_error(run_croq(root(), with_task({"checkpoint", "write", "--iter", "soon", "--bottleneck", "mixed", "--idea", "x"})),
               2, "usage");
  expect_error(run_croq(root(), with_task({"checkpoint", "write", "--iter", "iter001", "--bottleneck", "mixed"})), 2,
               "usage", "idea");
  expect_error(run_croq(root(), with_task({"checkpoint", "write", "--iter", "iter001", "--bottleneck", "mixed", "--idea",
                                           "x", "--round", "1.5"})),
               2, "usage");
  expect_error(run_croq(root(), with_task({"checkpoint", "write", "--iter", "iter001", "--bottleneck", "mixed", "--idea",
                                           "x", "--base", "../../etc"})),
               2, "usage");
  expect_error(run_croq(root(), with_task({"checkpoint"})), 2, "usage");
}

TEST_F(VerbTest, TruncatedCheckpointIsReportedNotReplacedByRead) {
  seed();
  fs::path cp = task_dir(root(), "checkpoints") / "current_idea.json";
  fs::create_directories(cp.parent_path());
  croq::atomic_write(cp, "{\"schema\":\"croq-checkpoint-v1\",\"status\":\"PLA");
  auto before = ledger_files(root());
  expect_error(run_croq(root(), with_task({"checkpoint", "read"})), 10, "corrupt", "current_idea.json");
  expect_error(run_croq(root(), with_task({"checkpoint", "verify", "--iter", "iter003"})), 10, "corrupt");
  EXPECT_EQ(ledger_files(root()), before);
  // write replaces it (documented), and resume only warns.
  auto r = run_croq(root(), with_task({"resume"}));
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.doc["warnings"].dump().find("checkpoint"), std::string::npos);
  EXPECT_EQ(run_croq(root(), with_task({"checkpoint", "write", "--iter", "iter003", "--bottleneck", "mixed", "--idea",
                                        "fresh plan"}))
                .rc,
            0);
  EXPECT_EQ(run_croq(root(), with_task({"checkpoint", "read"})).doc["idea"], "fresh plan");
}

// ---- resume / reinforce ----

TEST_F(VerbTest, ResumeJsonHasEverySeedField) {
  seed();
  auto r = run_croq(root(), with_task({"resume"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* f : {"dsl", "shape_key", "current_best_tflops", "current_best_kernel", "current_best_iter",
                        "last_round", "last_iter", "last_decision", "last_bottleneck", "next_iter_number", "src_count",
                        "open_checkpoint", "memory_files_ok", "warnings", "task_uid", "similar_keys", "fresh_start"}) {
    EXPECT_TRUE(r.doc.contains(f)) << f;
  }
  EXPECT_EQ(r.doc["current_best_tflops"], 420.0);
  EXPECT_EQ(r.doc["last_round"], 1);
  EXPECT_EQ(r.doc["next_iter_number"], 3);
  EXPECT_EQ(r.doc["task_uid"], "uid42");
  EXPECT_EQ(r.doc["memory_files_ok"], true);
}

TEST_F(VerbTest, ResumeNeverConflatesAPermutedShapeKey) {
  seed();
  fs::create_directories(task_dir(root(), "srcs"));
  const std::string permuted = "matmul_f16fp32_512x2048x4096";
  auto r = run_croq(root(), with_task({"resume"}, permuted));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["shape_key"], permuted);
  EXPECT_EQ(r.doc["fresh_start"], true);
  EXPECT_TRUE(r.doc["current_best_kernel"].is_null());
  EXPECT_EQ(r.doc["next_iter_number"], 1);
  EXPECT_EQ(r.doc["similar_keys"], croq::json::array({k_key}));
  EXPECT_NE(r.doc["warnings"].dump().find("not resumed"), std::string::npos);
}

TEST_F(VerbTest, ReinforcePrintsTheOneLineSummary) {
  expect_error(run_croq(root(), with_task({"reinforce"})), 4, "not_found");
  seed();
  auto r = run_croq(root(), with_task({"reinforce"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["line"].get<std::string>().rfind("[reinforce] round 1 | best iter002_stages4 420.00 TFLOPS", 0), 0u)
      << r.doc["line"];
  EXPECT_NE(r.err.find("[reinforce] round 1"), std::string::npos);
  EXPECT_EQ(r.doc["next_iter"], "iter003");
}

// ---- session validate / clean ----

TEST_F(VerbTest, SessionValidateAndCleanInvalidOnly) {
  seed();
  auto ok = run_croq(root(), {"session", "validate", "--gpu", k_gpu, "--dsl", "cuda"});
  EXPECT_EQ(ok.rc, 0) << ok.out;
  EXPECT_EQ(ok.doc["pass"], true);
  fs::path log = task_dir(root(), "logs") / "idea-log.jsonl";
  std::string good = *croq::read_file(log);
  croq::atomic_write(log, good + "garbage\n");
  auto bad = run_croq(root(), {"session", "validate", "--gpu", k_gpu, "--dsl", "cuda"});
  EXPECT_EQ(bad.rc, 1) << bad.out;
  EXPECT_EQ(bad.doc["pass"], false);
  EXPECT_NE(bad.err.find("line 4"), std::string::npos) << bad.err;
  expect_error(store(root(), "iter003_xx", "KEEP", "1"), 10, "corrupt", "unreadable");
  auto clean = run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--invalid-only"});
  ASSERT_EQ(clean.rc, 0) << clean.out << clean.err;
  EXPECT_FALSE(clean.doc["actions"][k_gpu + "/cuda/" + k_key + "/" + k_model].empty()) << clean.out;
  EXPECT_EQ(*croq::read_file(log), good);
  EXPECT_EQ(run_croq(root(), {"session", "validate", "--gpu", k_gpu, "--dsl", "cuda"}).rc, 0);
  EXPECT_EQ(store(root(), "iter003_xx", "KEEP", "1").rc, 0);
}

// An enforced task with records cannot be switched to advisory (where a typed or favourable figure
// would be stored beside the guarded ones and could become its best); one without records can.
TEST_F(VerbTest, AnEnforcedTaskWithRecordsStaysEnforced) {
  ASSERT_EQ(run_croq(root(), with_task({"protocol", "begin", "--mode", "enforced"})).rc, 0);
  ASSERT_EQ(run_croq(root(), with_task({"protocol", "begin", "--mode", "advisory"})).rc, 0) << "no records yet";
  ASSERT_EQ(store(root(), "iter000_cublas", "BASELINE", "100").rc, 0);
  ASSERT_EQ(run_croq(root(), with_task({"protocol", "begin", "--mode", "enforced"})).rc, 0);
  const fs::path protocol =
      root() / "tuning" / k_gpu / "cuda" / "logs" / k_key / k_model / "protocol.json";
  const std::string before = *croq::read_file(protocol);
  expect_error(run_croq(root(), with_task({"protocol", "begin", "--mode", "advisory", "--rounds", "8"})), 5, "refused",
               "cannot be made advisory");
  EXPECT_EQ(*croq::read_file(protocol), before);
  EXPECT_EQ(run_croq(root(), with_task({"protocol", "begin", "--mode", "enforced", "--rounds", "8"})).rc, 0);
  // A record stored under enforcement says so, and the ledger keeps the task enforced when
  // protocol.json is gone: neither a typed KEEP nor advisory mode gets in (before, deleting the file
  // made the task advisory). --extra cannot write the field.
  expect_error(store(root(), "iter001_xx", "COMPILE_FAIL", "", {"--round", "0", "--extra", R"({"protocol":"advisory"})"}), 2,
               "usage", "protocol");
  ASSERT_EQ(store(root(), "iter001_xx", "COMPILE_FAIL", "", {"--round", "0"}).rc, 0);
  const fs::path log = protocol.parent_path() / "idea-log.jsonl";
  EXPECT_NE(croq::read_file(log)->find(R"("protocol":"enforced")"), std::string::npos);
  fs::remove(protocol);
  expect_error(store(root(), "iter002_fake", "KEEP", "5", {"--round", "0"}), 5, "refused", "measurement");
  expect_error(run_croq(root(), with_task({"protocol", "begin", "--mode", "advisory"})), 5, "refused",
               "cannot be made advisory");
  EXPECT_FALSE(fs::exists(protocol));
  EXPECT_EQ(croq::read_file(log)->find("iter002_fake"), std::string::npos);
}

TEST_F(VerbTest, SessionCleanResetAllNeedsYesAndTakesNoTask) {
  seed();
  auto before = snapshot(root());
  expect_error(run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--reset-all"}), 2, "usage", "--yes");
  expect_error(run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda"}), 2, "usage");
  expect_error(run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--reset-all", "--invalid-only"}),
               2, "usage");
  // --reset-all takes the whole dsl: a shape key or model with it is refused, not ignored.
  expect_error(run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--reset-all", "--yes",
                                 "--shape-key", k_key}),
               2, "usage", "no --shape-key or --model");
  expect_error(run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--reset-all", "--yes", "--model",
                                 k_model}),
               2, "usage", "no --shape-key or --model");
  EXPECT_EQ(snapshot(root()), before);
  auto r = run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--reset-all", "--yes"});
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(root() / "tuning" / k_gpu / "cuda"));
  EXPECT_TRUE(fs::exists(fs::path(r.doc["moved_to"].get<std::string>()) / "logs" / k_key / k_model / "idea-log.jsonl"));
  expect_error(run_croq(root(), {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--reset-all", "--yes"}), 4,
               "not_found");
}

// ---- the activity trace ----

TEST_F(VerbTest, EveryVerbActingOnAnExistingTaskAppendsToTheActivityTrace) {
  seed();
  fs::path trace = task_dir(root(), "memory") / "activity.jsonl";
  auto count = [&] { return croq::split_lines(croq::read_file(trace).value_or("")).size(); };
  const size_t seeded = count();
  EXPECT_EQ(seeded, 4u) << "task init and three stores";
  fs::create_directories(task_dir(root(), "srcs"));
  croq::atomic_write(task_dir(root(), "srcs") / "iter003_bb.cu", "x\n");
  const std::vector<std::vector<std::string>> calls = {
      with_task({"next-iter", "--tag", "bb"}),
      with_task({"checkpoint", "write", "--iter", "iter003", "--bottleneck", "mixed", "--idea", "bb"}),
      with_task({"checkpoint", "read"}),
      with_task({"checkpoint", "verify", "--iter", "iter003"}),
      with_task({"attempt", "--tag", "bb", "--reason", "code_bug"}),
      with_task({"store-round", "--iter", "iter003_bb", "--decision", "KEEP", "--tflops", "1", "--bottleneck", "mixed",
                 "--idea", "bb"}),
      with_task({"resume"}),
      with_task({"reinforce"}),
      with_task({"task", "init"}),
      {"session", "validate", "--gpu", k_gpu, "--dsl", "cuda"},
      {"session", "clean", "--gpu", k_gpu, "--dsl", "cuda", "--invalid-only"},
      with_task({"store-round", "--iter", "iter003_bb", "--decision", "KEEP", "--tflops", "1", "--bottleneck", "mixed",
                 "--idea", "refused: a duplicate"}),
  };
  const char* names[] = {"next-iter", "checkpoint write", "checkpoint read", "checkpoint verify", "attempt", "store-round",
                         "resume",    "reinforce",        "task init",       "session validate",  "session clean",
                         "store-round"};
  for (size_t i = 0; i < calls.size(); ++i) {
    auto r = run_croq(root(), calls[i]);
    ASSERT_EQ(count(), seeded + i + 1) << names[i] << ": " << r.out << r.err;
    auto last = croq::try_parse_json(croq::split_lines(*croq::read_file(trace)).back());
    ASSERT_TRUE(last);
    EXPECT_EQ((*last)["verb"], names[i]);
    EXPECT_EQ((*last)["exit_code"], r.rc);
    EXPECT_TRUE((*last)["argv"].is_array());
    EXPECT_FALSE((*last)["timestamp"].get<std::string>().empty());
  }
  EXPECT_EQ(croq::try_parse_json(croq::split_lines(*croq::read_file(trace)).back()).value()["exit_code"], 9);
  // A call on a task that does not exist creates nothing.
  run_croq(root(), with_task({"resume"}, "matmul_f16_64x64x64"));
  EXPECT_FALSE(fs::exists(task_dir(root(), "memory", "matmul_f16_64x64x64")));
}

}  // namespace
