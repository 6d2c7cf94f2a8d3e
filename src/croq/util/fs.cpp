// Crash-safe file primitives of fs.hpp.
#include "croq/util/fs.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "croq/util/error.hpp"

namespace croq {

namespace {

[[noreturn]] void throw_io(const std::string& what, const fs::path& path, int err) {
  throw Error(ExitCode::failure, fmt::format("{} {}: {}", what, path.string(), std::strerror(err)),
              "check the path's permissions and free disk space");
}

void write_all(int fd, std::string_view data, const fs::path& path) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot write", path, errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// An open descriptor, closed when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
};

[[noreturn]] void throw_link(const fs::path& path, const fs::path& at) {
  throw Error(ExitCode::corrupt,
              fmt::format("refusing to write {}: {} is a symbolic link or not a plain folder/file; croq writes only "
                          "real files inside the workspace",
                          path.string(), at.string()),
              "replace the link with a real folder or file (move what it points to into place)");
}

// Where a write to `path` goes: the folder it lies in, opened (and created, folder by folder)
// without following a symbolic link below `root`, and the file's name in it. Without a root, the
// folder is opened as named.
struct Target {
  Fd dir;
  std::string leaf;
};

Target open_target(const fs::path& path, const fs::path& root) {
  Target t;
  if (root.empty()) {
    const fs::path dir = path.parent_path();
    if (!dir.empty()) ensure_dir(dir);
    t.dir = Fd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (t.dir.fd < 0) throw_io("cannot open folder", dir, errno);
    t.leaf = path.filename().string();
    return t;
  }
  const fs::path abs_root = fs::absolute(root).lexically_normal();
  const fs::path abs = fs::absolute(path).lexically_normal();
  const fs::path rel = abs.lexically_relative(abs_root);
  if (rel.empty() || rel == "." || *rel.begin() == ".." || !rel.has_filename()) {
    throw Error(ExitCode::usage, fmt::format("refusing to write {}: it is outside the workspace {}", path.string(),
                                             abs_root.string()),
                "croq writes a task's files only inside its workspace");
  }
  ensure_dir(abs_root);
  t.dir = Fd(::open(abs_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (t.dir.fd < 0) throw_io("cannot open folder", abs_root, errno);
  fs::path at = abs_root;
  for (const auto& part : rel.parent_path()) {
    const std::string name = part.string();
    at /= part;
    if (::mkdirat(t.dir.fd, name.c_str(), 0755) != 0 && errno != EEXIST) throw_io("cannot create folder", at, errno);
    int next = ::openat(t.dir.fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      if (errno == ELOOP || errno == ENOTDIR) throw_link(path, at);
      throw_io("cannot open folder", at, errno);
    }
    t.dir = Fd(next);
  }
  t.leaf = rel.filename().string();
  return t;
}

// Opens the file `t.leaf` in its folder for appending or locking, never through a symbolic link,
// and refuses anything but a regular file with one link.
int open_own_file(const Target& t, const fs::path& path, int flags) {
  int fd = ::openat(t.dir.fd, t.leaf.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == ELOOP) throw_link(path, path);
    throw_io("cannot open", path, errno);
  }
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink > 1) {
    ::close(fd);
    throw Error(ExitCode::corrupt,
                fmt::format("refusing to write {}: it is {}", path.string(),
                            S_ISREG(st.st_mode) ? "a file with other hard links (a write would change them too)"
                                                : "not a regular file"),
                "move it aside; croq creates its own files");
  }
  return fd;
}

std::string unique_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^
                                          static_cast<unsigned long>(::getpid())};
  return fmt::format(".tmp.{}.{:x}", ::getpid(), rng());
}

}  // namespace

std::optional<std::string> read_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    throw_io("cannot open", path, errno);
  }
  std::string out;
  struct stat st{};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(ExitCode::usage, fmt::format("{} is a folder, not a file", path.string()));
  }
  if (st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw_io("cannot read", path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string read_file_or_throw(const fs::path& path) {
  auto content = read_file(path);
  if (!content) throw_not_found(fmt::format("file not found: {}", path.string()));
  return std::move(*content);
}

std::vector<fs::path> stale_temp_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || at == 0) continue;
    std::string rest = name.substr(at + 5);  // "<pid>.<hex>"
    size_t dot = rest.find('.');
    if (dot == std::string::npos || dot == 0) continue;
    std::string pid_text = rest.substr(0, dot);
    if (!std::all_of(pid_text.begin(), pid_text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        pid_text.size() > 9) {
      continue;
    }
    pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void ensure_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec && !fs::is_directory(dir)) {
    throw Error(ExitCode::failure,
                fmt::format("cannot create folder {}: {}", dir.string(), ec.message()),
                "check the path's permissions and free disk space");
  }
}

void atomic_write(const fs::path& path, std::string_view content, bool durable, const fs::path& root) {
  Target t = open_target(path, root);
  const fs::path dir = path.parent_path();
  const std::string tmp_name = t.leaf + unique_suffix();
  const fs::path tmp = dir / tmp_name;
  int fd = ::openat(t.dir.fd, tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw_io("cannot create", tmp, errno);
  try {
    write_all(fd, content, tmp);
    if (durable && ::fsync(fd) != 0) throw_io("cannot sync", tmp, errno);
  } catch (...) {
    ::close(fd);
    ::unlinkat(t.dir.fd, tmp_name.c_str(), 0);
    throw;
  }
  ::close(fd);
  // rename(2) replaces the name: a symbolic link there is replaced, never followed.
  if (::renameat(t.dir.fd, tmp_name.c_str(), t.dir.fd, t.leaf.c_str()) != 0) {
    int err = errno;
    ::unlinkat(t.dir.fd, tmp_name.c_str(), 0);
    throw_io("cannot replace", path, err);
  }
  if (durable) ::fsync(t.dir.fd);
}

AppendOutcome append_line(const fs::path& path, std::string_view line, bool durable, const TailPolicy& tail,
                          const fs::path& root) {
  int fd = open_own_file(open_target(path, root), path, O_RDWR | O_CREAT | O_APPEND);
  AppendOutcome outcome;
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw_io("cannot stat", path, err);
  }
  off_t size = st.st_size;
  std::string prefix;  // written before the record in the same write
  if (size > 0) {
    char last = 0;
    if (::pread(fd, &last, 1, size - 1) == 1 && last != '\n') {
      // Bytes after the last newline: find where they start.
      off_t scan_end = size;
      off_t cut = 0;
      char buf[4096];
      while (scan_end > 0) {
        off_t start = scan_end > static_cast<off_t>(sizeof buf) ? scan_end - static_cast<off_t>(sizeof buf) : 0;
        ssize_t n = ::pread(fd, buf, static_cast<size_t>(scan_end - start), start);
        if (n <= 0) break;
        bool found = false;
        for (ssize_t i = n - 1; i >= 0; --i) {
          if (buf[i] == '\n') {
            cut = start + i + 1;
            found = true;
            break;
          }
        }
        if (found) break;
        scan_end = start;
        if (static_cast<size_t>(size - scan_end) > tail.max_torn_bytes) break;
      }
      const size_t tail_bytes = static_cast<size_t>(size - cut);
      if (tail_bytes > tail.max_torn_bytes) {
        ::close(fd);
        throw Error(ExitCode::corrupt,
                    fmt::format("{} ends with {}{} bytes that are not a record: damage, not an interrupted write",
                                path.string(), scan_end > cut ? "more than " : "", tail_bytes),
                    "run `croq session clean --invalid-only` (the damaged file is kept as .bak.<time>)");
      }
      std::string torn(tail_bytes, '\0');
      ssize_t got = tail_bytes ? ::pread(fd, torn.data(), tail_bytes, cut) : 0;
      if (got >= 0 && static_cast<size_t>(got) == tail_bytes && tail.is_complete && tail.is_complete(torn)) {
        // A whole record without its newline (hand-written): keep it, end it.
        prefix = "\n";
        outcome.terminated_tail = true;
      } else {
        // A record that was never acknowledged: cut it off so the new one starts on its own line.
        if (::ftruncate(fd, cut) != 0) {
          int err = errno;
          ::close(fd);
          throw_io("cannot repair torn tail of", path, err);
        }
        outcome.repaired_torn_tail = true;
        outcome.torn_bytes = tail_bytes;
        size = cut;
      }
    }
  }
  outcome.offset = static_cast<size_t>(size) + prefix.size();
  std::string record = prefix;
  record.append(line);
  if (record.empty() || record.back() != '\n') record.push_back('\n');
  try {
    write_all(fd, record, path);
    if (durable && ::fdatasync(fd) != 0) throw_io("cannot sync", path, errno);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return outcome;
}

FileLock::FileLock(const fs::path& lock_path, std::chrono::milliseconds timeout,
                   std::string_view purpose, const fs::path& root) {
  if (!acquire(lock_path, timeout, purpose, root)) {
    std::string holder = describe_holder(lock_path);
    throw Error(ExitCode::busy,
                fmt::format("lock {} is held{} (waited {} ms)", lock_path.string(),
                            holder.empty() ? "" : " by " + holder, timeout.count()),
                "wait for the other croq process to finish, or pass a longer --lock-timeout");
  }
}

FileLock::FileLock(FileLock&& other) noexcept : m_path(std::move(other.m_path)), m_fd(other.m_fd) {
  other.m_fd = -1;
}

FileLock::~FileLock() {
  if (m_fd >= 0) {
    ::flock(m_fd, LOCK_UN);
    ::close(m_fd);
  }
}

bool FileLock::acquire(const fs::path& lock_path, std::chrono::milliseconds timeout,
                       std::string_view purpose, const fs::path& root) {
  int fd = open_own_file(open_target(lock_path, root), lock_path, O_RDWR | O_CREAT);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) break;
    if (errno != EWOULDBLOCK && errno != EINTR) {
      int err = errno;
      ::close(fd);
      throw_io("cannot lock", lock_path, err);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd);
      return false;
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(4)) pause *= 2;  // short: a store holds the lock for milliseconds
  }
  // Informational only: who holds the lock, for the message a waiting process prints.
  std::string who = fmt::format("pid {}{}{}", ::getpid(), purpose.empty() ? "" : ": ", purpose);
  if (::ftruncate(fd, 0) == 0) {
    (void)!::pwrite(fd, who.data(), who.size(), 0);
  }
  m_path = lock_path;
  m_fd = fd;
  return true;
}

std::optional<FileLock> FileLock::try_acquire(const fs::path& lock_path,
                                              std::chrono::milliseconds timeout,
                                              std::string_view purpose, const fs::path& root) {
  FileLock lock;
  if (!lock.acquire(lock_path, timeout, purpose, root)) return std::nullopt;
  return std::optional<FileLock>(std::move(lock));
}

std::string FileLock::describe_holder(const fs::path& lock_path) {
  auto content = read_file(lock_path);
  if (!content) return {};
  std::string s = *content;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace croq
