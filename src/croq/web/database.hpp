// The monitor's database: an index of tasks, their rounds and their scheduling state, kept in
// step with the files on disk (the ledgers and task documents stay the source of truth). The
// rest of the monitor sees only the Database interface below, in the monitor's own terms (tasks,
// rounds, sync positions, history), so that a PostgreSQL backend can implement it beside the
// SQLite one without touching the scheduler, the sync or the server.
//
// Backends keep a versioned schema: numbered migrations applied in order, each in a transaction,
// recorded in schema_migrations; a database written by a newer croq is refused, never dropped.
//
// Several servers (machines, each with its own workspace) may share one database: every task row
// has an owner, the server whose workspace holds the task. Only the owner syncs and schedules a
// row; another server shows it and records actions on it as requests (TaskRequest) that the
// owner's scheduler carries out.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq::web {

// One task as the monitor knows it. `spec` is the TaskSpec (task_spec.hpp) as JSON; `stats` the
// ledger summary written by the sync (best, baseline, counts, protocol state).
struct TaskRow {
  std::string uid;
  std::string key;        // "<gpu>/<dsl>/<shape_key>/<model>", unique
  std::string gpu;
  std::string dsl;
  std::string shape_key;
  std::string model;
  std::string origin;     // "created" (by this monitor) or "adopted" (found on disk)
  std::string owner;      // the server that syncs and schedules it (server_owner(), ledger_sync.hpp);
                          // empty: a row from before owners, not claimed yet
  json spec = json::object();
  std::string state;      // task_state.hpp
  std::string reason;     // why the task is in its state, one line
  std::string created_at;
  std::string updated_at;
  std::string queued_at;  // order of the queue (FIFO within a priority)
  std::string not_before; // a queued or parked task waits until then (ISO 8601, empty: no wait)
  std::string stop_target;        // state to enter once the running child has stopped
  std::string stop_requested_at;
  int runs = 0;           // child processes started so far
  int crash_count = 0;    // consecutive crashes (reset by retry and by a clean run)
  int park_count = 0;     // consecutive rate-limit parks
  double run_seconds = 0; // time spent running, all runs together
  int pid = 0;            // the running child's supervisor (its process group), 0 when none
  long long pid_start = 0;  // its start time in clock ticks since boot (identity across restarts)
  std::string run_started_at;
  json last_exit = nullptr;  // {run, exit_code, signal, outcome, at}
  json stats = json::object();

  // The data of a `state` event for this row (api.md): its scheduling fields and `change`.
  json state_event(const std::string& change) const;
};

// One stored round of a task's ledger, in file order (`seq` counts valid records from 0).
struct RoundRow {
  int seq = 0;
  int round = 0;
  std::string iter;
  std::string kernel;
  std::optional<double> tflops;
  std::string decision;
  std::string bottleneck;
  std::string category;
  std::string idea;
  std::string expected_gain;
  std::string timestamp;
  std::string source;
  std::string record;  // the whole record as compact JSON

  json to_json() const;
};

// How far the database has read a task's ledger.
struct SyncState {
  std::string kind = "none";  // "jsonl" (idea-log.jsonl), "tsv" (a legacy results.tsv only), "none"
  uint64_t bytes = 0;         // jsonl: offset up to which complete lines are indexed
  std::string tail_sig;       // jsonl: sha256 of the (up to) 64 bytes before `bytes`
  int records = 0;            // valid records indexed
  int64_t size = 0;           // file size and modification time when last read
  int64_t mtime_ns = 0;
};

// What the sync writes for one task, in one transaction.
struct SyncUpdate {
  bool replace = false;            // drop the task's indexed rounds first (the file was rewritten)
  std::vector<RoundRow> rounds;    // appended after the indexed ones
  SyncState state;
  std::optional<json> stats;       // new ledger summary, if it changed
};

// An action (pause, resume, cancel, retry) asked for at one server on a task another server owns,
// kept until the owner's scheduler has carried it out (or refused it, in the task's history).
struct TaskRequest {
  long long id = 0;          // assigned by the database, in the order requests arrive
  std::string task_uid;
  std::string action;
  std::string requested_by;  // the owner name of the server that took the request
  std::string requested_at;

  json to_json() const;
};

struct RoundQuery {
  int after_seq = -1;        // only rows with seq > after_seq
  int limit = 0;             // 0: all
  bool newest_first = false;
  std::string decision;      // exact, empty: any ("FAIL" matches every failure decision)
  std::string bottleneck;
  std::string category;
  std::string text;          // substring of idea or kernel, case-insensitive
};

class Database {
 public:
  virtual ~Database() = default;

  virtual std::string location() const = 0;  // "sqlite:/path/monitor.db"
  virtual int schema_version() = 0;
  // Backend facts for the system panel: {backend, location, schema_version, bytes, ...}.
  virtual json info() = 0;

  // Every owner's tasks, in creation order (ties: insertion order).
  virtual std::vector<TaskRow> tasks() = 0;
  virtual std::optional<TaskRow> task(const std::string& uid) = 0;
  // The task of `owner` with that key ("" finds an unclaimed row): keys are unique per owner.
  virtual std::optional<TaskRow> task_by_key(const std::string& owner, const std::string& key) = 0;
  // Throws Error(conflict) when the uid, or the key of the same owner, exists.
  virtual void insert_task(const TaskRow& row) = 0;
  // Writes every field but `stats` (owned by apply_sync) and `owner` (claim_task). Throws
  // Error(not_found).
  virtual void update_task(const TaskRow& row) = 0;
  // Gives an unclaimed row (empty owner) to `owner`, atomically: true if this call claimed it,
  // false if the row has an owner already (another server may have claimed it first).
  virtual bool claim_task(const std::string& uid, const std::string& owner) = 0;

  // Requests for tasks of other servers: recorded by the server that took them, carried out and
  // removed by the owner. Returns the new request's id.
  virtual long long add_request(const TaskRequest& request) = 0;
  // Pending requests for the tasks `owner` owns, oldest first.
  virtual std::vector<TaskRequest> requests_for(const std::string& owner) = 0;
  // Pending requests of one task, oldest first.
  virtual std::vector<TaskRequest> task_requests(const std::string& uid) = 0;
  virtual void remove_request(long long id) = 0;

  virtual std::optional<SyncState> sync_state(const std::string& uid) = 0;
  virtual void apply_sync(const std::string& uid, const SyncUpdate& update) = 0;
  virtual std::vector<RoundRow> rounds(const std::string& uid, const RoundQuery& query = {}) = 0;
  virtual int round_count(const std::string& uid) = 0;

  // The task's history of state changes and actions, newest first.
  virtual void add_history(const std::string& uid, const std::string& at, const std::string& kind,
                           const json& data) = 0;
  virtual std::vector<json> history(const std::string& uid, int limit) = 0;
};

struct DatabaseOptions {
  bool read_only = false;      // `serve --check`: never writes, never migrates
  int target_version = 0;      // 0: the newest schema; tests stop earlier to check upgrades
};

// Opens (creating and migrating as needed) the database at `location`: a file path or
// "sqlite:<path>" (SQLite), or "postgresql://..." (PostgreSQL: postgres_database.hpp).
// Throws Error(usage) for an unknown scheme, Error(corrupt) for a newer or damaged schema.
std::unique_ptr<Database> open_database(const std::string& location, const DatabaseOptions& options = {});

// The newest schema version this build knows.
int newest_schema_version();

}  // namespace croq::web
