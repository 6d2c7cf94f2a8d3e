// `croq sweep`: the from-scratch sweep of the croq-tune-from-scratch skill, run by croq itself,
// non-stop over every device of the machine (docs/sweep.md).
//
// A manifest gives the shapes in order; tuning/state.json (state.hpp) keeps each shape's status in
// the skill's format. The queue follows the skill: the shapes left active first, then the
// manifest's, then (from scratch) every far shape of the dtypes in state.json and every shape
// marked needs_scratch; a shape done at its budget is skipped, one closed early is reopened, one
// begun is resumed. One worker per device (or `workers_per_device`), pinned to it (`--device`,
// CUDA_VISIBLE_DEVICES, CROQ_DEVICE; the device's own lease), takes the next shape and runs its driver to the round
// budget: croq's own search (`croq tune <key> --device <d>`) or an agent (`croq agent run <key>`,
// one agent session per shape, restarted when it dies). Builds and other CPU work of the workers
// overlap; each device's lease keeps its measurements apart. A device that fails its health check
// is skipped and reported (never reset); the shape it held goes back to the queue for another
// worker. Every child dies with the sweep (PR_SET_PDEATHSIG), and the ledgers are crash-safe, so a
// sweep killed at any moment loses no stored round and resumes where it stopped when run again.
//
// tuning/sweep-log.jsonl records the sweep's events (one JSON object a line: event, key, device,
// at, t_ms since the sweep began), tuning/sweep.json the running sweep (pid, options, devices).
#pragma once
#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "croq/sweep/devices.hpp"
#include "croq/sweep/manifest.hpp"
#include "croq/sweep/state.hpp"
#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::sweep {

struct SweepOptions {
  std::filesystem::path root;
  std::filesystem::path croq_exe;
  std::string gpu_key;  // the tasks' device key
  std::string dsl;
  std::string model = "croq-search";
  Mode mode = Mode::from_scratch;
  int rounds = k_default_rounds;  // each shape's round budget (current_iter to reach)
  std::string driver = "search";  // search | agent | command
  // driver command: argv template, each element expanded ({croq} {root} {key} {device} {visible}
  // {gpu} {dsl} {model} {rounds}: the rounds still to run, {target}); never through a shell.
  std::vector<std::string> command;
  std::string agent;              // croq agent run --agent
  std::string agent_config;       // croq agent run --config
  std::string family;             // croq tune --family
  uint64_t seed = 0;
  double explore = 0.15;
  std::string profile_preset = "full";
  int step_timeout_s = 900;
  int max_restarts = 3;           // consecutive driver deaths without progress before a shape fails
  std::string gpus = "all";
  // Workers (drivers) per device: 1 keeps a device to one shape at a time; N > 1 runs N shapes on
  // each device at once, their builds and other CPU work side by side while the device's lease
  // lets one measurement or profile run at a time (a machine with one GPU and many cores); 0:
  // auto_workers_per_device.
  int workers_per_device = 0;
  // false: one task of a Slurm job array (slurm_sweep.hpp), one of many processes working on the
  // workspace at once: no workspace-wide lock (tuning/.sweep.lock) and no tuning/sweep.json; the
  // per-shape locks and state.json's merged writes keep the tasks apart.
  bool exclusive = true;
  bool manifest_only = false;  // the manifest's shapes only (not state.json's far/needs_scratch shapes too)
  json log_fields = json::object();  // added to every event of tuning/sweep-log.jsonl (slurm_job, slurm_task)
};

// One shape of the sweep's queue and what the skill's rules say of it.
struct QueueItem {
  std::string key;
  ShapeSpec shape;
  Plan plan = Plan::start;
  int stored_rounds = 0;
  std::string origin;  // manifest | state:active | state:far | state:needs_scratch
  json to_json() const;
};

// The queue (pure: tests call it). `stored_rounds(key)` is the task's last stored round.
std::vector<QueueItem> plan_sweep(const json& state, const Manifest& manifest, Mode mode, int target_rounds,
                                  const std::function<int(const std::string& key)>& stored_rounds);

// The best kernel of the nearest tuned shape (same operator and dtype, another shape, a stored
// KEEP with recorded parameters), for the from-current-best mode. Distance: the sum of
// |ln(d/d')| over M, N and K.
struct StartFrom {
  TaskRef task;
  std::string kernel;
  double tflops = 0;
  json params;
  std::string family;
  std::filesystem::path source;
  double distance = 0;
  json to_json() const;
};
std::optional<StartFrom> nearest_best(const Workspace& ws, const TaskRef& target);

// `--workers-per-device auto`: 1 for the cpp dsl (its device is the CPU the builds would share)
// and for agent or command drivers (one session per device, as the skill runs them); for croq's
// search on GPUs, one worker per 4 of the machine's cores shared among its devices, 1 to 4 (an
// nvcc build keeps about one core busy for tens of seconds while a round's GPU work takes seconds).
int auto_workers_per_device(const std::string& dsl, const std::string& driver, unsigned cores, size_t devices);

// The last stored round of a task (0 when it has no ledger).
int stored_rounds_of(const Workspace& ws, const TaskRef& t);

// A line of progress (already formatted) or an event for the caller.
using Note = std::function<void(const std::string& line)>;

// Runs a sweep to its end, or until `stop` becomes true (SIGINT/SIGTERM: every child is stopped
// and resumes on the next run). Returns the summary {shapes, devices, done, failed, pending,
// stopped}. Throws Error(busy) when another sweep runs on the workspace, Error(no_device) when no
// device is healthy.
json run_sweep(const SweepOptions& o, const Manifest& manifest, DeviceSource& devices, const std::atomic<bool>& stop,
               const Note& note);

// `croq sweep status`: state.json with each entry's rounds refreshed from its ledger (read-only),
// and whether a sweep runs now (pid, devices).
json sweep_status(const std::filesystem::path& root);

// `croq sweep stop`: SIGTERM to the running sweep (it stops its children, which resume on the
// next run); with `wait`, waits up to `timeout` for it to end. Returns {stopped, pid, was_running}.
json stop_sweep(const std::filesystem::path& root, bool wait, std::chrono::milliseconds timeout);

std::filesystem::path sweep_log_path(const std::filesystem::path& root);
std::filesystem::path sweep_doc_path(const std::filesystem::path& root);
std::filesystem::path sweep_lock_path(const std::filesystem::path& root);
// The lock a sweep holds while it works on a shape (tuning/.sweep-shape.<key>.lock): a shape held
// by another process (a Slurm task, another sweep) is left to it.
std::filesystem::path shape_lock_path(const std::filesystem::path& root, const std::string& key);

}  // namespace croq::sweep
