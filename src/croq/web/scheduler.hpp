// The scheduler: a queue of tasks run as child processes, at most one per device slot (a GPU
// index, or "cpu"), with budgets, pause / resume / cancel / retry, restarts after crashes up to a
// limit, parking after a rate limit, and adoption of children that outlived a server.
//
// Outcomes of a run (docs/monitor.md):
//  - exit 0: done, or (restart_on_exit, budget not reached) queued again as a new session;
//  - exit 75 (EX_TEMPFAIL), or a non-zero exit whose last 16 KiB of output mentions a rate limit
//    ("rate limit", "rate-limit", "rate_limit", "ratelimit", "too many requests", "usage limit",
//    "http 429", "status 429", "error 429"; case-insensitive): parked for budgets.park_seconds,
//    doubled per consecutive park (at most 6 hours), then queued again; parks are not crashes;
//  - any other end (non-zero exit, a signal, or gone without a status): a crash; queued again
//    after 5 s x the crash count until budgets.max_restarts is exceeded, then failed;
//  - a stop the scheduler asked for (pause, cancel, budget reached): the state it asked for.
// Budgets: rounds (the ledger's stored rounds, round >= 1) and seconds (running time of all runs)
// are checked every tick; reaching one stops the child (SIGTERM, then SIGKILL after the grace
// period) and marks the task done. Every state change is written to the database, to the task's
// memory/<key>/<model>/monitor/state.json, to the task history, and published as an event.
//
// Several servers may share one database, each for its own workspace: a scheduler starts, stops,
// adopts and changes only the tasks its server owns (TaskRow::owner). An action on another
// server's task is recorded as a request (request()); the owner's scheduler carries it out at its
// next tick, or notes in the task's history why it could not.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "croq/web/child.hpp"
#include "croq/web/database.hpp"
#include "croq/web/event_bus.hpp"
#include "croq/web/task_spec.hpp"

namespace croq::web {

using Clock = std::function<std::chrono::system_clock::time_point()>;

struct SchedulerOptions {
  std::string croq_exe;                 // for {croq} and the tune / agent drivers
  int max_running = 0;                  // 0: only the one-per-device limit
  std::chrono::milliseconds stop_grace{10000};
  double crash_backoff_seconds = 5;
  double park_max_seconds = 6 * 3600;
  std::string owner;                    // this server (server_owner()); empty: server_owner(ws)
};

class Scheduler {
 public:
  Scheduler(const Workspace& ws, Database& db, EventBus* bus, ChildLauncher& launcher, SchedulerOptions options,
            Clock now = [] { return std::chrono::system_clock::now(); });

  // After a (re)start: notes in each task's history which children are adopted; the next tick
  // handles the ones that ended meanwhile.
  void recover();
  // Polls children, enforces budgets, unparks, starts queued tasks on free devices.
  void tick();

  // Creates a task: mints its task_uid and writes task_config.json first, then the database row.
  // Throws Error(conflict) if the task exists, Error(usage) on a bad spec.
  TaskRow create(const TaskSpec& spec);
  // pause | resume | cancel | retry on a task of this server. Throws Error(refused) when the
  // action does not apply to the task's state or the task is another server's (request() is for
  // those), Error(not_found) for an unknown task.
  TaskRow act(const std::string& uid, const std::string& action);
  // Records `action` for the owner of another server's task to carry out at its next tick.
  // Throws Error(refused) for a task no server has claimed yet, Error(usage) for an unknown action.
  TaskRequest request(const std::string& uid, const std::string& action);
  // Replaces the driver, device, budgets, mode or priority of a task that has no child running.
  // Throws Error(refused) for another server's task (its task_config.json is on that machine).
  TaskRow update_spec(const std::string& uid, const TaskSpec& spec);

  // Throws Error(refused), naming the owner, for another server's task: its spec lives in that
  // workspace's task_config.json.
  void require_own_spec(const TaskRow& row) const;

  // Device slots of this server's tasks: {"0": {"task": uid, "key": ..., "since": ...}, "cpu": null, ...}
  json devices();

  const std::string& owner() const { return m_owner; }

 private:
  struct LogTail {
    fs::path path;
    uint64_t offset = 0;
    std::string partial;
    int run = 0;
  };

  std::chrono::system_clock::time_point now() const { return m_now(); }
  std::string now_text() const;
  void commit(TaskRow& row, const std::string& history_kind, json history = json::object());
  TaskRow act_locked(const std::string& uid, const std::string& action);
  void carry_out_requests();
  ChildHandle handle_of(const TaskRow& row, const TaskRef& task) const;
  bool budget_reached(const TaskRow& row, const TaskSpec& spec, std::string* why) const;
  void request_stop(TaskRow& row, const std::string& target, const std::string& reason);
  void start(TaskRow& row);
  void on_exit(TaskRow& row, const ChildStatus& status);
  void tail_log(const TaskRow& row, const TaskRef& task, bool final);
  bool output_mentions_rate_limit(const TaskRef& task, int run) const;
  double running_seconds(const TaskRow& row) const;

  const Workspace& m_ws;
  Database& m_db;
  EventBus* m_bus;
  ChildLauncher& m_launcher;
  SchedulerOptions m_options;
  std::string m_owner;
  Clock m_now;
  std::mutex m_mutex;
  std::map<std::string, LogTail> m_tails;  // by task uid
};

// True if `text` holds one of the rate-limit phrases above (case-insensitive).
bool mentions_rate_limit(std::string_view text);

}  // namespace croq::web
