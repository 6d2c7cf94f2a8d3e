// Starting child processes: the narrow interface at croq's process boundary. Everything croq runs
// (compilers, the measurement runners, ncu, agents) goes through a ProcessRunner, so that tests
// substitute a fake that records the command lines and replays canned results.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace croq {

struct ProcessSpec {
  std::vector<std::string> argv;                 // argv[0] is looked up on PATH if it has no '/'
  std::optional<std::filesystem::path> cwd;
  std::map<std::string, std::string> env_set;    // added to (or replacing in) the inherited env
  std::vector<std::string> env_unset;
  std::chrono::milliseconds timeout{0};          // zero: no limit
  std::string stdin_data;
  size_t max_capture_bytes = 64u << 20;          // per stream; the rest is counted, not kept
  bool new_process_group = true;                 // so a timeout kills the whole tree
  // Called with each chunk of stdout/stderr as it arrives (progress display, live logs).
  std::function<void(bool is_stderr, std::string_view chunk)> on_output;
  // Polled about every 200 ms while the child runs; when it returns true the child is stopped
  // (SIGTERM to its process group, SIGKILL after `stop_grace`) and ProcessResult::stopped is set.
  // Supervisors (croq agent run) use it to end a stalled or finished session.
  std::function<bool()> should_stop;
  std::chrono::milliseconds stop_grace{5000};
  // Non-zero: the signal the child gets when the thread that started it dies (prctl
  // PR_SET_PDEATHSIG), so that a supervisor killed with SIGKILL (croq sweep, croq tune) leaves no
  // orphan working on its tasks. The thread waits in run() while the child runs.
  int parent_death_signal = 0;
};

struct ProcessResult {
  bool started = false;          // false: the program could not be started (see spawn_error)
  std::string spawn_error;
  int exit_code = -1;            // valid when exited normally
  int term_signal = 0;           // non-zero when killed by a signal
  bool timed_out = false;        // killed by croq at the time limit
  bool stopped = false;          // stopped because ProcessSpec::should_stop returned true
  std::string out;
  std::string err;
  size_t out_dropped = 0;        // bytes beyond max_capture_bytes
  size_t err_dropped = 0;
  double wall_ms = 0;
  int pid = 0;

  bool ok() const { return started && !timed_out && term_signal == 0 && exit_code == 0; }
  // "exit 1", "signal 11 (SIGSEGV)", "timed out after 10000 ms", "not started: ..."
  std::string describe() const;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  virtual ProcessResult run(const ProcessSpec& spec) = 0;
};

// Runs real processes (fork/exec, pipes, poll, kill of the process group at the time limit).
class SystemProcessRunner : public ProcessRunner {
 public:
  ProcessResult run(const ProcessSpec& spec) override;
};

// The process-wide runner (a SystemProcessRunner unless a test installs another).
ProcessRunner& process_runner();
void set_process_runner(ProcessRunner* runner);  // nullptr restores the system runner

// PATH lookup; nullopt if not found or not executable.
std::optional<std::filesystem::path> find_executable(const std::string& name);

// Shell-quotes one word for scripts croq writes (cmd/build_iter<NNN>.sh and friends).
std::string shell_quote(const std::string& word);
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace croq
