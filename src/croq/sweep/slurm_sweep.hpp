// `croq sweep submit --slurm`: the sweep as a Slurm job array, one task per shape (docs/sweep.md).
//
// The submission plans the queue as `croq sweep run` does (tuning/state.json and the ledgers: a
// shape done at its budget is skipped, one closed below it reopened, one begun resumed), writes
// tuning/slurm/<stamp>/ (submission.json: the options and the shape of each array index; job.sh:
// the sbatch script, `--array=0-<n-1>`, `--gres=gpu:1`, the partition, account, time limit and extra
// sbatch options passed through; logs/) and submits it; tuning/slurm.json names the latest job.
// Each task runs `croq sweep task`: the sweep of its one shape on the GPU Slurm gave it, on the
// shared workspace, under the shape's lock (a shape another process holds is left to it) and with
// merged writes to state.json, so status, skip-done and resume hold as for a local sweep.
// `croq sweep status` joins squeue/sacct (scontrol where accounting is off) with the ledgers;
// `croq sweep stop` cancels the job (scancel): its tasks stop their drivers and the shapes resume on
// the next run or submission.
#pragma once
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "croq/sweep/devices.hpp"
#include "croq/sweep/manifest.hpp"
#include "croq/sweep/slurm.hpp"
#include "croq/sweep/sweep.hpp"
#include "croq/util/json.hpp"

namespace croq::sweep {

struct SlurmOptions {
  std::string partition;      // --partition (empty: the cluster's default)
  std::string account;        // --account
  std::string time_limit;     // --time, per task ("2-00:00:00", "90")
  std::string gres = "gpu:1"; // --gres of each task ("none": no --gres line)
  int cpus_per_task = 0;      // --cpus-per-task (0: the cluster's default)
  int max_parallel = 0;       // --array=0-<n-1>%<max_parallel> (0: no limit)
  std::string job_name = "croq-sweep";
  std::vector<std::string> sbatch_args;  // each one more #SBATCH line, as given ("--constraint=h200")
  bool dry_run = false;       // write the script and the submission, submit nothing
};

std::filesystem::path slurm_doc_path(const std::filesystem::path& root);  // tuning/slurm.json

// The sbatch script of a submission (pure: tests read it).
std::string slurm_job_script(const json& submission, const SlurmOptions& so);

// Plans, writes and submits. Output: {job_id, dir, script, submission, tasks: [{index, key, plan,
// stored_rounds}], skipped_done, dry_run}. Throws Error(busy) while a local sweep runs on the
// workspace or the previous job still has tasks queued or running; Error(usage) for a bad option
// (nothing written); sbatch's refusal as Error(failure) (the submission folder is removed).
json submit_slurm_sweep(const SweepOptions& o, const Manifest& manifest, const SlurmOptions& so, SlurmClient& slurm,
                        const Note& note);

// The device a task runs on: among the source's devices, the one Slurm gave the task
// (SLURM_STEP_GPUS, SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES, the first of each list), else the
// only device there is, else the first. Throws Error(no_device) when there is none.
Device slurm_task_device(DeviceSource& source, const std::function<std::optional<std::string>(const char*)>& env);

// `croq sweep task`: the sweep of the shape at `index` of a submission. Returns run_sweep's summary
// with {slurm_job, slurm_task, key}.
json run_slurm_task(const std::filesystem::path& root, const std::filesystem::path& submission, int index,
                    const std::filesystem::path& croq_exe, const std::atomic<bool>& stop, const Note& note);

// The latest job joined with the ledgers: `status` (sweep_status's document) gains `slurm`
// ({job_id, submitted_at, dir, accounting, tasks: [{index, key, state, ...}], counts, live, notes})
// and each shape row of the job its `slurm` task ({index, state, node, exit_code, elapsed}).
// Unchanged when the workspace has no Slurm job.
void add_slurm_status(json& status, const std::filesystem::path& root, SlurmClient& slurm);

// Cancels the latest job when it still has live tasks; with `wait`, until none is left (up to
// `timeout`). Output: {job_id, was_live, live_tasks, cancelled, stopped}; null without a job.
json stop_slurm_sweep(const std::filesystem::path& root, SlurmClient& slurm, bool wait, std::chrono::milliseconds timeout);

}  // namespace croq::sweep
