// Starting child processes: the narrow interface at croq's process boundary. Everything croq runs
// (compilers, the measurement runners, ncu, agents, the monitor's background runs) goes through a
// ProcessRunner, so that tests substitute a fake that records the command lines and replays canned
// results. process.cpp holds croq's only fork() and its only exec (a test checks it), with one
// preparation of the program, its arguments and its environment.
#pragma once
#include <signal.h>

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
  // The child's standard streams are croq's own instead of pipes: it reads croq's stdin and writes
  // to croq's stderr, its stdout included (so that croq's stdout stays one JSON document);
  // nothing is captured. For a command croq runs on a user's behalf (croq gpu lease -- CMD).
  bool stdout_to_stderr = false;
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

// A command started in the background, detached from croq (the monitor's long-running runs):
// croq forks a small supervisor in a session and process group of its own, which ignores
// SIGTERM/SIGINT/SIGHUP, writes its pid to `pid_path`, starts the command (stdin /dev/null,
// stdout and stderr appended to `log_path`, default signal handling) and, when it ends, writes
//   {"pid":<command pid>,"exit_code":<n or -1>,"signal":<n or 0>}
// to `status_path` atomically and exits. Output never passes through croq, so the command
// outlives croq (kill -9) and its outcome is known afterwards. start_detached returns once the
// command has been exec'd, so a signal sent to the group right after it finds the command.
struct DetachedSpec {
  std::vector<std::string> argv;                // argv[0] looked up on PATH if it has no '/'
  std::filesystem::path cwd;
  std::map<std::string, std::string> env_set;  // added to croq's environment
  std::filesystem::path log_path;               // appended to
  std::filesystem::path status_path;            // written when the command ends
  std::filesystem::path pid_path;               // the supervisor's pid, written first (may be empty)
  std::string who = "croq";                     // names croq in the log line of a failed exec
};

struct DetachedProcess {
  bool started = false;
  std::string error;         // why not (the program is missing, fork failed, ...)
  int pid = 0;               // the supervisor: leader of the command's process group
  long long start_time = 0;  // its start time (process_start_time), 0 if unknown
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  virtual ProcessResult run(const ProcessSpec& spec) = 0;
  // Starts a detached, supervised command (see DetachedSpec). A runner that cannot (a test's
  // fake of run()) says so.
  virtual DetachedProcess start_detached(const DetachedSpec& spec);
};

// Runs real processes (fork/exec, pipes, poll, kill of the process group at the time limit).
class SystemProcessRunner : public ProcessRunner {
 public:
  ProcessResult run(const ProcessSpec& spec) override;
  DetachedProcess start_detached(const DetachedSpec& spec) override;
};

// The start time of a process (field 22 of /proc/<pid>/stat, clock ticks since boot); nullopt if
// there is none. With the pid it identifies a process: a recycled pid has another start time.
std::optional<long long> process_start_time(int pid);
// 'R', 'S', 'Z', ... or 0 when there is no such process.
char process_state(int pid);
// Sends `sig` to the process group led by `pid` if that process is still the one that started
// at `start_time` (0: unknown, not checked); false when it is gone or the pid was reused.
bool signal_process_group(int pid, long long start_time, int sig);
// Collects the exit of a child of this process without waiting (a no-op for other processes).
void reap_if_exited(int pid);

// Replaces this process by `argv` (argv[0] a path), keeping its pid, standard streams and exit
// code; returns only on failure, with the reason.
std::string replace_process(const std::vector<std::string>& argv);

// The process-wide runner (a SystemProcessRunner unless a test installs another).
ProcessRunner& process_runner();
void set_process_runner(ProcessRunner* runner);  // nullptr restores the system runner

// PATH lookup; nullopt if not found or not executable.
std::optional<std::filesystem::path> find_executable(const std::string& name);

// Installs `handler` for SIGINT and SIGTERM while it lives; the earlier handlers come back when it
// goes (a stop flag for a sweep or a tune of several shapes, a note before a tune ends).
class ScopedStopSignals {
 public:
  explicit ScopedStopSignals(void (*handler)(int));
  ~ScopedStopSignals();
  ScopedStopSignals(const ScopedStopSignals&) = delete;
  ScopedStopSignals& operator=(const ScopedStopSignals&) = delete;

 private:
  struct sigaction m_old_int{}, m_old_term{};
};

// Shell-quotes one word for scripts croq writes (cmd/build_iter<NNN>.sh and friends).
std::string shell_quote(const std::string& word);
std::string shell_join(const std::vector<std::string>& argv);
// The words of a command line or flags string as a POSIX shell splits them: whitespace separates,
// single and double quotes and backslash escapes are honoured; no expansion.
std::vector<std::string> split_shell_words(const std::string& text);

}  // namespace croq
