// The ledger of one task: its stored rounds (idea-log.jsonl, the source of truth), the
// results.tsv view kept in step with it, failed attempts (attempt-log.jsonl), and iteration-id
// reservations. Writers serialise on the task lock (logs/.../.croq.lock); every record is
// appended whole (fs.hpp), so a crash at any moment leaves a prefix of what was stored.
//
// Reading thousands of rounds must stay fast, so the ledger keeps an index
// (logs/.../.ledger-index.json, croq-ledger-index-v1): a fold over the records up to a byte
// offset of idea-log.jsonl, with a signature of the bytes just before that offset. An index whose
// offset and signature still match is extended with only the records appended since; one that does
// not match (the file was rewritten) is rebuilt from scratch. The index is a cache: deleting it
// loses nothing.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "croq/ledger/int_set.hpp"
#include "croq/ledger/records.hpp"
#include "croq/util/fs.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

// A short form of one record, kept in the index.
struct RecordBrief {
  int round = 0;
  std::string iter;
  std::string kernel;
  std::optional<double> tflops;
  std::string decision;
  std::string bottleneck;
  std::string timestamp;
  std::string source;

  static RecordBrief of(const RoundRecord& r);
  json to_json() const;
  static RecordBrief from_json(const json& j);
};

inline constexpr const char* k_index_schema = "croq-ledger-index-v1";

struct LedgerIndex {
  uint64_t bytes = 0;          // offset in idea-log.jsonl up to which records are folded
  std::string tail_sig;        // sha256 of the (up to) 64 bytes before `bytes`
  int records = 0;
  int invalid_lines = 0;
  bool torn_tail = false;
  IntSet rounds;               // round numbers >= 1
  IntSet iters;                // measured iteration numbers (iter000 included)
  IntSet attempts;             // attempt indexes (AAAA = 0)
  int max_round = 0;
  std::optional<RecordBrief> last;
  std::optional<RecordBrief> best;      // the KEEP with the highest TFLOPS (iter >= 1)
  std::optional<RecordBrief> baseline;  // iter000
  int non_keep_streak = 0;              // rounds since the last KEEP (failures included)
  int discard_streak = 0;               // consecutive DISCARDs since the last KEEP
  std::map<std::string, int> decisions; // count per decision
  std::vector<std::string> warnings;    // from reading the records (at most 20 kept)

  void fold(const RoundRecord& r);
  json to_json() const;
  static std::optional<LedgerIndex> from_json(const json& j);
};

// Outcome of Ledger::store.
struct StoreOutcome {
  RoundRecord record;              // as stored (round, timestamp and ids filled in)
  bool tsv_rebuilt = false;        // results.tsv was out of step and was rebuilt from the JSONL
  bool repaired_torn_tail = false; // a torn last line from an earlier crash was cut off first
  bool imported_tsv = false;       // a legacy TSV-only ledger was imported into the JSONL first
  std::string released_reservation;
  LedgerIndex index;
};

struct Reservations {
  IntSet live_iters;   // handed out by next-iter, not yet stored or released
  int max_attempt = -1;
  json to_json() const;
  static Reservations from_json(const json& j);
};

class Ledger {
 public:
  Ledger(const Workspace& ws, TaskRef task);

  const TaskRef& task() const { return m_task; }
  const Workspace& workspace() const { return m_ws; }

  // True if the task has an idea-log.jsonl or a results.tsv.
  bool exists() const;

  // The up-to-date index (incremental). Writes the index back when it had to be rebuilt.
  LedgerIndex index() const;
  // Every record, tolerant (warnings for skipped lines).
  JsonlParse read_all() const;
  // The last `n` valid records, reading only the end of the file.
  std::vector<RoundRecord> tail(size_t n) const;
  // Legacy TSV rows (for tasks that have only a results.tsv).
  std::vector<RoundRecord> read_tsv(std::vector<std::string>* warnings) const;

  // Takes the task lock (throws Error(busy) after `timeout`).
  FileLock lock(std::chrono::milliseconds timeout, std::string_view purpose) const;

  // Stores one round under the lock. Refuses (Error(conflict)) a round, iteration or attempt that
  // is already stored. A record with round == 0 and a decision other than BASELINE, or with
  // `auto_round`, gets the next round number.
  StoreOutcome store(RoundRecord record, bool auto_round, std::chrono::milliseconds lock_timeout);

  // Reservations (next-iter). Both take the lock.
  int reserve_iter(std::chrono::milliseconds lock_timeout);
  int reserve_attempt(std::chrono::milliseconds lock_timeout);
  int peek_next_iter() const;
  int peek_next_attempt() const;
  Reservations reservations() const;
  void release_iter(int number, std::chrono::milliseconds lock_timeout);

  // attempt-log.jsonl
  void append_attempt(const json& record, std::chrono::milliseconds lock_timeout);
  std::vector<json> read_attempts(std::vector<std::string>* warnings) const;

  // Rewrites results.tsv from the JSONL (atomically). Caller holds the lock.
  void rebuild_tsv_locked(const std::vector<RoundRecord>& records) const;

 private:
  LedgerIndex refresh_index(bool write_back) const;
  void write_index(const LedgerIndex& index) const;
  void write_reservations(const Reservations& r) const;
  bool import_legacy_tsv_locked() const;
  void check_tsv_in_step_locked(const LedgerIndex& index, StoreOutcome& outcome) const;

  const Workspace& m_ws;
  TaskRef m_task;
};

}  // namespace croq
