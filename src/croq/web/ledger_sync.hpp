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
//
// A database may be shared by the servers of several machines (PostgreSQL), each for its own
// workspace: the sync reads and writes only the rows this server owns (server_owner()). A row from
// before owners (empty owner) is claimed by the first server whose workspace holds the task; a
// task on this disk whose task_uid another server owns is a conflict, reported and left alone.
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
  int tasks_claimed = 0;  // rows from before owners, claimed by this server
  int remote_changed = 0;  // other servers' tasks whose rows changed since the last poll (events sent)
  double ms = 0;
  std::vector<std::string> warnings;
  std::vector<std::string> conflicts;  // tasks on this disk whose task_uid another server owns
  json to_json() const;
};

// This server's name as the owner of its task rows: CROQ_SERVE_OWNER where set (a host name that
// is not stable, e.g. a container's), else "<host name>:<canonical workspace root>".
std::string server_owner(const Workspace& ws);

class LedgerSync {
 public:
  // `bus` may be null (no events: `serve --once`, tests). `owner` empty: server_owner(ws).
  LedgerSync(const Workspace& ws, Database& db, EventBus* bus, std::string owner = {});

  const std::string& owner() const { return m_owner; }

  // Finds tasks on disk (adopting new ones) and syncs every task.
  SyncStats full_scan();
  // Syncs the tasks the database knows, only those whose files changed; then publishes what other
  // servers wrote to their own rows since the last poll (new rounds, state, stats), so that this
  // server's event stream shows their progress live too (the first poll only takes note).
  SyncStats poll_known();
  // Syncs one task now (after the scheduler or the API created it). Returns rounds added; 0 for
  // another server's task, which is never touched.
  int sync_task(const TaskRow& row, SyncStats* stats = nullptr);
  // Adopts one task folder if the database does not know it as this server's (claiming a row
  // from before owners that has its task_uid). Returns its row. Throws Error(conflict) when
  // another server owns its task_uid.
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
  struct Remote {
    std::string state, updated_at;
    int rounds = 0;
    std::string stats;  // dumped
  };
  void publish(const std::string& kind, const std::string& uid, json data);
  TaskRow claim(TaskRow row, const TaskRef& task, SyncStats* stats);
  void watch_remote(const TaskRow& row, SyncStats& stats);

  const Workspace& m_ws;
  Database& m_db;
  EventBus* m_bus;
  std::string m_owner;
  std::recursive_mutex m_mutex;  // one sync at a time
  std::map<std::string, Seen> m_seen;  // by uid
  std::map<std::string, Remote> m_remote;  // other servers' tasks as last published, by uid
};

// The summary of one task's ledger (the `stats` of TaskRow), computed from the files.
json ledger_stats(const Workspace& ws, const TaskRef& task);

// ---- serve --check ----
struct CheckItem {
  std::string task;    // task key
  std::string uid;
  std::string kind;    // "missing_in_db", "missing_on_disk", "uid_differs", "round_differs",
                       // "extra_rounds_in_db", "behind", "stats_differ", "state_differs", "unreadable",
                       // "owned_elsewhere" (its task_uid is another server's: a conflict)
  std::string detail;
  json to_json() const;
};

// Compares this server's rows only: other servers' rows are theirs to check.
struct CheckReport {
  std::string owner;        // the server whose rows were compared
  int tasks_on_disk = 0;
  int tasks_in_db = 0;      // this server's rows
  int tasks_of_other_servers = 0;
  int tasks_unclaimed = 0;  // rows from before owners that no server has claimed yet
  int rounds_on_disk = 0;
  int rounds_in_db = 0;
  std::vector<CheckItem> differences;  // the database says something the disk does not
  std::vector<CheckItem> pending;      // the database holds a prefix of the disk (a sync will catch up)
  bool clean() const { return differences.empty(); }
  json to_json() const;
};

// `owner` empty: server_owner(ws).
CheckReport check_database(const Workspace& ws, Database& db, const std::string& owner = {});

}  // namespace croq::web
