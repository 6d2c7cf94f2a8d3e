// The task ledger: stores, the incremental index, reservations, conflicts, damaged and legacy
// ledgers, and the request validation of store_round.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <limits>
#include <map>
#include <thread>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/util/hash.hpp"
#include "croq/ledger/store.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;
constexpr std::chrono::milliseconds k_wait{5000};

// Every file under `dir` with its bytes: "files unchanged" means this map is equal.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    // The lock file holds only the name of its last holder.
    if (e.is_regular_file() && e.path().filename() != ".croq.lock") {
      out[fs::relative(e.path(), dir).string()] = read_file(e.path()).value_or("");
    }
  }
  return out;
}

ExitCode code_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return ExitCode::ok;
}

class LedgerTest : public ::testing::Test {
 protected:
  LedgerTest()
      : ws(dir.path()), task(make_task("sm90_NVIDIA_H200", "cuda", "matmul_f16fp32_256x256x256", "test")), ledger(ws, task) {}

  StoreRequest request(const std::string& kernel, const std::string& decision, std::optional<double> tflops = 100.0) {
    StoreRequest q;
    q.iter = kernel;
    q.kernel = kernel;
    q.decision = decision;
    q.tflops = tflops;
    q.bottleneck = decision == "BASELINE" ? "" : "memory_bound";
    q.idea = "idea for " + kernel;
    q.category = "tiling";
    return q;
  }
  StoreRoundResult store(const std::string& kernel, const std::string& decision, std::optional<double> tflops = 100.0) {
    return store_round(ledger, request(kernel, decision, tflops), k_wait);
  }
  fs::path logs() const { return ws.kind_dir(task, ArtifactKind::logs); }
  // The parts of an index that describe the records (not where or when it was computed).
  static json semantic(const LedgerIndex& idx) {
    json j = idx.to_json();
    for (const char* k : {"bytes", "inode", "mtime_ns", "head_sig", "tail_sig", "tsv_bytes", "tsv_mtime_ns", "tsv_rows"}) {
      j.erase(k);
    }
    return j;
  }
  void store_mixed_history() {
    store("iter000_cublas", "BASELINE", 600);
    store("iter001_draft", "KEEP", 100);
    store("iter002_stages4", "KEEP", 150);
    store("iter003_bk64", "DISCARD", 140);
    store("iter004_tma", "COMPILE_FAIL", std::nullopt);
    store("iter004_tma2", "KEEP", 210);
    store("iter005_swz", "DISCARD", 200);
    store("iter006_wide", "SEGFAULT", std::nullopt);
    store("iter006_narrow", "DISCARD", 190);
  }

  TempDir dir;
  Workspace ws;
  TaskRef task;
  Ledger ledger;
};

TEST_F(LedgerTest, StoreAppendsOneRecordAndOneTsvRow) {
  auto r = store("iter000_cublas", "BASELINE", 612.5);
  EXPECT_EQ(r.outcome.record.round, 0);
  EXPECT_EQ(r.outcome.record.kernel, "iter000_cublas");
  EXPECT_NE(r.line.find("[store_round] STORE complete"), std::string::npos);
  auto r1 = store("iter001_draft", "KEEP", 100);
  EXPECT_EQ(r1.outcome.record.round, 1);
  auto text = read_file(ws.idea_log(task));
  ASSERT_TRUE(text);
  EXPECT_EQ(split_lines(*text).size(), 2u);
  auto tsv = read_file(ws.results_tsv(task));
  ASSERT_TRUE(tsv);
  EXPECT_EQ(*tsv, std::string(k_tsv_header) + "\n" + "iter000\titer000_cublas\t612.50\tBASELINE\tn/a\tidea for iter000_cublas\n" +
                      "iter001\titer001_draft\t100.00\tKEEP\tmemory_bound\tidea for iter001_draft\n");
  JsonlParse p = ledger.read_all();
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_EQ(p.records[1].extra["schema"], "croq-round-v1");
  EXPECT_EQ(p.records[1].extra["source"], "reported");
  EXPECT_FALSE(p.records[1].timestamp.empty());
}

TEST_F(LedgerTest, IncrementalFoldEqualsFullFold) {
  store_mixed_history();
  LedgerIndex incremental = ledger.index();
  // Fold every record from scratch.
  LedgerIndex full;
  for (const auto& r : ledger.read_all().records) full.fold(r);
  EXPECT_EQ(semantic(incremental), semantic(full));
  EXPECT_EQ(incremental.records, 9);
  EXPECT_EQ(incremental.max_round, 8);
  ASSERT_TRUE(incremental.best);
  EXPECT_EQ(incremental.best->kernel, "iter004_tma2");
  ASSERT_TRUE(incremental.baseline);
  EXPECT_EQ(incremental.baseline->tflops, 600);
  EXPECT_EQ(incremental.discard_streak, 2);
  EXPECT_EQ(incremental.non_keep_streak, 3);
  EXPECT_EQ(incremental.decisions["DISCARD"], 3);
  EXPECT_EQ(dump_compact(incremental.iters.to_json()), "[[0,6]]");
  EXPECT_EQ(dump_compact(incremental.attempts.to_json()), "[[0,1]]");
  // The index on disk, extended one store at a time, says the same.
  auto on_disk = LedgerIndex::from_json(json::parse(*read_file(ws.ledger_index(task))));
  ASSERT_TRUE(on_disk);
  EXPECT_EQ(semantic(*on_disk), semantic(full));
}

TEST_F(LedgerTest, DeletingTheIndexLosesNothing) {
  store_mixed_history();
  json before = semantic(ledger.index());
  ASSERT_TRUE(fs::remove(ws.ledger_index(task)));
  EXPECT_EQ(semantic(ledger.index()), before);
  EXPECT_TRUE(fs::exists(ws.ledger_index(task))) << "a reader writes the rebuilt index back";
  // A junk index is a cache miss, not an error.
  atomic_write(ws.ledger_index(task), std::string("\x00\x01junk{", 7));
  EXPECT_EQ(semantic(ledger.index()), before);
  atomic_write(ws.ledger_index(task), R"({"schema":"croq-ledger-index-v1","bytes":999999999,"inode":1})");
  EXPECT_EQ(semantic(ledger.index()), before);
}

TEST_F(LedgerTest, ReplacedFileIsDetectedAndTheIndexRebuilt) {
  store_mixed_history();
  (void)ledger.index();
  // Replace the log by one with the first three records only (a new file: another inode).
  auto lines = split_lines(*read_file(ws.idea_log(task)));
  atomic_write(ws.idea_log(task), lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n");
  LedgerIndex idx = ledger.index();
  EXPECT_EQ(idx.records, 3);
  EXPECT_EQ(idx.best->kernel, "iter002_stages4");
  EXPECT_EQ(idx.max_round, 2);
}

TEST_F(LedgerTest, InPlaceRewriteIsDetectedAndTheIndexRebuilt) {
  store("iter001_draft", "KEEP", 100);
  store("iter002_stages4", "KEEP", 150);
  store("iter003_bk64", "KEEP", 160);
  (void)ledger.index();
  const fs::path log = ws.idea_log(task);
  std::string text = *read_file(log);
  // Same size, same inode, same first and last bytes: 150.0 becomes 950.0 in the middle record.
  auto at = text.find("\"tflops\":150.0");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 14, "\"tflops\":950.0");
  {
    std::FILE* f = std::fopen(log.c_str(), "r+");
    ASSERT_TRUE(f);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  // Coarse file clocks may give the rewrite the old time; make it visibly later.
  fs::last_write_time(log, fs::last_write_time(log) + std::chrono::seconds(2));
  LedgerIndex idx = ledger.index();
  ASSERT_TRUE(idx.best);
  EXPECT_EQ(idx.best->kernel, "iter002_stages4");
  EXPECT_EQ(idx.best->tflops, 950.0);

  // A rewrite that changes the bytes before the folded end is caught by their signature, even
  // when the clock shows no change.
  const auto when = fs::last_write_time(log);
  auto at2 = text.rfind("\"source\":\"reported\"");
  ASSERT_NE(at2, std::string::npos);
  text.replace(at2, 19, "\"source\":\"measured\"");
  {
    std::FILE* f = std::fopen(log.c_str(), "r+");
    ASSERT_TRUE(f);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  fs::last_write_time(log, when);
  EXPECT_EQ(ledger.index().last->source, "measured");
}

// A measured KEEP whose figure was edited in the log (it no longer matches its own measurement
// block) is not the best, and the index says why: status, reports and the monitor read the best
// from the index (before, they showed the edited figure).
TEST_F(LedgerTest, AnEditedMeasuredFigureIsNotTheBest) {
  StoreRequest first = request("iter001_draft", "KEEP", 100);
  first.source = "measured";
  first.extra["measurement"] = {{"tflops", 100.0}, {"file", "perf/x.json"}};
  store_round(ledger, first, k_wait);
  StoreRequest second = request("iter002_stages4", "KEEP", 150);
  second.source = "measured";
  second.extra["measurement"] = {{"tflops", 150.0}, {"file", "perf/y.json"}};
  store_round(ledger, second, k_wait);
  ASSERT_EQ(ledger.index().best->kernel, "iter002_stages4");
  const fs::path log = ws.idea_log(task);
  std::string text = *read_file(log);
  const auto at = text.find("\"tflops\":150.0");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 14, "\"tflops\":950.0");
  atomic_write(log, text, false);
  LedgerIndex idx = ledger.index();
  ASSERT_TRUE(idx.best);
  EXPECT_EQ(idx.best->kernel, "iter001_draft");
  ASSERT_FALSE(idx.warnings.empty());
  EXPECT_NE(idx.warnings.back().find("iter002_stages4's figure"), std::string::npos) << idx.warnings.back();
  EXPECT_NE(idx.warnings.back().find("says 950 TFLOPS"), std::string::npos) << idx.warnings.back();
}

// A figure edited in both places of a record (its TFLOPS and its measurement block) is checked
// against the measurement file the record names: while that file is there with the hash the record
// was stored with, its figure is the one that counts. Such a KEEP is not the best, such a baseline
// is no baseline (before, status showed 9.5 TFLOPS, 87x the baseline, for a kernel measured at
// 0.07). A file replaced since has nothing to compare with (`croq baseline --force` rewrites the
// baseline's file; croq writes a stored kernel's new measurement to a file of its own).
TEST_F(LedgerTest, AFigureEditedInBothPlacesIsCheckedAgainstItsMeasurementFile) {
  auto measured = [&](const std::string& kernel, const std::string& decision, double tflops, bool enforced) {
    const std::string file = "perf/measure_" + kernel + ".json";
    const std::string text = json{{"schema", "croq-measurement-v1"}, {"verdict", "PASS"}, {"tflops", tflops}}.dump();
    atomic_write(ws.root() / file, text, false);
    StoreRequest r = request(kernel, decision, tflops);
    r.source = "measured";
    r.extra["measurement"] = {{"tflops", tflops}, {"file", file}, {"sha256", sha256_hex(text)}};
    if (enforced) r.extra["protocol"] = "enforced";
    store_round(ledger, r, k_wait);
    return ws.root() / file;
  };
  measured("iter000_cublas", "BASELINE", 2.0, false);
  measured("iter001_draft", "KEEP", 3.0, false);
  const fs::path second = measured("iter002_stages4", "KEEP", 4.0, true);
  ASSERT_EQ(ledger.index().best->kernel, "iter002_stages4");
  ASSERT_TRUE(unbacked_figure(ws, ledger.read_all().records.back()) == std::nullopt);
  const fs::path log = ws.idea_log(task);
  const std::string stored = *read_file(log);
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string text = *read_file(log);
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
    atomic_write(log, text, false);
  };
  edit("\"tflops\":4.0", "\"tflops\":95.0");
  edit("\"tflops\":2.0", "\"tflops\":0.001");
  LedgerIndex idx = ledger.index();
  ASSERT_TRUE(idx.best);
  EXPECT_EQ(idx.best->kernel, "iter001_draft");
  EXPECT_FALSE(idx.baseline) << "an edited baseline gives no ratio";
  ASSERT_GE(idx.warnings.size(), 2u);
  std::string all;
  for (const auto& w : idx.warnings) all += w + "\n";
  EXPECT_NE(all.find("iter002_stages4's figure is not its measurement's (the record says 95 TFLOPS, its measurement "
                     "file perf/measure_iter002_stages4.json 4)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("iter000_cublas"), std::string::npos) << all;
  // The log as stored again, and a measurement file replaced (`croq baseline --force` does so to the
  // baseline's): nothing to compare it with, the record counts.
  atomic_write(log, stored, false);
  ASSERT_EQ(ledger.index().best->kernel, "iter002_stages4");
  atomic_write(second, json{{"schema", "croq-measurement-v1"}, {"verdict", "PASS"}, {"tflops", 4.5}}.dump(), false);
  atomic_write(log, stored + "\n", false);  // the index is refolded when the log changes
  EXPECT_EQ(ledger.index().best->kernel, "iter002_stages4");
  EXPECT_TRUE(ledger.index().baseline);
}

TEST_F(LedgerTest, ReserveIterIsMonotonicAndSkipsStoredAndReserved) {
  EXPECT_EQ(ledger.peek_next_iter(), 1);
  EXPECT_EQ(ledger.reserve_iter(k_wait), 1);
  EXPECT_EQ(ledger.reserve_iter(k_wait), 2);
  EXPECT_EQ(ledger.peek_next_iter(), 3);
  store("iter001_draft", "KEEP", 100);
  store("iter002_next", "DISCARD", 90);
  EXPECT_TRUE(ledger.reservations().live_iters.empty()) << "stored ids are no longer reservations";
  EXPECT_EQ(ledger.reserve_iter(k_wait), 3);
  store("iter000_cublas", "BASELINE", 600);
  EXPECT_EQ(ledger.reserve_iter(k_wait), 4);
  ledger.release_iter(4, k_wait);
  EXPECT_EQ(ledger.reserve_iter(k_wait), 4) << "a released number is handed out again";
}

TEST_F(LedgerTest, AttemptsDoNotConsumeIterationNumbers) {
  EXPECT_EQ(ledger.reserve_attempt(k_wait), 0);
  EXPECT_EQ(ledger.reserve_attempt(k_wait), 1);
  EXPECT_EQ(ledger.reserve_iter(k_wait), 1);
  EXPECT_EQ(ledger.peek_next_attempt(), 2);
  store("attemptAAAC_tma", "COMPILE_FAIL", std::nullopt);
  EXPECT_EQ(ledger.peek_next_attempt(), 3);
  EXPECT_EQ(ledger.peek_next_iter(), 2);
}

TEST_F(LedgerTest, FailureWithAnIterationIdBecomesAnAttemptAndFreesTheNumber) {
  store("iter001_draft", "KEEP", 100);
  EXPECT_EQ(ledger.reserve_iter(k_wait), 2);
  auto r = store("iter002_tma", "COMPILE_FAIL", std::nullopt);
  EXPECT_EQ(r.outcome.record.iter, "attemptAAAA");
  EXPECT_EQ(r.outcome.record.kernel, "attemptAAAA_tma");
  EXPECT_EQ(r.outcome.record.extra["planned_iter"], "iter002");
  EXPECT_EQ(r.outcome.record.tflops, 0.0);
  EXPECT_EQ(r.outcome.planned_iter, "iter002");
  EXPECT_EQ(r.outcome.released_reservation, "iter002");
  EXPECT_EQ(ledger.reserve_iter(k_wait), 2) << "the failure did not consume iter002";
  auto v = store("iter002_tma_fixed", "KEEP", 120);
  EXPECT_EQ(v.outcome.record.kernel, "iter002_tma_fixed");
  auto h = store("iter003_wide", "HANG", std::nullopt);
  EXPECT_EQ(h.outcome.record.kernel, "attemptAAAB_wide");
  EXPECT_FALSE(ledger.index().iters.contains(3));
}

TEST_F(LedgerTest, DuplicatesAreRefusedAsConflictsAndChangeNothing) {
  store("iter000_cublas", "BASELINE", 600);
  store("iter001_draft", "KEEP", 100);
  store("attemptAAAA_bad", "COMPILE_FAIL", std::nullopt);
  auto before = snapshot(dir.path());
  EXPECT_EQ(code_of([&] { store("iter001_again", "DISCARD", 90); }), ExitCode::conflict);
  EXPECT_EQ(code_of([&] { store("iter000_cublas", "BASELINE", 601); }), ExitCode::conflict);
  EXPECT_EQ(code_of([&] { store("attemptAAAA_bad", "VERIFY_FAIL", std::nullopt); }), ExitCode::conflict);
  StoreRequest q = request("iter002_xx", "DISCARD", 90);
  q.round = 1;
  EXPECT_EQ(code_of([&] { store_round(ledger, q, k_wait); }), ExitCode::conflict);
  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(LedgerTest, ConflictMessagesSayWhatToDo) {
  store("iter001_draft", "KEEP", 100);
  try {
    store("iter001_draft", "KEEP", 100);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "iter001 is already stored for this task");
    EXPECT_NE(e.hint().find("croq next-iter"), std::string::npos);
  }
}

TEST_F(LedgerTest, ExplicitRoundsAreKeptAndTheNextOneFollowsTheHighest) {
  StoreRequest q = request("iter001_draft", "KEEP", 100);
  q.round = 0;  // the starting kernel is preparation, round 0
  q.bottleneck = "";
  EXPECT_EQ(store_round(ledger, q, k_wait).outcome.record.round, 0);
  StoreRequest q5 = request("iter002_aa", "KEEP", 110);
  q5.round = 5;
  EXPECT_EQ(store_round(ledger, q5, k_wait).outcome.record.round, 5);
  EXPECT_EQ(store("iter003_bb", "DISCARD", 100).outcome.record.round, 6);
}

TEST_F(LedgerTest, TornLastLineIsCutOffByTheNextStore) {
  store("iter001_draft", "KEEP", 100);
  const fs::path log = ws.idea_log(task);
  {
    std::string torn = R"({"round":2,"iter":"iter002","kernel":"iter002_xx","tfl)";
    std::FILE* f = std::fopen(log.c_str(), "a");
    std::fwrite(torn.data(), 1, torn.size(), f);
    std::fclose(f);
  }
  LedgerIndex idx = ledger.index();
  EXPECT_TRUE(idx.torn_tail);
  EXPECT_EQ(idx.records, 1);
  auto r = store("iter002_yy", "KEEP", 110);
  EXPECT_TRUE(r.outcome.repaired_torn_tail);
  EXPECT_EQ(r.outcome.record.round, 2);
  JsonlParse p = ledger.read_all();
  EXPECT_TRUE(p.warnings.empty());
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_EQ(p.records[1].kernel, "iter002_yy");
  EXPECT_FALSE(ledger.index().torn_tail);
  EXPECT_EQ(ledger.read_tsv(nullptr).size(), 2u);
}

TEST_F(LedgerTest, UnterminatedWholeLastRecordIsKeptAndEnded) {
  RoundRecord r;
  r.round = 1;
  r.iter = "iter001";
  r.kernel = "iter001_hand";
  r.tflops = 50;
  r.decision = Decision::KEEP;
  r.bottleneck = "mixed";
  r.idea = "hand-written";
  atomic_write(ws.idea_log(task), dump_compact(r.to_json()));  // no final newline
  EXPECT_EQ(ledger.index().records, 1);
  EXPECT_FALSE(ledger.index().torn_tail);
  auto s = store("iter002_next", "KEEP", 60);
  EXPECT_FALSE(s.outcome.repaired_torn_tail);
  EXPECT_EQ(s.outcome.record.round, 2);
  JsonlParse p = ledger.read_all();
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_EQ(p.records[0].kernel, "iter001_hand");
  EXPECT_EQ(ledger.index().records, 2);
  EXPECT_EQ(ledger.read_tsv(nullptr).size(), 2u);
}

TEST_F(LedgerTest, DamagedLedgerRefusesWritesAndChangesNothing) {
  store("iter001_draft", "KEEP", 100);
  const fs::path log = ws.idea_log(task);
  std::string text = *read_file(log);
  atomic_write(log, text + "{this is not a record}\n");
  (void)ledger.index();
  auto before = snapshot(dir.path());
  EXPECT_EQ(code_of([&] { store("iter002_xx", "KEEP", 110); }), ExitCode::corrupt);
  EXPECT_EQ(code_of([&] { ledger.reserve_iter(k_wait); }), ExitCode::corrupt);
  EXPECT_EQ(code_of([&] { ledger.reserve_attempt(k_wait); }), ExitCode::corrupt);
  EXPECT_EQ(snapshot(dir.path()), before);
  // Readers still read it, with a warning.
  LedgerIndex idx = ledger.index();
  EXPECT_EQ(idx.records, 1);
  EXPECT_EQ(idx.invalid_lines, 1);
  EXPECT_FALSE(idx.warnings.empty());
}

TEST_F(LedgerTest, BinaryJunkWithoutNewlinesIsDamageNotATornRecord) {
  std::string junk(k_max_record_bytes + 10, '\x01');
  atomic_write(ws.idea_log(task), junk);
  auto before = snapshot(dir.path());
  EXPECT_EQ(code_of([&] { store("iter001_xx", "KEEP", 110); }), ExitCode::corrupt);
  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(LedgerTest, DamagedReservationsRefuseNextIterAndChangeNothing) {
  store("iter001_draft", "KEEP", 100);
  atomic_write(ws.reservations(task), "{\"live_iters\": [[2,");
  auto before = snapshot(dir.path());
  EXPECT_EQ(code_of([&] { ledger.reserve_iter(k_wait); }), ExitCode::corrupt);
  EXPECT_EQ(code_of([&] { store("iter002_xx", "KEEP", 110); }), ExitCode::corrupt);
  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(LedgerTest, TsvThatFellBehindIsCompletedWithoutABackup) {
  store("iter001_draft", "KEEP", 100);
  store("iter002_bb", "KEEP", 110);
  // A crash between the two appends: the record is there, its row is not.
  const fs::path tsv = ws.results_tsv(task);
  std::string text = *read_file(tsv);
  text.resize(text.rfind("iter002\t"));
  atomic_write(tsv, text);
  auto r = store("iter003_cc", "KEEP", 120);
  EXPECT_TRUE(r.outcome.tsv_rebuilt);
  auto rows = ledger.read_tsv(nullptr);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].kernel, "iter002_bb");
  EXPECT_EQ(rows[2].kernel, "iter003_cc");
  for (const auto& [name, content] : snapshot(logs())) EXPECT_EQ(name.find(".bak"), std::string::npos) << name;
}

TEST_F(LedgerTest, HandEditedTsvIsRebuiltAndTheOldOneKept) {
  store("iter001_draft", "KEEP", 100);
  const fs::path tsv = ws.results_tsv(task);
  atomic_write(tsv, "my own notes\n");
  auto r = store("iter002_bb", "KEEP", 110);
  EXPECT_TRUE(r.outcome.tsv_rebuilt);
  EXPECT_EQ(ledger.read_tsv(nullptr).size(), 2u);
  bool backup = false;
  for (const auto& [name, content] : snapshot(logs())) {
    if (name.find("results.tsv.bak.") != std::string::npos) {
      backup = true;
      EXPECT_EQ(content, "my own notes\n");
    }
  }
  EXPECT_TRUE(backup);
}

TEST_F(LedgerTest, LegacyTsvOnlyTaskIsImportedOnTheFirstStore) {
  ensure_dir(logs());
  atomic_write(ws.results_tsv(task),
               "round\titer\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\n"
               "0\titer000\titer000_cublas\t600\tBASELINE\tn/a\tcuBLAS\n"
               "1\titer001\titer001_draft\t100\tKEEP\tmemory_bound\tstart\n"
               "2\titer002\titer002_bk\t120\tKEEP\tmemory_bound\tBK 64\n");
  EXPECT_EQ(ledger.peek_next_iter(), 3) << "the legacy rows' ids are taken";
  EXPECT_EQ(code_of([&] { store("iter002_again", "KEEP", 1); }), ExitCode::conflict);
  EXPECT_FALSE(fs::exists(ws.idea_log(task))) << "a refused store imports nothing";
  auto r = store("iter003_cc", "KEEP", 130);
  EXPECT_TRUE(r.outcome.imported_tsv);
  EXPECT_EQ(r.outcome.record.round, 3);
  JsonlParse p = ledger.read_all();
  ASSERT_EQ(p.records.size(), 4u);
  EXPECT_EQ(p.records[0].extra["source"], "tsv-import");
  EXPECT_EQ(p.records[2].idea, "BK 64");
  auto rows = ledger.read_tsv(nullptr);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[3].kernel, "iter003_cc");
  EXPECT_EQ(split_lines(*read_file(ws.results_tsv(task)))[0], k_tsv_header);
}

TEST_F(LedgerTest, LegacyTsvWithUnreadableRowsIsNotImported) {
  ensure_dir(logs());
  const std::string legacy = "iter\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\n"
                             "iter001\titer001_draft\t100\tKEEP\tmemory_bound\tstart\n"
                             "### garbage ###\n";
  atomic_write(ws.results_tsv(task), legacy);
  auto before = snapshot(dir.path());
  EXPECT_EQ(code_of([&] { store("iter002_xx", "KEEP", 1); }), ExitCode::corrupt);
  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(LedgerTest, StoreRoundClosesTheMatchingCheckpoint) {
  Checkpoint cp;
  cp.iter = "iter002";
  cp.idea = "plan";
  cp.bottleneck = "mixed";
  write_checkpoint(ws, task, cp);
  store("iter001_draft", "KEEP", 100);
  EXPECT_TRUE(read_checkpoint(ws, task)->open()) << "another iteration leaves the plan open";
  auto r = store("iter002_plan", "DISCARD", 90);
  EXPECT_TRUE(r.checkpoint_closed);
  auto back = read_checkpoint(ws, task);
  EXPECT_EQ(back->status, CheckpointStatus::CLOSED);
  EXPECT_EQ(back->extra["closed_by"], "iter002_plan");
}

TEST_F(LedgerTest, FailureOfAPlannedIterationClosesItsCheckpoint) {
  Checkpoint cp;
  cp.iter = "iter002";
  cp.idea = "plan";
  cp.bottleneck = "mixed";
  write_checkpoint(ws, task, cp);
  auto r = store("iter002_plan", "VERIFY_FAIL", std::nullopt);
  EXPECT_EQ(r.outcome.record.kernel, "attemptAAAA_plan");
  EXPECT_TRUE(r.checkpoint_closed);
}

TEST_F(LedgerTest, RecordAtReadsTheLineAtAnOffset) {
  auto a = store("iter001_draft", "KEEP", 100);
  auto b = store("iter002_bb", "KEEP", 110);
  EXPECT_EQ(a.outcome.offset, 0u);
  EXPECT_EQ(ledger.record_at(a.outcome.offset)->kernel, "iter001_draft");
  EXPECT_EQ(ledger.record_at(b.outcome.offset)->kernel, "iter002_bb");
  EXPECT_FALSE(ledger.record_at(b.outcome.offset + 3).has_value());
}

TEST_F(LedgerTest, AttemptLogAppendsWholeJsonLines) {
  json a = ledger.append_attempt({{"reason", "code_bug"}}, "tma", k_wait);
  EXPECT_EQ(a["attempt"], "attemptAAAA");
  EXPECT_EQ(a["kernel"], "attemptAAAA_tma");
  json b = ledger.append_attempt({{"reason", "line\nbreak \"quoted\""}}, "tma", k_wait);
  EXPECT_EQ(b["attempt"], "attemptAAAB");
  std::vector<std::string> w;
  auto all = ledger.read_attempts(&w);
  EXPECT_TRUE(w.empty());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1]["reason"], "line\nbreak \"quoted\"");
  EXPECT_EQ(ledger.reserve_attempt(k_wait), 2) << "attempt ids are shared with next-iter --attempt";
  // A damaged log takes nothing more.
  atomic_write(ws.attempt_log(task), *read_file(ws.attempt_log(task)) + "{broken\n");
  auto before = snapshot(dir.path());
  EXPECT_EQ(code_of([&] { ledger.append_attempt({{"reason", "x"}}, "tma", k_wait); }), ExitCode::corrupt);
  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(LedgerTest, LockIsExclusiveAndReportsItsHolder) {
  FileLock held = ledger.lock(k_wait, "test holder");
  EXPECT_FALSE(FileLock::try_acquire(ws.task_lock(task), std::chrono::milliseconds(0)).has_value());
  EXPECT_EQ(FileLock::describe_holder(ws.task_lock(task)), fmt::format("pid {}: test holder", ::getpid()));
  try {
    ledger.reserve_iter(std::chrono::milliseconds(30));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::busy);
    EXPECT_NE(std::string(e.what()).find("test holder"), std::string::npos) << e.what();
  }
}

// ---- request validation (nothing is written on a bad request) ----

class StoreRequestTest : public LedgerTest {};

TEST_F(StoreRequestTest, BadRequestsAreRefusedBeforeAnythingIsWritten) {
  struct Case {
    const char* what;
    std::function<void(StoreRequest&)> change;
  };
  const std::vector<Case> cases = {
      {"unknown decision", [](StoreRequest& q) { q.decision = "MAYBE"; }},
      {"unknown bottleneck", [](StoreRequest& q) { q.bottleneck = "unknown"; }},
      {"bad bottleneck", [](StoreRequest& q) { q.bottleneck = "io_bound"; }},
      {"no bottleneck in a tuning round", [](StoreRequest& q) { q.bottleneck = ""; }},
      {"n/a in a tuning round", [](StoreRequest& q) { q.bottleneck = "n/a"; }},
      {"KEEP without tflops", [](StoreRequest& q) { q.tflops.reset(); }},
      {"negative tflops", [](StoreRequest& q) { q.tflops = -1; }},
      {"infinite tflops", [](StoreRequest& q) { q.tflops = std::numeric_limits<double>::infinity(); }},
      {"nan tflops", [](StoreRequest& q) { q.tflops = std::nan(""); }},
      {"absurd tflops", [](StoreRequest& q) { q.tflops = 1e9; }},
      {"BASELINE on iter005", [](StoreRequest& q) { q.decision = "BASELINE"; }},
      {"iter000 as KEEP", [](StoreRequest& q) { q.iter = q.kernel = "iter000_cublas"; }},
      {"bare iter without tag", [](StoreRequest& q) { q.iter = "iter005"; q.kernel = ""; }},
      {"kernel of another iteration", [](StoreRequest& q) { q.kernel = "iter006_xx"; }},
      {"different tags", [](StoreRequest& q) { q.iter = "iter005_aa"; q.kernel = "iter005_bb"; }},
      {"attempt id for KEEP", [](StoreRequest& q) { q.iter = q.kernel = "attemptAAAB_x"; }},
      {"kernel escaping the root", [](StoreRequest& q) { q.kernel = "../iter005_x"; }},
      {"empty idea", [](StoreRequest& q) { q.idea = "  \t"; }},
      {"idea over 16 KiB", [](StoreRequest& q) { q.idea = std::string(16 * 1024 + 1, 'x'); }},
      {"1 MiB idea", [](StoreRequest& q) { q.idea = std::string(1 << 20, 'y'); }},
      {"idea not UTF-8", [](StoreRequest& q) { q.idea = "bad \xff\xfe bytes"; }},
      {"idea with NUL", [](StoreRequest& q) { q.idea = std::string("a\0b", 3); }},
      {"unknown category", [](StoreRequest& q) { q.category = "magic"; }},
      {"negative round", [](StoreRequest& q) { q.round = -1; }},
      {"iter out of range", [](StoreRequest& q) { q.iter = "iter1234567_x"; q.kernel = ""; }},
      {"extra not an object", [](StoreRequest& q) { q.extra = json::array(); }},
  };
  store("iter001_draft", "KEEP", 100);
  auto before = snapshot(dir.path());
  for (const auto& c : cases) {
    StoreRequest q = request("iter005_good", "KEEP", 100);
    c.change(q);
    EXPECT_EQ(code_of([&] { store_round(ledger, q, k_wait); }), ExitCode::usage) << c.what;
  }
  EXPECT_EQ(snapshot(dir.path()), before);
}

TEST_F(StoreRequestTest, PreparationRoundsNeedNoBottleneck) {
  StoreRequest q = request("iter000_cublas", "BASELINE", 600);
  auto r = store_round(ledger, q, k_wait);
  EXPECT_EQ(r.outcome.record.bottleneck, "n/a");
  EXPECT_EQ(r.outcome.record.round, 0);
}

TEST_F(StoreRequestTest, IdeaTextOfAnyContentIsStoredExactly) {
  const std::string idea = "it's \"quoted\"\ttabbed\nmulti-line\r\nüñí ✓ 🚀 \\ back\\slash {\"json\":1}";
  StoreRequest q = request("iter001_draft", "KEEP", 100);
  q.idea = idea;
  q.expected_gain = "+5% \"maybe\"";
  store_round(ledger, q, k_wait);
  auto p = ledger.read_all();
  ASSERT_EQ(p.records.size(), 1u);
  EXPECT_EQ(p.records[0].idea, idea);
  EXPECT_EQ(p.records[0].expected_gain, "+5% \"maybe\"");
  auto rows = ledger.read_tsv(nullptr);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].idea, idea);
}

TEST_F(StoreRequestTest, FailuresStoreZeroTflops) {
  StoreRequest q = request("attemptAAAA_xx", "RUNTIME_FAIL", 55.0);
  auto r = store_round(ledger, q, k_wait);
  EXPECT_EQ(r.outcome.record.tflops, 0.0);
  EXPECT_EQ(r.outcome.record.kernel, "attemptAAAA_xx");
}

}  // namespace
}  // namespace croq
