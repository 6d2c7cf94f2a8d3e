// Session state from the files: the resume JSON with its exact-match guard, the reinforce line,
// and session validate / clean.
#include <gtest/gtest.h>

#include <map>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/session/maintenance.hpp"
#include "croq/session/resume.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;
constexpr std::chrono::milliseconds k_wait{5000};
const char* k_gpu = "sm90_NVIDIA_H200";

class SessionTest : public ::testing::Test {
 protected:
  SessionTest() : ws(dir.path()) {}

  TaskRef task_of(const std::string& key, const std::string& model = "opus-4") { return make_task(k_gpu, "cuda", key, model); }
  void store(const TaskRef& t, const std::string& kernel, const std::string& decision, std::optional<double> tflops,
             std::optional<int> round = std::nullopt) {
    Ledger ledger(ws, t);
    StoreRequest q;
    q.iter = q.kernel = kernel;
    q.decision = decision;
    q.tflops = tflops;
    q.bottleneck = decision == "BASELINE" ? "" : "compute_bound";
    q.idea = "idea " + kernel;
    q.round = round;
    store_round(ledger, q, k_wait);
  }
  void source(const TaskRef& t, const std::string& name, const std::string& text = "// kernel\n") {
    fs::path p = ws.kind_dir(t, ArtifactKind::srcs) / name;
    ensure_dir(p.parent_path());
    atomic_write(p, text);
  }
  void seed_session(const TaskRef& t) {
    store(t, "iter000_cublas", "BASELINE", 600.0);
    store(t, "iter001_draft", "KEEP", 300.0, 0);
    store(t, "iter002_stages4", "KEEP", 420.0);
    store(t, "iter003_bk64", "DISCARD", 410.0);
    store(t, "iter004_tma", "COMPILE_FAIL", std::nullopt);
    source(t, "iter001_draft.cu");
    source(t, "iter002_stages4.cu");
    source(t, "iter003_bk64.cu");
    source(t, "attemptAAAA_tma.cu");
  }

  TempDir dir;
  Workspace ws;
};

TEST_F(SessionTest, ResumeReportsTheSeedFields) {
  TaskRef t = task_of("matmul_bf16fp32_16384x16384x512");
  ensure_task_config(ws, t, "uid123");
  seed_session(t);
  json j = resume_state(ws, t);
  EXPECT_EQ(j["dsl"], "cuda");
  EXPECT_EQ(j["shape_key"], "matmul_bf16fp32_16384x16384x512");
  EXPECT_EQ(j["current_best_tflops"], 420.0);
  EXPECT_EQ(j["current_best_kernel"], "iter002_stages4");
  EXPECT_EQ(j["current_best_iter"], "iter002");
  EXPECT_EQ(j["last_round"], 3);
  EXPECT_EQ(j["last_iter"], "attemptAAAA_tma");  // the full name of the last stored kernel, as the seeds report it
  EXPECT_EQ(j["last_decision"], "COMPILE_FAIL");
  EXPECT_EQ(j["last_bottleneck"], "compute_bound");
  EXPECT_EQ(j["next_iter_number"], 4);
  EXPECT_EQ(j["src_count"], 3);
  EXPECT_TRUE(j["open_checkpoint"].is_null());
  EXPECT_EQ(j["memory_files_ok"], true);
  EXPECT_TRUE(j["warnings"].empty()) << j["warnings"].dump();
  EXPECT_EQ(j["task_uid"], "uid123");
  EXPECT_EQ(j["baseline_tflops"], 600.0);
  EXPECT_EQ(j["pct_of_baseline"], 70.0);
  EXPECT_EQ(j["fresh_start"], false);
  EXPECT_EQ(j["records"], 5);
  EXPECT_EQ(j["discard_streak"], 1);
}

TEST_F(SessionTest, ResumeOfAPermutedKeyIsAFreshStartNamingTheOther) {
  TaskRef existing = task_of("matmul_bf16fp32_512x16384x16384");
  seed_session(existing);
  TaskRef asked = task_of("matmul_bf16fp32_16384x16384x512");
  json j = resume_state(ws, asked);
  EXPECT_EQ(j["fresh_start"], true);
  EXPECT_TRUE(j["current_best_kernel"].is_null());
  EXPECT_EQ(j["last_round"], 0);
  EXPECT_EQ(j["next_iter_number"], 1);
  EXPECT_EQ(j["src_count"], 0);
  ASSERT_EQ(j["similar_keys"].size(), 1u);
  EXPECT_EQ(j["similar_keys"][0], "matmul_bf16fp32_512x16384x16384");
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_NE(j["warnings"][0].get<std::string>().find("not resumed"), std::string::npos);
  // Nothing was created for the asked key.
  EXPECT_FALSE(fs::exists(ws.kind_dir(asked, ArtifactKind::logs)));
  // The exact key resumes.
  EXPECT_EQ(resume_state(ws, existing)["current_best_kernel"], "iter002_stages4");
}

TEST_F(SessionTest, ResumeShowsAnOpenCheckpointAndWarnings) {
  TaskRef t = task_of("matmul_f16_1024x1024x1024");
  seed_session(t);
  Checkpoint cp;
  cp.iter = "iter004";
  cp.idea = "swizzle";
  cp.bottleneck = "memory_bound";
  write_checkpoint(ws, t, cp);
  fs::remove(ws.results_tsv(t));
  json j = resume_state(ws, t);
  ASSERT_TRUE(j["open_checkpoint"].is_object());
  EXPECT_EQ(j["open_checkpoint"]["iter"], "iter004");
  EXPECT_EQ(j["memory_files_ok"], false);
  EXPECT_FALSE(j["warnings"].empty());
}

TEST_F(SessionTest, ResumeOfALegacyTsvOnlyTask) {
  TaskRef t = task_of("matmul_f16_1024x1024x1024");
  ensure_dir(ws.kind_dir(t, ArtifactKind::logs));
  atomic_write(ws.results_tsv(t),
               "iter\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\n"
               "iter000\titer000_cublas\t600\tBASELINE\tn/a\tcuBLAS\n"
               "iter001\titer001_draft\t300\tKEEP\tmemory_bound\tstart\n");
  json j = resume_state(ws, t);
  EXPECT_EQ(j["current_best_kernel"], "iter001_draft");
  EXPECT_EQ(j["next_iter_number"], 2);
  EXPECT_EQ(j["memory_files_ok"], false);
  EXPECT_FALSE(j["warnings"].empty());
}

TEST_F(SessionTest, ResumeToleratesATornLineAndDamagedDocuments) {
  TaskRef t = task_of("matmul_f16_1024x1024x1024");
  seed_session(t);
  auto text = *read_file(ws.idea_log(t));
  atomic_write(ws.idea_log(t), text + "{\"round\":4,\"ite");
  atomic_write(ws.checkpoint(t), "{\"schema\":\"croq-checkpoint-v1\",\"status\":");
  atomic_write(ws.reservations(t), "\x01\x02");
  json j = resume_state(ws, t);
  EXPECT_EQ(j["current_best_kernel"], "iter002_stages4");
  std::string all = j["warnings"].dump();
  EXPECT_NE(all.find("torn"), std::string::npos) << all;
  EXPECT_NE(all.find("checkpoint"), std::string::npos) << all;
  EXPECT_NE(all.find("reservations"), std::string::npos) << all;
}

TEST_F(SessionTest, ReinforceLine) {
  TaskRef t = task_of("matmul_f16_1024x1024x1024");
  EXPECT_THROW(reinforce(ws, t), Error);
  seed_session(t);
  Reinforce r = reinforce(ws, t);
  EXPECT_EQ(r.line.rfind("[reinforce] round 3 | best iter002_stages4 420.00 TFLOPS (70.0% of baseline 600.00)", 0), 0u)
      << r.line;
  EXPECT_NE(r.line.find("next iter004"), std::string::npos);
  EXPECT_NE(r.line.find(".claude/skills/croq-dsl-cuda/SKILL.md"), std::string::npos);
  EXPECT_EQ(r.doc["next_round"], 4);
}

TEST_F(SessionTest, ValidatePassesOnAHealthySession) {
  TaskRef t = task_of("matmul_f16_1024x1024x1024");
  ensure_task_config(ws, t, "uid");
  seed_session(t);
  TaskValidation v = validate_task(ws, t);
  EXPECT_TRUE(v.errors.empty()) << v.to_json().dump();
  EXPECT_TRUE(v.warnings.empty()) << v.to_json().dump();
  EXPECT_EQ(v.to_json()["pass"], true);
}

TEST_F(SessionTest, ValidateFindsDamageAndCleanRepairsIt) {
  TaskRef t = task_of("matmul_f16_1024x1024x1024");
  ensure_task_config(ws, t, "uid");
  seed_session(t);
  const std::string good = *read_file(ws.idea_log(t));
  auto lines = split_lines(good);
  // A bad line, a repeated iteration, a torn tail; a lagging TSV; junk reservations; a temp file
  // left by a dead process; a truncated checkpoint; an unreadable attempt-log line.
  atomic_write(ws.idea_log(t), good + "not json at all\n" + lines[2] + "\n" + "{\"round\":9,");
  atomic_write(ws.reservations(t), "junk");
  atomic_write(ws.checkpoint(t), "{\"schema\":\"croq-checkpoint-v1\",");
  atomic_write(ws.attempt_log(t), "{\"attempt\":\"attemptAAAA\"}\n{broken\n");
  const fs::path stale = ws.kind_dir(t, ArtifactKind::logs) / "results.tsv.tmp.999999999.abc";
  atomic_write(stale, "partial");
  TaskValidation v = validate_task(ws, t);
  std::string all = v.to_json().dump();
  EXPECT_FALSE(v.errors.empty());
  EXPECT_NE(all.find("line 6"), std::string::npos) << all;
  EXPECT_NE(all.find("iter002 is stored more than once"), std::string::npos) << all;
  EXPECT_NE(all.find("round 1 is stored more than once"), std::string::npos) << all;
  EXPECT_NE(all.find("torn"), std::string::npos) << all;
  EXPECT_NE(all.find("reservations.json"), std::string::npos) << all;
  EXPECT_NE(all.find("current_idea.json"), std::string::npos) << all;
  EXPECT_NE(all.find("attempt-log.jsonl line 2"), std::string::npos) << all;
  EXPECT_NE(all.find("results.tsv.tmp.999999999.abc"), std::string::npos) << all;

  auto actions = clean_task_invalid(ws, t, k_wait);
  EXPECT_FALSE(actions.empty());
  EXPECT_EQ(*read_file(ws.idea_log(t)), good) << "exactly the good lines are kept, verbatim";
  TaskValidation after = validate_task(ws, t);
  EXPECT_TRUE(after.errors.empty()) << after.to_json().dump();
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(ws.reservations(t)));
  EXPECT_FALSE(fs::exists(ws.checkpoint(t)));
  // Nothing was deleted outright: the damaged files are kept aside.
  int backups = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    if (e.path().filename().string().find(".bak.") != std::string::npos) ++backups;
  }
  EXPECT_GE(backups, 4);
  // The repaired ledger takes stores again.
  store(t, "iter004_next", "KEEP", 430.0);
  EXPECT_EQ(resume_state(ws, t)["current_best_kernel"], "iter004_next");
  // A second clean has nothing left to do but the index.
  for (const auto& a : clean_task_invalid(ws, t, k_wait)) EXPECT_NE(a.find("index"), std::string::npos) << a;
}

TEST_F(SessionTest, CleanCompletesALaggingTsvWithoutBackup) {
  TaskRef t = task_of("matmul_f16_1024x1024x1024");
  seed_session(t);
  std::string tsv = *read_file(ws.results_tsv(t));
  tsv.resize(tsv.rfind("attemptAAAA"));
  atomic_write(ws.results_tsv(t), tsv);
  EXPECT_FALSE(validate_task(ws, t).errors.empty());
  clean_task_invalid(ws, t, k_wait);
  EXPECT_TRUE(validate_task(ws, t).errors.empty());
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".bak."), std::string::npos) << e.path();
  }
}

TEST_F(SessionTest, CleanImportsALegacyTsv) {
  TaskRef t = task_of("matmul_f16_1024x1024x1024");
  ensure_dir(ws.kind_dir(t, ArtifactKind::logs));
  atomic_write(ws.results_tsv(t), "iter001_draft\t300\tKEEP\tmemory_bound\tstart\n");
  clean_task_invalid(ws, t, k_wait);
  JsonlParse p = Ledger(ws, t).read_all();
  ASSERT_EQ(p.records.size(), 1u);
  EXPECT_EQ(p.records[0].kernel, "iter001_draft");
  EXPECT_EQ(p.records[0].extra["source"], "tsv-import");
}

TEST_F(SessionTest, ResetMovesTheTreeAsideNeverDeletes) {
  TaskRef t = task_of("matmul_f16_1024x1024x1024");
  seed_session(t);
  fs::path moved = reset_dsl_tree(ws, k_gpu, "cuda");
  EXPECT_FALSE(fs::exists(ws.dsl_dir(k_gpu, "cuda")));
  EXPECT_TRUE(fs::exists(moved / "logs" / "matmul_f16_1024x1024x1024" / "opus-4" / "idea-log.jsonl"));
  EXPECT_NE(moved.string().find("/tuning/.trash/"), std::string::npos);
  try {
    reset_dsl_tree(ws, k_gpu, "cuda");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
}

TEST_F(SessionTest, ListTasksFindsEveryLedger) {
  seed_session(task_of("matmul_f16_1024x1024x1024"));
  seed_session(task_of("matmul_f16_1024x1024x1024", "gpt-5"));
  ensure_dir(ws.dsl_dir(k_gpu, "cuda") / "logs" / "not a key" / "x");
  auto tasks = ws.list_tasks(k_gpu, "cuda");
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].model, "gpt-5");
  EXPECT_EQ(tasks[1].model, "opus-4");
}

}  // namespace
}  // namespace croq
