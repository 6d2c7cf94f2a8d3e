// The supervised launcher of child.hpp. Everything the forked processes need (paths, argv,
// environment, descriptors) is prepared before fork(): the server is multi-threaded, so between
// fork and exec only async-signal-safe calls are made (no allocation, no locks).
#include "croq/web/child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "croq/util/fs.hpp"
#include "croq/util/json.hpp"
#include "croq/util/process.hpp"

extern char** environ;

namespace croq::web {

namespace {

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

void append(char* buf, size_t& len, const char* s) {
  while (*s) buf[len++] = *s++;
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

void close_from(int first, int max_fd) {
  if (::close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  for (int fd = first; fd < max_fd; ++fd) ::close(fd);
}

}  // namespace

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
    return std::nullopt;
  }
}

namespace {

// 'R', 'S', 'Z', ... or 0 when there is no such process.
char process_state(int pid) {
  auto text = read_file(fmt::format("/proc/{}/stat", pid));
  if (!text) return 0;
  size_t close = text->rfind(')');
  if (close == std::string::npos || close + 2 >= text->size()) return 0;
  return (*text)[close + 2];
}

}  // namespace

std::optional<ChildStatus> read_child_status(const std::filesystem::path& status_path) {
  std::optional<std::string> text;
  try {
    text = read_file(status_path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!text) return std::nullopt;
  auto j = try_parse_json(*text);
  if (!j || !j->is_object()) return std::nullopt;
  ChildStatus s;
  s.kind = ChildStatus::Kind::exited;
  s.exit_code = static_cast<int>(get_integer(*j, "exit_code").value_or(-1));
  s.signal = static_cast<int>(get_integer(*j, "signal").value_or(0));
  return s;
}

Launched SupervisedLauncher::launch(const LaunchSpec& spec) {
  Launched out;
  if (spec.argv.empty()) {
    out.error = "empty command";
    return out;
  }
  std::string program = spec.argv[0];
  if (program.find('/') != std::string::npos && !std::filesystem::path(program).is_absolute()) {
    program = (spec.cwd / program).string();
  }
  auto exe = find_executable(program);
  if (!exe) {
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

  // Environment and argv, as C arrays, before fork.
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : spec.env_set) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string exe_path = exe->string();
  const std::string cwd = spec.cwd.string();
  const std::string status_path = spec.status_path.string();
  const std::string status_tmp = status_path + ".tmp";
  const std::string pid_path = spec.pid_path.string();
  const std::string exec_fail_prefix = fmt::format("croq serve: cannot start {}: ", spec.argv[0]);

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
  int max_fd = (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
                   ? static_cast<int>(rl.rlim_cur)
                   : 65536;

  pid_t pid = ::fork();
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
    ::setsid();
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    ::sigaction(SIGTERM, &ign, nullptr);
    ::sigaction(SIGINT, &ign, nullptr);
    ::sigaction(SIGHUP, &ign, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::dup2(ready[1], 3);
    ::fcntl(3, F_SETFD, FD_CLOEXEC);
    close_from(4, max_fd);
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
    pid_t child = ::fork();
    if (child == 0) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      ::sigaction(SIGTERM, &dfl, nullptr);
      ::sigaction(SIGINT, &dfl, nullptr);
      ::sigaction(SIGHUP, &dfl, nullptr);
      ::sigaction(SIGPIPE, &dfl, nullptr);
      if (::chdir(cwd.c_str()) == 0) ::execve(exe_path.c_str(), argv.data(), envp.data());
      const char* why = ::strerror(errno);  // reads a static table
      write_all_raw(2, exec_fail_prefix.data(), exec_fail_prefix.size());
      write_all_raw(2, why, ::strlen(why));
      write_all_raw(2, "\n", 1);
      ::_exit(127);
    }
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
    append(buf, len, "{\"pid\":");
    len += format_int(buf + len, child);
    append(buf, len, ",\"exit_code\":");
    len += format_int(buf + len, exit_code);
    append(buf, len, ",\"signal\":");
    len += format_int(buf + len, sig);
    append(buf, len, "}\n");
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
  out.handle.pid = pid;
  out.handle.status_path = spec.status_path;
  // The supervisor may already have finished (a zombie until polled): its stat still holds the time.
  out.handle.start = process_start_time(pid).value_or(0);
  return out;
}

ChildStatus SupervisedLauncher::poll(const ChildHandle& h) {
  if (h.pid > 0) {
    int st = 0;
    ::waitpid(h.pid, &st, WNOHANG);  // reaps our own supervisor; ECHILD for an adopted one
  }
  if (auto s = read_child_status(h.status_path)) return *s;
  if (h.pid > 0) {
    auto start = process_start_time(h.pid);
    char state = process_state(h.pid);
    if (start && (h.start == 0 || *start == h.start) && state != 'Z' && state != 0) return ChildStatus{};
  }
  // Gone: it may have written its status between the two reads.
  if (auto s = read_child_status(h.status_path)) return *s;
  ChildStatus v;
  v.kind = ChildStatus::Kind::vanished;
  return v;
}

void SupervisedLauncher::signal(const ChildHandle& h, int sig) {
  if (h.pid <= 0) return;
  auto start = process_start_time(h.pid);
  if (!start || (h.start != 0 && *start != h.start)) return;  // gone, or the pid was reused
  ::kill(-h.pid, sig);
}

}  // namespace croq::web
