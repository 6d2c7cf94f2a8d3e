// The system process runner of process.hpp: fork/exec with pipes for stdin/stdout/stderr,
// a poll loop that enforces the time limit, and SIGKILL of the child's process group on timeout.
#include "croq/util/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "croq/util/time.hpp"

extern char** environ;

namespace croq {

namespace {

ProcessRunner* g_runner = nullptr;

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

}  // namespace

std::string ProcessResult::describe() const {
  if (!started) return "not started: " + spawn_error;
  if (timed_out) return fmt::format("timed out after {:.0f} ms", wall_ms);
  if (stopped) return fmt::format("stopped by croq after {:.0f} ms", wall_ms);
  if (term_signal != 0) {
    const char* name = ::sigabbrev_np(term_signal);
    return fmt::format("signal {} (SIG{})", term_signal, name ? name : "?");
  }
  return fmt::format("exit {}", exit_code);
}

std::optional<std::filesystem::path> find_executable(const std::string& name) {
  if (name.empty()) return std::nullopt;
  auto is_exec = [](const std::filesystem::path& p) {
    struct stat st{};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (is_exec(name)) return std::filesystem::path(name);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (is_exec(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                              "0123456789_-./=:,+@%") == std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += "'";
  return out;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i) out += ' ';
    out += shell_quote(argv[i]);
  }
  return out;
}

ProcessResult SystemProcessRunner::run(const ProcessSpec& spec) {
  ProcessResult result;
  if (spec.argv.empty()) {
    result.spawn_error = "empty command";
    return result;
  }
  auto exe = find_executable(spec.argv[0]);
  if (!exe) {
    result.spawn_error = fmt::format("{}: command not found", spec.argv[0]);
    return result;
  }

  // Environment for the child.
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& k : spec.env_unset) env.erase(k);
  for (const auto& [k, v] : spec.env_set) env[k] = v;
  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string exe_path = exe->string();
  const std::string cwd = spec.cwd ? spec.cwd->string() : std::string();

  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.spawn_error = std::string("pipe: ") + std::strerror(errno);
    for (int* p : {in_pipe, out_pipe, err_pipe, exec_pipe}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
    return result;
  }

  Stopwatch clock;
  const pid_t parent_pid = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    result.spawn_error = std::string("fork: ") + std::strerror(errno);
    for (int* p : {in_pipe, out_pipe, err_pipe, exec_pipe}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
    return result;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on.
    if (spec.new_process_group) ::setpgid(0, 0);
    if (spec.parent_death_signal != 0) {
      ::prctl(PR_SET_PDEATHSIG, spec.parent_death_signal);
      if (::getppid() != parent_pid) ::_exit(127);  // the parent died before prctl took effect
    }
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      int err = errno;
      (void)!::write(exec_pipe[1], &err, sizeof err);
      ::_exit(127);
    }
    ::execve(exe_path.c_str(), argv.data(), envp.data());
    int err = errno;
    (void)!::write(exec_pipe[1], &err, sizeof err);
    ::_exit(127);
  }
  result.pid = pid;
  if (spec.new_process_group) ::setpgid(pid, pid);
  close_fd(in_pipe[0]);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  close_fd(exec_pipe[1]);

  int exec_errno = 0;
  ssize_t got = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  close_fd(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    close_fd(in_pipe[1]);
    close_fd(out_pipe[0]);
    close_fd(err_pipe[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    result.spawn_error = fmt::format("{}: {}", spec.argv[0], std::strerror(exec_errno));
    return result;
  }
  result.started = true;

  // Feed stdin without blocking on it. A child that exits before reading all of it must not kill
  // croq with SIGPIPE: the write then fails with EPIPE, and feeding stops.
  if (!spec.stdin_data.empty()) {
    struct sigaction current{};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
  }
  size_t in_off = 0;
  if (spec.stdin_data.empty()) close_fd(in_pipe[1]);
  else ::fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);

  auto deadline = std::chrono::steady_clock::now() + spec.timeout;
  bool killed = false;
  // should_stop: SIGTERM first, SIGKILL once the grace period has passed.
  std::optional<std::chrono::steady_clock::time_point> stop_kill_at;
  auto poll_stop = [&] {
    if (killed) return;
    if (!stop_kill_at && spec.should_stop && spec.should_stop()) {
      ::kill(spec.new_process_group ? -pid : pid, SIGTERM);
      result.stopped = true;
      stop_kill_at = std::chrono::steady_clock::now() + spec.stop_grace;
    } else if (stop_kill_at && std::chrono::steady_clock::now() >= *stop_kill_at) {
      ::kill(spec.new_process_group ? -pid : pid, SIGKILL);
      killed = true;
    }
  };
  char buf[1 << 16];
  while (out_pipe[0] >= 0 || err_pipe[0] >= 0) {
    pollfd fds[3];
    int nfds = 0;
    int idx_out = -1, idx_err = -1, idx_in = -1;
    if (out_pipe[0] >= 0) { idx_out = nfds; fds[nfds++] = {out_pipe[0], POLLIN, 0}; }
    if (err_pipe[0] >= 0) { idx_err = nfds; fds[nfds++] = {err_pipe[0], POLLIN, 0}; }
    if (in_pipe[1] >= 0) { idx_in = nfds; fds[nfds++] = {in_pipe[1], POLLOUT, 0}; }
    int wait_ms = 200;
    if (spec.timeout.count() > 0 && !killed) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        ::kill(spec.new_process_group ? -pid : pid, SIGKILL);
        killed = true;
        result.timed_out = true;
        left = 200;
      }
      wait_ms = static_cast<int>(std::min<long long>(left, 200));
    }
    poll_stop();
    int rc = ::poll(fds, static_cast<nfds_t>(nfds), wait_ms);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    auto drain = [&](int idx, int& fd, std::string& sink, size_t& dropped, bool is_err) {
      if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0 && errno == EINTR) return;
        close_fd(fd);
        return;
      }
      std::string_view chunk(buf, static_cast<size_t>(n));
      if (spec.on_output) spec.on_output(is_err, chunk);
      size_t room = spec.max_capture_bytes > sink.size() ? spec.max_capture_bytes - sink.size() : 0;
      sink.append(chunk.substr(0, std::min(room, chunk.size())));
      if (chunk.size() > room) dropped += chunk.size() - room;
    };
    drain(idx_out, out_pipe[0], result.out, result.out_dropped, false);
    drain(idx_err, err_pipe[0], result.err, result.err_dropped, true);
    if (idx_in >= 0 && (fds[idx_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
      if (fds[idx_in].revents & (POLLERR | POLLHUP)) {
        close_fd(in_pipe[1]);
      } else {
        ssize_t n = ::write(in_pipe[1], spec.stdin_data.data() + in_off,
                            spec.stdin_data.size() - in_off);
        if (n > 0) in_off += static_cast<size_t>(n);
        if (n < 0 && errno != EAGAIN && errno != EINTR) close_fd(in_pipe[1]);
        if (in_off >= spec.stdin_data.size()) close_fd(in_pipe[1]);
      }
    }
  }
  close_fd(in_pipe[1]);

  // Both streams closed; wait for the exit, still honouring the time limit.
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (spec.timeout.count() > 0 && !killed && std::chrono::steady_clock::now() >= deadline) {
      ::kill(spec.new_process_group ? -pid : pid, SIGKILL);
      killed = true;
      result.timed_out = true;
    }
    poll_stop();
    ::usleep(1000);
  }
  if (killed && spec.new_process_group) ::kill(-pid, SIGKILL);  // stragglers in the group
  result.wall_ms = clock.elapsed_ms();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

ProcessRunner& process_runner() {
  static SystemProcessRunner system_runner;
  return g_runner ? *g_runner : system_runner;
}

void set_process_runner(ProcessRunner* runner) { g_runner = runner; }

}  // namespace croq
