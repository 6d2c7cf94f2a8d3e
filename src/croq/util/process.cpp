// The system process runner of process.hpp: fork/exec with pipes for stdin/stdout/stderr,
// a poll loop that enforces the time limit, and SIGKILL of the child's process group on timeout;
// the detached, supervised start of the monitor's runs. croq's one fork() is fork_child() and its
// one exec is exec_image(): every child starts through them, from one ExecImage.
#include "croq/util/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "croq/util/fs.hpp"
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

// What a child execs, prepared before fork (croq may be multi-threaded, so between fork and exec
// only async-signal-safe calls are made: no allocation, no locks): the program found on PATH, the
// arguments and the environment (croq's, with `unset` removed and `set` added) as C arrays.
struct ExecImage {
  std::string exe;
  std::string cwd;  // empty: croq's
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::vector<char*> argv;
  std::vector<char*> envp;

  ExecImage() = default;
  ExecImage(const ExecImage&) = delete;  // argv and envp point into args and env
  ExecImage& operator=(const ExecImage&) = delete;

  // False (with `error`) when the program cannot be found.
  bool prepare(const std::vector<std::string>& command, const std::string& program, const std::string& dir,
               const std::map<std::string, std::string>& set, const std::vector<std::string>& unset,
               std::string& error) {
    auto found = find_executable(program);
    if (!found) {
      error = fmt::format("{}: command not found", command.front());
      return false;
    }
    exe = found->string();
    cwd = dir;
    std::map<std::string, std::string> vars;
    for (char** e = environ; e && *e; ++e) {
      std::string kv(*e);
      auto eq = kv.find('=');
      if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& k : unset) vars.erase(k);
    for (const auto& [k, v] : set) vars[k] = v;
    for (const auto& [k, v] : vars) env.push_back(k + "=" + v);
    args = command;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    return true;
  }
};

// How the child is set up between fork and exec. Async-signal-safe.
struct ChildSetup {
  int stdin_fd = -1;    // dup2'ed onto 0, 1, 2 (-1: inherited)
  int stdout_fd = -1;
  int stderr_fd = -1;
  int keep_fd = -1;     // dup2'ed onto 3, close-on-exec (a pipe whose end tells the parent of the exec)
  int close_from = -1;  // every descriptor from this one up is closed (-1: none)
  int max_fd = 65536;
  bool new_session = false;
  bool new_process_group = false;
  int parent_death_signal = 0;
  pid_t parent_pid = 0;
  bool ignore_stop_signals = false;   // SIGTERM, SIGINT, SIGHUP ignored (the supervisor)
  bool default_stop_signals = false;  // SIGTERM, SIGINT, SIGHUP back to their defaults
};

void close_descriptors_from(int first, int max_fd) {
  if (::close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  for (int fd = first; fd < max_fd; ++fd) ::close(fd);
}

// croq's fork: in the child, applies `setup` and returns 0; in the parent, returns the pid (or -1).
pid_t fork_child(const ChildSetup& setup) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (setup.new_session) ::setsid();
  else if (setup.new_process_group) ::setpgid(0, 0);
  if (setup.parent_death_signal != 0) {
    ::prctl(PR_SET_PDEATHSIG, setup.parent_death_signal);
    if (::getppid() != setup.parent_pid) ::_exit(127);  // the parent died before prctl took effect
  }
  struct sigaction action {};
  action.sa_handler = setup.ignore_stop_signals ? SIG_IGN : SIG_DFL;
  if (setup.ignore_stop_signals || setup.default_stop_signals) {
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &action, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  if (setup.stdin_fd >= 0) ::dup2(setup.stdin_fd, 0);
  if (setup.stdout_fd >= 0) ::dup2(setup.stdout_fd, 1);
  if (setup.stderr_fd >= 0) ::dup2(setup.stderr_fd, 2);
  if (setup.keep_fd >= 0) {
    ::dup2(setup.keep_fd, 3);
    ::fcntl(3, F_SETFD, FD_CLOEXEC);
  }
  if (setup.close_from >= 0) close_descriptors_from(setup.close_from, setup.max_fd);
  return 0;
}

void write_all_raw(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
}

// croq's exec: changes to the image's folder and execs it; returns errno when it could not.
// Async-signal-safe.
int exec_now(const ExecImage& image) {
  if (image.cwd.empty() || ::chdir(image.cwd.c_str()) == 0) ::execve(image.exe.c_str(), image.argv.data(), image.envp.data());
  return errno;
}

// In a forked child: exec_now; on failure, writes errno to `errno_fd` (when >= 0) and
// "<message_prefix><reason>" to stderr (when the prefix is not empty), and exits 127.
[[noreturn]] void exec_image(const ExecImage& image, int errno_fd, const std::string& message_prefix) {
  int err = exec_now(image);
  if (errno_fd >= 0) (void)!::write(errno_fd, &err, sizeof err);
  if (!message_prefix.empty()) {
    const char* why = ::strerror(err);  // reads a static table
    write_all_raw(2, message_prefix.data(), message_prefix.size());
    write_all_raw(2, why, ::strlen(why));
    write_all_raw(2, "\n", 1);
  }
  ::_exit(127);
}

// Writes `v` in decimal into `buf` (at least 24 bytes); returns the length. Async-signal-safe.
size_t format_int(char* buf, long long v) {
  char tmp[24];
  size_t n = 0;
  bool neg = v < 0;
  unsigned long long u = neg ? static_cast<unsigned long long>(-(v + 1)) + 1 : static_cast<unsigned long long>(v);
  do {
    tmp[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u);
  size_t len = 0;
  if (neg) buf[len++] = '-';
  while (n) buf[len++] = tmp[--n];
  return len;
}

void append_raw(char* buf, size_t& len, const char* s) {
  while (*s) buf[len++] = *s++;
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

ScopedStopSignals::ScopedStopSignals(void (*handler)(int)) {
  struct sigaction sa{};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &m_old_int);
  ::sigaction(SIGTERM, &sa, &m_old_term);
}

ScopedStopSignals::~ScopedStopSignals() {
  ::sigaction(SIGINT, &m_old_int, nullptr);
  ::sigaction(SIGTERM, &m_old_term, nullptr);
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

std::vector<std::string> split_shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size()) cur += text[++i];
      else cur += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i];
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

ProcessResult SystemProcessRunner::run(const ProcessSpec& spec) {
  ProcessResult result;
  if (spec.argv.empty()) {
    result.spawn_error = "empty command";
    return result;
  }
  ExecImage image;
  if (!image.prepare(spec.argv, spec.argv[0], spec.cwd ? spec.cwd->string() : std::string(), spec.env_set,
                     spec.env_unset, result.spawn_error)) {
    return result;
  }
  const bool piped = !spec.stdout_to_stderr;

  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  if ((piped && (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
                 ::pipe2(err_pipe, O_CLOEXEC) != 0)) ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.spawn_error = std::string("pipe: ") + std::strerror(errno);
    for (int* p : {in_pipe, out_pipe, err_pipe, exec_pipe}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
    return result;
  }

  Stopwatch clock;
  ChildSetup setup;
  setup.stdin_fd = in_pipe[0];
  setup.stdout_fd = piped ? out_pipe[1] : 2;
  setup.stderr_fd = err_pipe[1];
  setup.new_process_group = spec.new_process_group;
  setup.parent_death_signal = spec.parent_death_signal;
  setup.parent_pid = ::getpid();
  pid_t pid = fork_child(setup);
  if (pid < 0) {
    result.spawn_error = std::string("fork: ") + std::strerror(errno);
    for (int* p : {in_pipe, out_pipe, err_pipe, exec_pipe}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
    return result;
  }
  if (pid == 0) exec_image(image, exec_pipe[1], "");
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
  if (spec.stdin_data.empty() || !piped) close_fd(in_pipe[1]);
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

DetachedProcess ProcessRunner::start_detached(const DetachedSpec& spec) {
  DetachedProcess out;
  out.error = fmt::format("this process runner cannot start {} in the background", spec.argv.empty() ? "" : spec.argv[0]);
  return out;
}

DetachedProcess SystemProcessRunner::start_detached(const DetachedSpec& spec) {
  DetachedProcess out;
  if (spec.argv.empty()) {
    out.error = "empty command";
    return out;
  }
  std::string program = spec.argv[0];
  if (program.find('/') != std::string::npos && !std::filesystem::path(program).is_absolute()) {
    program = (spec.cwd / program).string();
  }
  ExecImage image;
  if (!image.prepare(spec.argv, program, spec.cwd.string(), spec.env_set, {}, out.error)) {
    out.error = fmt::format("{}: command not found or not executable", spec.argv[0]);
    return out;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(spec.cwd, ec)) {
    out.error = fmt::format("working folder {} does not exist", spec.cwd.string());
    return out;
  }
  ensure_dir(spec.log_path.parent_path());
  ensure_dir(spec.status_path.parent_path());
  std::filesystem::remove(spec.status_path, ec);
  if (!spec.pid_path.empty()) std::filesystem::remove(spec.pid_path, ec);
  const std::string status_path = spec.status_path.string();
  const std::string status_tmp = status_path + ".tmp";
  const std::string pid_path = spec.pid_path.string();
  const std::string exec_fail_prefix = fmt::format("{}: cannot start {}: ", spec.who, spec.argv[0]);

  int log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    out.error = fmt::format("cannot open {}: {}", spec.log_path.string(), std::strerror(errno));
    return out;
  }
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    ::close(log_fd);
    out.error = std::string("cannot open /dev/null: ") + std::strerror(errno);
    return out;
  }
  // Closed (on both sides) once the command has exec'd: until then a signal could find the
  // supervisor without its process group, or the command still ignoring SIGTERM.
  int ready[2] = {-1, -1};
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    ::close(log_fd);
    ::close(null_fd);
    out.error = std::string("pipe: ") + std::strerror(errno);
    return out;
  }
  rlimit rl{};
  ChildSetup supervisor;
  supervisor.stdin_fd = null_fd;
  supervisor.stdout_fd = log_fd;
  supervisor.stderr_fd = log_fd;
  supervisor.keep_fd = ready[1];
  supervisor.close_from = 4;
  supervisor.max_fd = (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
                          ? static_cast<int>(rl.rlim_cur)
                          : 65536;
  supervisor.new_session = true;
  supervisor.ignore_stop_signals = true;
  ChildSetup command;
  command.default_stop_signals = true;

  pid_t pid = fork_child(supervisor);
  if (pid < 0) {
    out.error = std::string("fork: ") + std::strerror(errno);
    ::close(log_fd);
    ::close(null_fd);
    ::close(ready[0]);
    ::close(ready[1]);
    return out;
  }
  if (pid == 0) {
    // The supervisor. Async-signal-safe calls only.
    if (!pid_path.empty()) {
      char pbuf[32];
      size_t plen = format_int(pbuf, ::getpid());
      pbuf[plen++] = '\n';
      int pfd = ::open(pid_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (pfd >= 0) {
        write_all_raw(pfd, pbuf, plen);
        ::close(pfd);
      }
    }
    pid_t child = fork_child(command);
    if (child == 0) exec_image(image, -1, exec_fail_prefix);
    ::close(3);
    int status = 0;
    int exit_code = 127;
    int sig = 0;
    if (child > 0) {
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      if (WIFEXITED(status)) {
        exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        exit_code = -1;
        sig = WTERMSIG(status);
      }
    }
    char buf[160];
    size_t len = 0;
    append_raw(buf, len, "{\"pid\":");
    len += format_int(buf + len, child);
    append_raw(buf, len, ",\"exit_code\":");
    len += format_int(buf + len, exit_code);
    append_raw(buf, len, ",\"signal\":");
    len += format_int(buf + len, sig);
    append_raw(buf, len, "}\n");
    int fd = ::open(status_tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      write_all_raw(fd, buf, len);
      ::fsync(fd);
      ::close(fd);
      ::rename(status_tmp.c_str(), status_path.c_str());
    }
    ::_exit(0);
  }
  ::close(log_fd);
  ::close(null_fd);
  ::close(ready[1]);
  pollfd pfd{ready[0], POLLIN, 0};
  for (int waited = 0; waited < 100; ++waited) {  // at most 10 s
    if (::poll(&pfd, 1, 100) > 0) {
      char b;
      if (::read(ready[0], &b, 1) <= 0) break;  // EOF: exec'd (or failed and exited)
    }
  }
  ::close(ready[0]);
  out.started = true;
  out.pid = pid;
  // The supervisor may already have finished (a zombie until reaped): its stat still holds the time.
  out.start_time = process_start_time(pid).value_or(0);
  return out;
}

std::optional<long long> process_start_time(int pid) {
  if (pid <= 0) return std::nullopt;
  auto text = read_file(fmt::format("/proc/{}/stat", pid));
  if (!text) return std::nullopt;
  // The command name (field 2) is in parentheses and may hold spaces: fields start after ") ".
  size_t close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::string rest = text->substr(close + 2);
  // rest starts at field 3 (state); starttime is field 22, i.e. the 20th token of rest.
  size_t pos = 0;
  for (int field = 3; field < 22; ++field) {
    pos = rest.find(' ', pos);
    if (pos == std::string::npos) return std::nullopt;
    ++pos;
  }
  try {
    return std::stoll(rest.substr(pos, rest.find(' ', pos) - pos));
  } catch (const std::exception&) {
    return std::nullopt;  // not a /proc stat line
  }
}

char process_state(int pid) {
  if (pid <= 0) return 0;
  auto text = read_file(fmt::format("/proc/{}/stat", pid));
  if (!text) return 0;
  size_t close = text->rfind(')');
  if (close == std::string::npos || close + 2 >= text->size()) return 0;
  return (*text)[close + 2];
}

bool signal_process_group(int pid, long long start_time, int sig) {
  if (pid <= 0) return false;
  auto start = process_start_time(pid);
  if (!start || (start_time != 0 && *start != start_time)) return false;  // gone, or the pid was reused
  return ::kill(-pid, sig) == 0;
}

void reap_if_exited(int pid) {
  if (pid <= 0) return;
  int status = 0;
  ::waitpid(pid, &status, WNOHANG);  // ECHILD for a process that is not our child
}

std::string replace_process(const std::vector<std::string>& argv) {
  if (argv.empty()) return "empty command";
  ExecImage image;
  std::string error;
  if (!image.prepare(argv, argv[0], "", {}, {}, error)) return error;
  return std::strerror(exec_now(image));
}

ProcessRunner& process_runner() {
  static SystemProcessRunner system_runner;
  return g_runner ? *g_runner : system_runner;
}

void set_process_runner(ProcessRunner* runner) { g_runner = runner; }

}  // namespace croq
