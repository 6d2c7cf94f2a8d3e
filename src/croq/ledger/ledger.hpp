// The ledger of one task: its stored rounds (idea-log.jsonl, the source of truth), the
// results.tsv view kept in step with it, failed attempts (attempt-log.jsonl), and iteration-id
// reservations. Writers serialise on the task lock (logs/.../.croq.lock); every record is
// appended whole (fs.hpp), so a crash at any moment leaves a prefix of what was stored.
//
// Reading thousands of rounds must stay fast, so the ledger keeps an index
// (logs/.../.ledger-index.json, croq-ledger-index-v1): a fold over the records up to a byte
// offset of idea-log.jsonl, with the file's inode and signatures of its first bytes and of the
// bytes just before that offset. An index that still matches is extended with only the records
// appended since; one that does not (the file was replaced or rewritten) is rebuilt from scratch.
// The index is a cache: deleting it loses nothing, and any process may write it (a stale one is
// still a correct fold of a prefix). It is trusted only with a valid MAC under the workspace's key
// (secret.hpp): an index edited by hand, even with its signature fields kept, is ignored and rebuilt.
//
// Writers refuse to add to a damaged ledger (unreadable lines other than a torn last line):
// Error(corrupt), nothing changed; `croq session clean --invalid-only` repairs it.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <set>
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

inline constexpr const char* k_index_schema = "croq-ledger-index-v2";  // v2: figures checked against their files

struct LedgerIndex {
  uint64_t bytes = 0;          // offset in idea-log.jsonl up to which records are folded
  uint64_t inode = 0;          // of idea-log.jsonl when the fold began (a replaced file differs)
  int64_t mtime_ns = 0;        // of idea-log.jsonl when last folded: same size, other time = rewritten
  std::string head_sig;        // sha256 of the first (up to) 64 bytes
  std::string tail_sig;        // sha256 of the (up to) 64 bytes before `bytes`
  // results.tsv as the last writer left it (size, mtime, rows): if it still looks so and holds as
  // many rows as there are records, the view is in step without reading it.
  uint64_t tsv_bytes = 0;
  int64_t tsv_mtime_ns = 0;
  int tsv_rows = -1;
  int records = 0;
  int invalid_lines = 0;
  bool torn_tail = false;      // bytes after the last newline that are not a whole record
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

  // `ws`: the workspace whose measurement files back the measured records (unbacked_figure); without
  // it only a record's figure against its own measurement block is checked.
  void fold(const RoundRecord& r, const Workspace* ws = nullptr);
  json to_json() const;
  static std::optional<LedgerIndex> from_json(const json& j);
};

// Outcome of Ledger::store.
struct StoreOutcome {
  RoundRecord record;              // as stored (round, timestamp and ids filled in)
  uint64_t offset = 0;             // where the record starts in idea-log.jsonl
  bool tsv_rebuilt = false;        // results.tsv was out of step and was rebuilt from the JSONL
  bool repaired_torn_tail = false; // a torn last line from an earlier crash was cut off first
  size_t torn_bytes = 0;
  bool imported_tsv = false;       // a legacy TSV-only ledger was imported into the JSONL first
  std::string planned_iter;        // a failure stored under an attempt id: the iteration it freed
  std::string released_reservation;
  LedgerIndex index;
};

struct StoreOptions {
  // Number the round (0 for BASELINE, else the next one) instead of using record.round.
  bool auto_round = false;
  // A failure that names an iteration (iter012) is stored under the next attempt id, and the
  // iteration number is freed (failures never consume iteration numbers).
  bool failure_to_attempt = true;
};

inline constexpr const char* k_reservations_schema = "croq-reservations-v1";

// reservations.json: ids handed out by next-iter and not yet stored.
struct Reservations {
  IntSet live_iters;   // handed out by next-iter, not yet stored or released
  int max_attempt = -1;
  json to_json() const;
  // nullopt (with `why`) if `j` is not a reservations document or holds an id outside the
  // format's range (iter000..iter999999, AAAA..ZZZZ).
  static std::optional<Reservations> from_json(const json& j, std::string* why = nullptr);
};

// Longest unterminated tail of idea-log.jsonl that a writer treats as a torn record and cuts off;
// anything longer is damage (Error corrupt).
inline constexpr size_t k_max_record_bytes = 64 * 1024;

class Ledger {
 public:
  Ledger(const Workspace& ws, TaskRef task);

  const TaskRef& task() const { return m_task; }
  const Workspace& workspace() const { return m_ws; }

  // True if the task has an idea-log.jsonl or a results.tsv.
  bool exists() const;

  // The up-to-date index (incremental). Writes the index back when it had to be rebuilt.
  LedgerIndex index() const;
  // The index file as it is, if its MAC (workspace/secret.hpp) checks out; nullopt otherwise
  // (then index() ignores it and folds the records again).
  std::optional<LedgerIndex> read_index() const;
  // Every record, tolerant (warnings for skipped lines).
  JsonlParse read_all() const;
  // The last `n` valid records, reading only the end of the file.
  std::vector<RoundRecord> tail(size_t n) const;
  // Legacy TSV rows (for tasks that have only a results.tsv).
  std::vector<RoundRecord> read_tsv(std::vector<std::string>* warnings) const;

  // The record that starts at `offset` of idea-log.jsonl (read-back after a store).
  std::optional<RoundRecord> record_at(uint64_t offset) const;

  // Takes the task lock (throws Error(busy) after `timeout`). Refuses (Error corrupt) a task whose
  // ledger files are symbolic links, hard-linked or not regular files (linked_files()).
  FileLock lock(std::chrono::milliseconds timeout, std::string_view purpose) const;
  // "<file> is a symbolic link" for each of the task's ledger files that is not its own regular file.
  std::vector<std::string> linked_files() const;

  // Stores one round under the lock: one whole-line append to idea-log.jsonl (fsynced), then the
  // results.tsv row, the reservations and the index. Refuses, changing nothing: a round,
  // iteration or attempt already stored (Error conflict); a damaged ledger (Error corrupt).
  StoreOutcome store(RoundRecord record, const StoreOptions& options, std::chrono::milliseconds lock_timeout);

  // Reservations (next-iter). Both take the lock.
  // `planned`: the open plan's number, handed out (again) while it is not stored, whatever files
  // already carry it (a source written before next-iter moved the next number past the plan).
  int reserve_iter(std::chrono::milliseconds lock_timeout, std::optional<int> planned = std::nullopt);
  int reserve_attempt(std::chrono::milliseconds lock_timeout);
  int peek_next_iter() const;
  // The same from an index and records already read (protocol/snapshot.hpp), without reading the
  // ledger again (a legacy task with only a results.tsv reads it).
  int peek_next_iter(const LedgerIndex& idx, const std::vector<RoundRecord>& records) const;
  // The highest iteration number in the task's file names (srcs/, bin/, cmd/, perf/) that croq did
  // not give back itself (a failure stored as an attempt frees its planned number): a folder of
  // other tools can hold numbers its ledger never recorded, and a new iteration exceeds them.
  std::optional<int> highest_iter_on_disk() const;
  int peek_next_attempt() const;
  // Empty if there is no reservations.json; throws Error(corrupt) if it cannot be read.
  Reservations reservations() const;
  // One more than the highest iteration number (attempt index) stored or handed out.
  static int next_free_iter(const LedgerIndex& idx, const Reservations& res);
  static int next_free_attempt(const LedgerIndex& idx, const Reservations& res);
  void release_iter(int number, std::chrono::milliseconds lock_timeout);

  // attempt-log.jsonl: under one lock, takes the next attempt id (as next-iter --attempt does),
  // puts {attempt, kernel} in front of `record` and appends it as one fsynced line. Refuses
  // (Error corrupt, nothing changed) if the log or the ledger is damaged. Returns what was stored.
  json append_attempt(json record, const std::string& tag, std::chrono::milliseconds lock_timeout);
  std::vector<json> read_attempts(std::vector<std::string>* warnings) const;

  // Rewrites results.tsv from the JSONL (atomically). Caller holds the lock.
  void rebuild_tsv_locked(const std::vector<RoundRecord>& records) const;

 private:
  LedgerIndex refresh_index(bool write_back) const;
  void write_index(const LedgerIndex& index) const;
  std::string index_purpose() const;
  // Refuses (Error usage) an id that skips more than k_max_id_skip free ids: one record must
  // not be able to use up a task's iteration numbers or attempt ids.
  void check_id_in_sequence(const RoundRecord& record, const LedgerIndex& idx, const Reservations& res) const;
  [[noreturn]] void refuse_exhausted(const char* what, const std::string& last) const;
  void write_reservations(const Reservations& r) const;
  // The state writers decide from: the index of idea-log.jsonl, or (a legacy task with only a
  // results.tsv) a fold of its rows, returned in `legacy_rows`. Throws Error(corrupt) when the
  // ledger is damaged.
  LedgerIndex writable_state_locked(std::vector<RoundRecord>* legacy_rows) const;
  void check_tsv_in_step_locked(LedgerIndex& index, StoreOutcome& outcome) const;
  void note_tsv_locked(LedgerIndex& index) const;

  const Workspace& m_ws;
  TaskRef m_task;
};

// The names stored failures were planned and built under (<planned_iter>_<tag>). A failure stored
// as an attempt gives its iteration number back, so the next plan takes the same number, and the
// failure's files (its source, its build log, the measurement its record points to) keep the name.
std::set<std::string> failed_kernel_names(const std::vector<RoundRecord>& records);

// The source of `id` in the task's srcs/: for a kernel name (iter<NNN>_<tag>) its own; for a bare
// iter<NNN> the first of that number that no stored failure was built as (the live plan's, not a
// failed attempt's left beside it). Nothing when there is none.
std::optional<fs::path> find_live_source(const Workspace& ws, const TaskRef& task, const std::string& id);

// Why a measured record's figure is not the one croq measured, or nullopt: its TFLOPS differ from
// its own measurement block, or the measurement file the block names, still there with the hash the
// record was stored with, is not PASS or holds another figure. Such a record
// is neither a task's best nor its baseline (status, resume, reports, the monitor, sweeps), and
// `croq session validate` names it. (Before, a figure edited in both places of the record was shown
// as measured: 9.5 TFLOPS for a kernel measured at 0.07.) A record that is not measured, or whose
// file is gone, has nothing to check against here.
std::optional<std::string> unbacked_figure(const Workspace& ws, const RoundRecord& r);

// What a measured record's measurement says of its figure (unbacked_figure's reading; `croq export`
// is stricter and refuses a replaced file too).
struct FigureBacking {
  enum Kind {
    not_checked,   // not a measured record with a figure and a measurement file (or a failure)
    edited_block,  // the record's figure differs from its own measurement block's (`other`)
    file_gone,     // the file it names is not there
    file_replaced, // the file no longer has the hash the record was stored with
    not_pass,      // the file is not a PASS
    other_figure,  // the file holds another figure (`other`, nullopt when none)
    backed         // the file holds the record's figure
  } kind = not_checked;
  fs::path file;                // the measurement file (absolute), when the record names one
  std::optional<double> other;  // the differing figure
};
FigureBacking figure_backing(const Workspace& ws, const RoundRecord& r);

}  // namespace croq
