// Keeping the monitor's database in step with the workspace. The ledgers on disk are the source
// of truth; the database is an index of them, updated incrementally and never dropped:
//  - every task folder under tuning/ is known to the database: one the monitor did not create is
//    adopted (its task_config.json keeps or receives a task_uid; a task_config.json carrying a
//    monitor section brings its spec and state.json its scheduling state back), never duplicated;
//  - idea-log.jsonl is read from the byte offset indexed so far (recorded with a signature of the
//    bytes before it); a file that was rewritten (offset beyond the end, signature differs) is
//    re-indexed whole; a torn last line waits until it is complete; a legacy results.tsv-only
//    ledger is re-read when it changes;
//  - the task's summary (best, baseline, counts) comes from the ledger's own index
//    (Ledger::index()), so it means what `croq resume` means; its protocol state (the step and the
//    next action) from the protocol engine (derive_state) and the checkpoint.
// Changes are found by polling file sizes and times (cheap: a few stats per task and tick), with
// a full folder scan for new tasks every few ticks. `check` compares the two sides.
#pragma once
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "croq/web/database.hpp"
#include "croq/web/event_bus.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::web {

struct SyncStats {
  int tasks_scanned = 0;
  int tasks_adopted = 0;
  int tasks_changed = 0;
  int rounds_added = 0;
  int reindexed = 0;
  double ms = 0;
  std::vector<std::string> warnings;
  json to_json() const;
};

class LedgerSync {
 public:
  // `bus` may be null (no events: `serve --once`, tests).
  LedgerSync(const Workspace& ws, Database& db, EventBus* bus);

  // Finds tasks on disk (adopting new ones) and syncs every task.
  SyncStats full_scan();
  // Syncs the tasks the database knows, only those whose files changed.
  SyncStats poll_known();
  // Syncs one task now (after the scheduler or the API created it). Returns rounds added.
  int sync_task(const TaskRow& row, SyncStats* stats = nullptr);
  // Adopts one task folder if the database does not know it. Returns its row.
  TaskRow adopt(const TaskRef& task, SyncStats* stats = nullptr);
  // Holds off every sync while a caller creates a task (so a scan cannot adopt a folder that is
  // being created).
  std::unique_lock<std::recursive_mutex> hold() { return std::unique_lock(m_mutex); }

 private:
  struct Seen {
    int64_t log_size = -1, log_mtime = -1;
    int64_t tsv_size = -1, tsv_mtime = -1;
    int64_t cp_size = -1, cp_mtime = -1;
    int64_t ev_size = -1, ev_mtime = -1;
    int64_t proto_mtime = -1;
  };
  void publish(const std::string& kind, const std::string& uid, json data);

  const Workspace& m_ws;
  Database& m_db;
  EventBus* m_bus;
  std::recursive_mutex m_mutex;  // one sync at a time
  std::map<std::string, Seen> m_seen;  // by uid
};

// The summary of one task's ledger (the `stats` of TaskRow), computed from the files.
json ledger_stats(const Workspace& ws, const TaskRef& task);

// ---- serve --check ----
struct CheckItem {
  std::string task;    // task key
  std::string uid;
  std::string kind;    // "missing_in_db", "missing_on_disk", "uid_differs", "round_differs",
                       // "extra_rounds_in_db", "behind", "stats_differ", "state_differs", "unreadable"
  std::string detail;
  json to_json() const;
};

struct CheckReport {
  int tasks_on_disk = 0;
  int tasks_in_db = 0;
  int rounds_on_disk = 0;
  int rounds_in_db = 0;
  std::vector<CheckItem> differences;  // the database says something the disk does not
  std::vector<CheckItem> pending;      // the database holds a prefix of the disk (a sync will catch up)
  bool clean() const { return differences.empty(); }
  json to_json() const;
};

CheckReport check_database(const Workspace& ws, Database& db);

}  // namespace croq::web
