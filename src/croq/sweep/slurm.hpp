// Slurm at croq's process boundary: the few commands `croq sweep submit --slurm`, `croq sweep
// status` and `croq sweep stop` need (sbatch, squeue, sacct, scontrol, scancel) behind a narrow
// interface. The real client runs them through the process runner (util/process.hpp), so unit tests
// replay their answers; tests/slurm/start_cluster.sh starts a real one-node cluster for the CLI test.
//
// A job's array tasks are seen as squeue lists them while they are queued or running, and as sacct
// records them once they have ended; where accounting is off (no slurmdbd: sacct says "accounting
// storage is disabled"), as `scontrol show job` still reports them (the controller remembers ended
// jobs for MinJobAge, 300 s by default). The ledgers stay the truth about rounds either way.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq::sweep {

struct SlurmTask {
  int index = -1;          // the array task id
  std::string state;       // Slurm's: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  std::string reason;      // why it waits (squeue's, scontrol's), empty or "None" otherwise
  std::string node;
  std::string exit_code;   // "exit:signal" of an ended task ("0:0")
  std::string elapsed;     // run time so far ("00:01:07")
  std::string source;      // squeue | sacct | scontrol
  json to_json() const;
};

struct SlurmJobView {
  std::vector<SlurmTask> tasks;    // ordered by index, one per index
  std::string accounting;          // how ended tasks were seen: sacct | scontrol | "" (not at all)
  std::vector<std::string> notes;  // a command that failed and what it said
  json to_json() const;
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  // `sbatch --parsable <script>` run in `cwd`: the job id. Throws Error(failure) with sbatch's
  // message, Error(no_device) when sbatch cannot be started.
  virtual std::string submit(const std::filesystem::path& script, const std::filesystem::path& cwd) = 0;
  // The job's array tasks (squeue for the live ones; sacct, else scontrol, for the ended ones).
  virtual SlurmJobView job(const std::string& job_id) = 0;
  // `scancel <job>`. Throws Error(failure) with scancel's message.
  virtual void cancel(const std::string& job_id) = 0;
};

// The commands on PATH; the environment passes through (SLURM_CONF names the cluster's slurm.conf).
class CommandSlurm : public SlurmClient {
 public:
  std::string submit(const std::filesystem::path& script, const std::filesystem::path& cwd) override;
  SlurmJobView job(const std::string& job_id) override;
  void cancel(const std::string& job_id) override;
};

// Queued or running (PENDING, RUNNING, CONFIGURING, COMPLETING, SUSPENDED, REQUEUED, RESIZING, ...):
// a task that still holds or waits for a node.
bool slurm_state_is_live(const std::string& state);

// The parsers behind CommandSlurm (pure; the unit tests feed them recorded outputs).
// squeue -h -r -j <job> -o '%F|%K|%T|%r|%N|%M'
std::vector<SlurmTask> parse_squeue(const std::string& out);
// sacct -n -P -X -j <job> -o JobID,State,ExitCode,Elapsed,NodeList (ranges such as 12_[3-5] of
// tasks that never started are expanded)
std::vector<SlurmTask> parse_sacct(const std::string& out);
// scontrol -o show job <job>: one line per task, Key=Value words
std::vector<SlurmTask> parse_scontrol_jobs(const std::string& out);
// "3", "[0-3,7]", "0-3%2": the indexes of an array spec (empty on anything else).
std::vector<int> expand_array_indexes(const std::string& spec);

}  // namespace croq::sweep
