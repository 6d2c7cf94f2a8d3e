// Long-running children of the scheduler (drivers: croq tune, agent sessions, any command), behind
// a narrow interface so the scheduler is tested with a fake.
//
// The real launcher starts each child with ProcessRunner::start_detached (util/process.hpp, croq's
// one place that forks and execs), under a small supervisor process, forked from the server and
// detached from it (its own session and process group):
//   server ── fork ─> supervisor (setsid; ignores SIGTERM/SIGINT/SIGHUP; no inherited descriptors)
//                        └─ fork+exec ─> the command (stdout+stderr appended to the run log,
//                                        stdin /dev/null, default signal handling)
// When the command ends, the supervisor writes its status file atomically,
//   {"pid":<command pid>,"exit_code":<n or -1>,"signal":<n or 0>}
// and exits. Before starting the command it writes its own pid to the run's pid file, so a
// server that died between fork and recording the pid still finds its child. Output never passes through the server, so the child survives a server crash
// (kill -9) and a restarted server adopts it: the supervisor's pid plus its start time (from
// /proc, so a recycled pid is not mistaken for it) identify it, and the status file tells how it
// ended, even if it ended while no server was running. Stopping signals the process group:
// SIGTERM reaches the command (the supervisor ignores it and records the outcome); SIGKILL ends
// both, and then no status is written. launch() returns once the command has been exec'd, so a
// signal sent right after it always finds the process group and the command's own handlers.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/process.hpp"

namespace croq::web {

using croq::process_start_time;

struct LaunchSpec {
  std::vector<std::string> argv;   // argv[0] looked up on PATH if it has no '/'
  std::filesystem::path cwd;
  std::map<std::string, std::string> env_set;  // added to the server's environment
  std::filesystem::path log_path;      // appended to
  std::filesystem::path status_path;   // written when the command ends
  std::filesystem::path pid_path;      // the supervisor writes its pid here first (may be empty)
};

struct ChildHandle {
  int pid = 0;              // the supervisor: leader of the child's process group
  long long start = 0;      // its start time (clock ticks since boot), 0 if unknown
  std::filesystem::path status_path;
};

struct Launched {
  bool started = false;
  std::string error;        // why not (the program is missing, fork failed, ...)
  ChildHandle handle;
};

struct ChildStatus {
  enum class Kind { running, exited, vanished } kind = Kind::running;
  int exit_code = -1;       // exited: the command's exit code, or -1 when a signal ended it
  int signal = 0;           // exited: the signal that ended it
};

class ChildLauncher {
 public:
  virtual ~ChildLauncher() = default;
  virtual Launched launch(const LaunchSpec& spec) = 0;
  // Running, exited (status known) or vanished (gone without a status: killed with SIGKILL,
  // or the machine restarted).
  virtual ChildStatus poll(const ChildHandle& handle) = 0;
  // Sends `sig` to the child's process group (no-op when it is gone).
  virtual void signal(const ChildHandle& handle, int sig) = 0;
};

class SupervisedLauncher final : public ChildLauncher {
 public:
  explicit SupervisedLauncher(ProcessRunner& runner) : m_runner(runner) {}
  Launched launch(const LaunchSpec& spec) override;
  ChildStatus poll(const ChildHandle& handle) override;
  void signal(const ChildHandle& handle, int sig) override;

 private:
  ProcessRunner& m_runner;
};

// Reads a supervisor's status file; nullopt if absent or unreadable.
std::optional<ChildStatus> read_child_status(const std::filesystem::path& status_path);

}  // namespace croq::web
