// The monitor service behind `croq serve`: the database, the ledger sync, the scheduler and the
// event bus, driven by one background loop (sync the changed ledgers, then let the scheduler act,
// every poll interval, or at once when an action wakes it), plus a slower loop that refreshes the
// GPU facts for the system panel. The HTTP layer (http_server.hpp) only calls into this.
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "croq/gpu/device_key.hpp"
#include "croq/web/child.hpp"
#include "croq/web/database.hpp"
#include "croq/web/event_bus.hpp"
#include "croq/web/ledger_sync.hpp"
#include "croq/web/scheduler.hpp"

namespace croq::web {

struct MonitorOptions {
  int poll_ms = 500;           // how often the ledgers are checked for changes
  int scan_every = 4;          // a full folder scan (new tasks) every N polls
  bool run_scheduler = true;   // false: index and show only, start nothing
  bool query_gpus = true;      // false: no nvidia-smi calls (tests)
  SchedulerOptions scheduler;
  std::string default_gpu;     // gpu key for tasks that name none (detected GPU, or CROQ_GPU)
  std::set<std::string> verbs; // croq verbs of this build, to accept the tune / agent drivers
  json server_facts = json::object();  // shown on the system panel (bind, auth, version, ...)
  std::string owner;           // this server as the owner of its task rows; empty: server_owner(ws)
};

// What an action asked at this server did: carried out on a task of this server, or recorded as
// a request for the owner of another server's task.
struct ActResult {
  TaskRow task;
  std::optional<TaskRequest> request;
};

class Monitor {
 public:
  Monitor(const Workspace& ws, Database& db, ChildLauncher& launcher, MonitorOptions options);
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // Indexes the workspace and adopts children that survived a server restart. Call before start().
  SyncStats initial_sync();
  void start();
  void stop();
  // One loop step, synchronously (tests, `serve --once`).
  void step(bool full_scan);
  void wake();

  // Validates a task spec (JSON body of POST /api/v1/tasks) and creates the task.
  TaskRow create_task(const json& body);
  TaskRow update_task(const std::string& uid, const json& body);
  ActResult act(const std::string& uid, const std::string& action);

  // This server's name as the owner of task rows, and whether a row is this server's (whose
  // files, logs and children are on this machine).
  const std::string& owner() const { return m_options.owner; }
  bool owns(const TaskRow& row) const { return row.owner == m_options.owner; }

  json system_info();
  // A fact shown on the system panel (the bound port is known only after the HTTP side binds).
  void set_server_fact(const std::string& key, const json& value);
  json task_json(const TaskRow& row) const;  // the API form of a task

  const Workspace& workspace() const { return m_ws; }
  Database& db() { return m_db; }
  EventBus& bus() { return m_bus; }
  LedgerSync& sync() { return m_sync; }
  Scheduler& scheduler() { return m_scheduler; }
  const MonitorOptions& options() const { return m_options; }

 private:
  void loop();
  void gpu_loop();
  void check_driver_available(const TaskSpec& spec) const;

  const Workspace& m_ws;
  Database& m_db;
  MonitorOptions m_options;
  EventBus m_bus;
  LedgerSync m_sync;
  Scheduler m_scheduler;

  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_stop = false;
  bool m_woken = false;
  std::thread m_thread;
  std::thread m_gpu_thread;
  std::string m_started_at;
  std::chrono::steady_clock::time_point m_started;
  long long m_steps = 0;
  SyncStats m_last_sync;
  SyncStats m_last_scan;
  std::vector<GpuInfo> m_gpus;
  std::string m_gpu_error;
  std::string m_gpu_queried_at;
};

}  // namespace croq::web
