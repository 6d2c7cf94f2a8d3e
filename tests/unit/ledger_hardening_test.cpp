// Issue 25, points 5 and 6 (records): a task cannot be made unusable, and its records cannot be
// bent. Each test is an attack as it was tried: ids that use up a task (iter999999, attemptZZZZ,
// a far-off round, reservations out of range), a doctored .ledger-index.json, control bytes in
// results.tsv, --extra fields that change what a record says, and symbolic or hard links that
// send the ledger's writes out of the workspace. Every refused write leaves the files as they were,
// and `session clean --invalid-only` (the repair) gets the task out of every state it reports.
#include <gtest/gtest.h>

#include <unistd.h>

#include <map>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/session/maintenance.hpp"
#include "croq/session/resume.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/workspace/secret.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;
constexpr std::chrono::milliseconds k_wait{5000};

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().filename() != ".croq.lock") {
      out[fs::relative(e.path(), dir).string()] = read_file(e.path()).value_or("");
    }
  }
  return out;
}

// The error a call throws (its code and message), or ok.
struct Thrown {
  ExitCode code = ExitCode::ok;
  std::string message;
};
Thrown thrown(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {e.code(), std::string(e.what()) + " | " + e.hint()};
  }
  return {};
}

class Hardening : public ::testing::Test {
 protected:
  Hardening()
      : ws(dir.path()), task(make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16fp32_256x256x256", "test")), ledger(ws, task) {}

  StoreRequest request(const std::string& kernel, const std::string& decision, double tflops = 100.0) {
    StoreRequest q;
    q.iter = kernel;
    q.kernel = kernel;
    q.decision = decision;
    if (decision == "BASELINE" || decision == "KEEP" || decision == "DISCARD") q.tflops = tflops;
    q.bottleneck = decision == "BASELINE" ? "" : "memory_bound";
    q.idea = "idea for " + kernel;
    return q;
  }
  StoreRoundResult store(const std::string& kernel, const std::string& decision, double tflops = 100.0) {
    return store_round(ledger, request(kernel, decision, tflops), k_wait);
  }
  void prepared() {
    store("iter000_cublas", "BASELINE", 600);
    store("iter001_draft", "KEEP", 100);
  }
  fs::path logs() const { return ws.kind_dir(task, ArtifactKind::logs); }
  // Appends a record line by hand, as an older croq or an editor could have left it.
  void append_by_hand(const json& record) {
    std::string text = read_file(ws.idea_log(task)).value_or("");
    atomic_write(ws.idea_log(task), text + dump_compact(record) + "\n");
  }
  std::vector<std::string> repair() { return clean_task_invalid(ws, task, k_wait); }
  TempDir dir;
  TempDir outside;
  Workspace ws;
  TaskRef task;
  Ledger ledger;
};

// ---- point 5: ids that would use up a task ----

TEST_F(Hardening, AnIterationNumberFarPastTheNextIsRefusedAndChangesNothing) {
  prepared();
  const auto before = snapshot(dir.path());
  Thrown t = thrown([&] { store("iter999999_jump", "DISCARD"); });
  EXPECT_EQ(t.code, ExitCode::usage);
  EXPECT_NE(t.message.find("iter999999 skips 999997 unused iteration numbers"), std::string::npos) << t.message;
  EXPECT_EQ(snapshot(dir.path()), before);
  EXPECT_EQ(ledger.peek_next_iter(), 2);
  // A small skip is still allowed (the seeds: do not skip *large* ranges).
  EXPECT_EQ(thrown([&] { store("iter050_ok", "DISCARD"); }).code, ExitCode::ok);
}

TEST_F(Hardening, AnAttemptIdFarOutOfSequenceIsRefusedEvenInAnEnforcedTask) {
  prepared();
  atomic_write(logs() / "protocol.json", R"({"schema":"croq-protocol-v1","mode":"enforced"})");
  const auto before = snapshot(dir.path());
  Thrown t = thrown([&] { store("attemptZZZZ_end", "COMPILE_FAIL"); });
  EXPECT_EQ(t.code, ExitCode::usage);
  EXPECT_NE(t.message.find("attemptZZZZ skips"), std::string::npos) << t.message;
  EXPECT_EQ(snapshot(dir.path()), before);
  EXPECT_EQ(ledger.peek_next_attempt(), 0);
  EXPECT_EQ(thrown([&] { store("attemptAAAB_ok", "COMPILE_FAIL"); }).code, ExitCode::ok);
}

TEST_F(Hardening, ARoundFarPastTheNextIsRefused) {
  prepared();
  StoreRequest q = request("iter002_far", "DISCARD");
  q.round = 1000000;
  Thrown t = thrown([&] { store_round(ledger, q, k_wait); });
  EXPECT_EQ(t.code, ExitCode::usage);
  EXPECT_NE(t.message.find("round 1000000 skips"), std::string::npos) << t.message;
  q.round = 1000001;
  EXPECT_EQ(thrown([&] { store_round(ledger, q, k_wait); }).code, ExitCode::usage) << "past the format's range";
  // A record read with a round that does not fit is unreadable, not cut to 32 bits.
  auto r = RoundRecord::from_json(json::parse(R"({"round":99999999999,"iter":"iter002","kernel":"iter002_xx","decision":"KEEP"})"));
  EXPECT_FALSE(r.has_value());
}

// What an older croq let through: iter999999 and attemptZZZZ stored. The next ids are past the
// format's range; next-iter says so clearly, validate names the records, repair sets them aside.
TEST_F(Hardening, RepairSetsAsideRecordsThatUsedUpTheIds) {
  prepared();
  append_by_hand({{"round", 1}, {"iter", "iter999999"}, {"kernel", "iter999999_jump"}, {"tflops", 1},
                  {"decision", "DISCARD"}, {"bottleneck", "memory_bound"}, {"idea", "x"}});
  append_by_hand({{"round", 2}, {"iter", "attemptZZZZ"}, {"kernel", "attemptZZZZ_end"}, {"tflops", 0},
                  {"decision", "COMPILE_FAIL"}, {"bottleneck", "memory_bound"}, {"idea", "x"}});
  Thrown t = thrown([&] { ledger.reserve_iter(k_wait); });
  EXPECT_EQ(t.code, ExitCode::corrupt);
  EXPECT_NE(t.message.find("every iteration number"), std::string::npos) << t.message;
  EXPECT_NE(t.message.find("session clean --invalid-only"), std::string::npos) << t.message;
  EXPECT_EQ(thrown([&] { ledger.reserve_attempt(k_wait); }).code, ExitCode::corrupt);

  TaskValidation v = validate_task(ws, task);
  ASSERT_GE(v.errors.size(), 2u) << v.to_json().dump();
  EXPECT_NE(v.to_json().dump().find("iter999999_jump"), std::string::npos);
  EXPECT_NE(v.to_json().dump().find("attemptZZZZ_end"), std::string::npos);

  auto actions = repair();
  ASSERT_FALSE(actions.empty());
  EXPECT_NE(actions.front().find("2 record(s) far out of sequence (iter999999_jump, attemptZZZZ_end)"), std::string::npos)
      << actions.front();
  EXPECT_EQ(ledger.reserve_iter(k_wait), 2);
  EXPECT_EQ(ledger.reserve_attempt(k_wait), 0);
  EXPECT_TRUE(validate_task(ws, task).errors.empty()) << validate_task(ws, task).to_json().dump();
  // Nothing was deleted: the old file is kept beside the repaired one.
  bool backup = false;
  for (const auto& e : fs::directory_iterator(logs())) {
    backup = backup || (e.path().filename().string().rfind("idea-log.jsonl.bak.", 0) == 0 &&
                        read_file(e.path())->find("iter999999_jump") != std::string::npos);
  }
  EXPECT_TRUE(backup);
}

TEST_F(Hardening, ReservationsOutOfRangeAreRefusedAndRepaired) {
  prepared();
  atomic_write(ws.reservations(task), R"({"schema":"croq-reservations-v1","live_iters":[[0,99999999999]],"max_attempt":-1})");
  Thrown t = thrown([&] { ledger.reserve_iter(k_wait); });
  EXPECT_EQ(t.code, ExitCode::corrupt);
  EXPECT_NE(t.message.find("99999999999"), std::string::npos) << t.message;
  atomic_write(ws.reservations(task), R"({"schema":"croq-reservations-v1","live_iters":[],"max_attempt":99999999999})");
  t = thrown([&] { ledger.reserve_attempt(k_wait); });
  EXPECT_EQ(t.code, ExitCode::corrupt);
  EXPECT_NE(t.message.find("max_attempt"), std::string::npos) << t.message;
  repair();
  EXPECT_EQ(ledger.reserve_iter(k_wait), 2);

  // In range but far out of sequence: the task would be used up; repair drops those ids.
  atomic_write(ws.reservations(task),
               R"({"schema":"croq-reservations-v1","live_iters":[[2,2],[999999,999999]],"max_attempt":456975})");
  EXPECT_EQ(thrown([&] { ledger.reserve_iter(k_wait); }).code, ExitCode::corrupt);
  EXPECT_EQ(thrown([&] { ledger.reserve_attempt(k_wait); }).code, ExitCode::corrupt);
  EXPECT_FALSE(validate_task(ws, task).errors.empty());
  repair();
  auto res = ledger.reservations();
  EXPECT_TRUE(res.live_iters.contains(2)) << "a reservation in sequence is kept";
  EXPECT_FALSE(res.live_iters.contains(999999));
  EXPECT_EQ(res.max_attempt, -1);
  EXPECT_EQ(ledger.reserve_iter(k_wait), 3);
  EXPECT_EQ(ledger.reserve_attempt(k_wait), 0);
}

// ---- point 5: the index is a cache, never trusted over the records without a check ----

TEST_F(Hardening, ADoctoredIndexIsIgnoredAndTheRecordsDecide) {
  prepared();
  store("iter002_real", "KEEP", 150);
  (void)ledger.index();
  ASSERT_TRUE(ledger.read_index()) << "croq's own index carries a valid MAC";
  json idx = json::parse(*read_file(ws.ledger_index(task)));
  ASSERT_TRUE(idx.contains("mac"));
  // The attack: signature fields (bytes, inode, mtime, head/tail signatures, mac) kept, the fold
  // edited — a best that is not in the ledger, and an iteration set past 32 bits.
  idx["best"]["kernel"] = "iter777_fake";
  idx["best"]["iter"] = "iter777";
  idx["best"]["tflops"] = 9999.0;
  idx["iters"] = json::parse("[[0,99999999999]]");
  atomic_write(ws.ledger_index(task), dump_compact(idx) + "\n");
  EXPECT_FALSE(ledger.read_index());
  LedgerIndex now = ledger.index();
  ASSERT_TRUE(now.best);
  EXPECT_EQ(now.best->kernel, "iter002_real");
  json resume = resume_state(ws, task);
  EXPECT_EQ(resume["current_best_kernel"], "iter002_real");
  EXPECT_EQ(resume["next_iter_number"], 3) << "not 1215752192 (99999999999 cut to 32 bits)";
  EXPECT_EQ(ledger.peek_next_iter(), 3);
  // The rebuilt index is trusted again.
  EXPECT_TRUE(ledger.read_index());
}

TEST_F(Hardening, AnIndexWithoutItsMacOrFromAnotherTaskIsNotTrusted) {
  prepared();
  (void)ledger.index();
  json idx = json::parse(*read_file(ws.ledger_index(task)));
  idx.erase("mac");
  atomic_write(ws.ledger_index(task), dump_compact(idx) + "\n");
  EXPECT_FALSE(ledger.read_index());
  EXPECT_NE(validate_task(ws, task).to_json().dump().find("fails its check"), std::string::npos);
  // Another task's valid index, copied over.
  TaskRef other = make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16fp32_256x256x256", "other");
  Ledger l2(ws, other);
  store_round(l2, request("iter000_cublas", "BASELINE", 1), k_wait);
  (void)l2.index();
  fs::copy_file(ws.ledger_index(other), ws.ledger_index(task), fs::copy_options::overwrite_existing);
  EXPECT_FALSE(ledger.read_index());
  EXPECT_EQ(ledger.index().best->kernel, "iter001_draft");
  // The key file is private to its user.
  struct stat st{};
  ASSERT_EQ(::stat(workspace_key_path(ws).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);
}

// ---- point 6: control bytes, --extra, links ----

TEST_F(Hardening, ControlBytesNeverReachResultsTsvRaw) {
  store("iter000_cublas", "BASELINE", 600);
  const std::string idea = std::string("red \x1b[31mALERT\x1b[0m bell\x07 nul-free \x01\x7f csi \xc2\x9b" "2J tab\tnl\n end");
  StoreRequest q = request("iter001_xx", "KEEP");
  q.idea = idea;
  store_round(ledger, q, k_wait);
  const std::string tsv = *read_file(ws.results_tsv(task));
  for (size_t i = 0; i < tsv.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(tsv[i]);
    EXPECT_FALSE((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) << "raw control byte " << int(c) << " at " << i;
    EXPECT_FALSE(c == 0xc2 && i + 1 < tsv.size() && static_cast<unsigned char>(tsv[i + 1]) == 0x9b) << "raw CSI";
  }
  EXPECT_NE(tsv.find("\\x1b[31mALERT"), std::string::npos) << tsv;
  EXPECT_NE(tsv.find("\\xc2\\x9b2J"), std::string::npos) << tsv;
  // The view still reads back to the same idea, and is in step with the records.
  std::vector<std::string> warnings;
  auto rows = parse_results_tsv(tsv, &warnings);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].idea, idea);
  EXPECT_TRUE(validate_task(ws, task).errors.empty()) << validate_task(ws, task).to_json().dump();
}

TEST_F(Hardening, ExtraFieldsCannotOverrideCoreFields) {
  for (const char* field : {"schema", "planned_iter", "source", "measurement", "round", "tflops", "decision", "task_uid"}) {
    Thrown t = thrown([&] { check_extra_fields(json{{field, "x"}}); });
    EXPECT_EQ(t.code, ExitCode::usage) << field;
    EXPECT_NE(t.message.find(field), std::string::npos) << t.message;
  }
  EXPECT_EQ(thrown([&] { check_extra_fields(json{{"harness_ms", 3}, {"note", "mine"}}); }).code, ExitCode::ok);
  for (const char* field : {"attempt", "kernel", "planned_iter", "timestamp"}) {
    EXPECT_EQ(thrown([&] { check_attempt_extra_fields(json{{field, "x"}}); }).code, ExitCode::usage) << field;
  }
  // The plan's fields come from the checkpoint: an --extra base that differs is refused.
  prepared();
  Checkpoint cp;
  cp.iter = "iter002";
  cp.base = "iter001_draft";
  cp.bottleneck = "memory_bound";
  cp.idea = "plan";
  cp.extra = {{"params", {{"BM", "128"}}}};
  write_checkpoint(ws, task, cp);
  const auto before = snapshot(dir.path());
  StoreRequest q = request("iter002_xx", "DISCARD");
  q.extra = {{"base", "iter000_cublas"}};
  Thrown t = thrown([&] { store_round(ledger, q, k_wait); });
  EXPECT_EQ(t.code, ExitCode::usage);
  EXPECT_NE(t.message.find("contradicts the plan of iter002"), std::string::npos) << t.message;
  q.extra = {{"params", {{"BM", "64"}}}};
  EXPECT_EQ(thrown([&] { store_round(ledger, q, k_wait); }).code, ExitCode::usage);
  EXPECT_EQ(snapshot(dir.path()), before);
  q.extra = {{"base", "iter001_draft"}, {"harness_ms", 2}};  // agreeing with the plan is fine
  auto r = store_round(ledger, q, k_wait);
  EXPECT_EQ(r.outcome.record.extra["base"], "iter001_draft");
  EXPECT_EQ(r.outcome.record.extra["params"], json({{"BM", "128"}}));
}

TEST_F(Hardening, LedgerAppendsDoNotFollowASymlinkedFile) {
  prepared();
  const fs::path victim = outside / "victim.txt";
  atomic_write(victim, "precious\n");
  const auto log = ws.idea_log(task);
  fs::path moved = log.string() + ".real";
  fs::rename(log, moved);
  fs::create_symlink(victim, log);
  Thrown t = thrown([&] { store("iter002_xx", "DISCARD"); });
  EXPECT_EQ(t.code, ExitCode::corrupt);
  EXPECT_NE(t.message.find("symbolic link"), std::string::npos) << t.message;
  EXPECT_EQ(*read_file(victim), "precious\n");
  // The other files of the task: results.tsv, attempt-log, evidence and the lock file alike.
  fs::remove(log);
  fs::rename(moved, log);
  fs::rename(ws.results_tsv(task), outside / "results.tsv");
  fs::create_symlink(victim, ws.results_tsv(task));
  EXPECT_EQ(thrown([&] { store("iter002_xx", "DISCARD"); }).code, ExitCode::corrupt);
  EXPECT_EQ(*read_file(victim), "precious\n");
  fs::remove(ws.results_tsv(task));
  fs::create_symlink(victim, ws.attempt_log(task));
  EXPECT_EQ(thrown([&] { ledger.append_attempt(json::object(), "tag", k_wait); }).code, ExitCode::corrupt);
  fs::remove(ws.task_lock(task));
  fs::create_symlink(victim, ws.task_lock(task));
  EXPECT_EQ(thrown([&] { store("iter002_xx", "DISCARD"); }).code, ExitCode::corrupt);
  EXPECT_EQ(*read_file(victim), "precious\n") << "the lock holder's note would have overwritten it";
}

TEST_F(Hardening, LedgerWritesDoNotLeaveTheWorkspaceThroughASymlinkedFolder) {
  // The task's logs folder is a link to a folder outside the workspace.
  const fs::path target = outside / "logs";
  fs::create_directories(target);
  fs::create_directories(logs().parent_path());
  fs::create_symlink(target, logs());
  Thrown t = thrown([&] { store("iter000_cublas", "BASELINE", 600); });
  EXPECT_EQ(t.code, ExitCode::corrupt);
  EXPECT_NE(t.message.find("symbolic link"), std::string::npos) << t.message;
  EXPECT_TRUE(fs::is_empty(target)) << "nothing may be written outside the workspace";
  // A link higher up (the dsl folder) is caught as well.
  fs::remove(logs());
  const fs::path dsl = ws.dsl_dir(task.gpu, task.dsl);
  fs::rename(dsl, outside / "dsl");
  fs::create_symlink(outside / "dsl", dsl);
  EXPECT_EQ(thrown([&] { store("iter000_cublas", "BASELINE", 600); }).code, ExitCode::corrupt);
  EXPECT_FALSE(fs::exists(outside / "dsl" / "logs" / task.shape.text / task.model));
  // And a path outside the root is refused outright.
  EXPECT_EQ(thrown([&] { append_line(outside / "x.jsonl", "{}", true, {}, ws.root()); }).code, ExitCode::usage);
}

TEST_F(Hardening, LedgerAppendsRefuseAFileWithAnotherHardLink) {
  prepared();
  const fs::path victim = outside / "victim.jsonl";
  atomic_write(victim, "precious\n");
  fs::remove(ws.attempt_log(task));
  ASSERT_EQ(::link(victim.c_str(), ws.attempt_log(task).c_str()), 0) << "same filesystem expected for the test";
  Thrown t = thrown([&] { ledger.append_attempt(json::object(), "tag", k_wait); });
  EXPECT_EQ(t.code, ExitCode::corrupt);
  EXPECT_NE(t.message.find("hard links"), std::string::npos) << t.message;
  EXPECT_EQ(*read_file(victim), "precious\n");
}

}  // namespace
}  // namespace croq
