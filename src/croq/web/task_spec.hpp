// What a monitor task is: the tuning task (gpu key, dsl, shape key, model) plus how to drive it
// (the driver: croq's own search, an agent session, or any command given as an argument vector),
// where (the device slot it occupies), and within which budgets. Also the task states of the
// scheduler and the two small documents the monitor keeps on disk beside the ledger, so that the
// database can always be rebuilt from the files:
//
//   logs/<key>/<model>/task_config.json   the seeds' task document; the monitor adds
//       "mode" and "monitor": {"spec": <TaskSpec>, "created_by": "croq serve", "created_at": ...}
//   memory/<key>/<model>/monitor/state.json   (croq-monitor-state-v1) the scheduling state:
//       {"schema","task_uid","state","reason","runs","crash_count","park_count","run_seconds",
//        "not_before","stop_target","pid","pid_start","run_started_at","last_exit","updated_at"}
//   memory/<key>/<model>/monitor/run-<NNNN>.log          the run's stdout and stderr, interleaved
//   memory/<key>/<model>/monitor/run-<NNNN>.status.json  {"pid","exit_code","signal"} at its end
//
// TaskSpec JSON (the body of POST /api/v1/tasks; docs/api.md):
//   {"gpu":"sm90_NVIDIA_H200","dsl":"cuda","shape_key":"matmul_f16fp32_4096x4096x4096",
//    "model":"search","mode":"from_scratch","device":"0","priority":0,
//    "driver":{"kind":"command","argv":["bash","drive.sh","{shape_key}"],"cwd":"","env":{}},
//    "budgets":{"rounds":150,"seconds":0,"max_restarts":3,"park_seconds":900},
//    "restart_on_exit":false}
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/web/database.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::web {

// queued -> running -> (stopping ->) done | failed | cancelled | paused | parked | queued (restart)
// external: a task found on disk with no driver; the monitor only indexes it.
enum class RunState { external, queued, running, stopping, paused, parked, done, failed, cancelled };
const char* run_state_name(RunState s);
std::optional<RunState> parse_run_state(const std::string& s);
// States in which a child process may exist.
bool state_has_child(const std::string& state);

struct Driver {
  std::string kind = "none";          // "command", "tune", "agent" or "none"
  std::vector<std::string> argv;      // command: the program and its arguments; tune/agent: extra arguments
  std::string cwd;                    // relative to the workspace root; empty: the root
  std::map<std::string, std::string> env;
};

struct Budgets {
  int rounds = 0;          // stop once the ledger holds this many rounds (round >= 1); 0: none
  double seconds = 0;      // stop once the task has run this long, all runs together; 0: none
  int max_restarts = 3;    // crashes restarted before the task is marked failed
  double park_seconds = 900;  // first wait after a rate limit; doubles per consecutive park (max 6 h)
};

struct TaskSpec {
  std::string gpu;
  std::string dsl;
  std::string shape_key;
  std::string model;
  std::string mode = "from_scratch";
  std::string device;      // scheduling slot: a GPU index ("0"), a UUID, or "cpu"
  int priority = 0;        // higher first
  Driver driver;
  Budgets budgets;
  bool restart_on_exit = false;  // a run that ends cleanly before a budget is reached starts again

  json to_json() const;
  // Validates every field; throws Error(usage) naming the field. `defaults_gpu` fills a missing
  // gpu key (the server's detected or configured one).
  static TaskSpec from_json(const json& j, const std::string& default_gpu = {});
  TaskRef task() const;
  std::string key() const { return task().id(); }
};

inline constexpr const char* k_monitor_state_schema = "croq-monitor-state-v1";
inline constexpr int k_rate_limit_exit_code = 75;  // EX_TEMPFAIL (sysexits.h)

// The driver's argument vector with {placeholders} expanded, element by element (never a shell):
// {croq} {root} {gpu} {dsl} {shape_key} {model} {mode} {device} {task_uid} {rounds_budget}.
// tune: croq tune <shape_key> --dsl --gpu --model --task-uid [--rounds N] <argv...>
// agent: croq agent run --dsl --gpu --shape-key --model --task-uid <argv...>
struct ExpandContext {
  std::string croq_exe;
  std::string root;
  std::string task_uid;
};
std::vector<std::string> expand_argv(const TaskSpec& spec, const ExpandContext& ctx);
// The child's extra environment: CROQ_ROOT CROQ_GPU CROQ_DSL CROQ_SHAPE_KEY CROQ_MODEL CROQ_MODE
// CROQ_DEVICE CROQ_TASK_UID CROQ_RUN CROQ_BUDGET_ROUNDS CROQ_BUDGET_SECONDS CROQ_BIN, and
// CUDA_VISIBLE_DEVICES for a GPU device; then the driver's own env.
std::map<std::string, std::string> child_env(const TaskSpec& spec, const ExpandContext& ctx, int run);

// Files of the monitor beside the ledger.
fs::path monitor_dir(const Workspace& ws, const TaskRef& task);
fs::path monitor_state_path(const Workspace& ws, const TaskRef& task);
fs::path run_log_path(const Workspace& ws, const TaskRef& task, int run);
fs::path run_status_path(const Workspace& ws, const TaskRef& task, int run);

json monitor_state_doc(const TaskRow& row);
void write_monitor_state(const Workspace& ws, const TaskRef& task, const TaskRow& row);
std::optional<json> read_monitor_state(const Workspace& ws, const TaskRef& task);

}  // namespace croq::web
