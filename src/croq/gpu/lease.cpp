// Device leases (lease.hpp).
#include "croq/gpu/lease.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "croq/gpu/device_key.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq {

namespace {

std::string safe_id(const std::string& id) {
  std::string out;
  for (char c : id) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out.empty() ? "default" : out;
}

std::string user_name() {
  if (const passwd* pw = ::getpwuid(::getuid())) return pw->pw_name;
  return std::to_string(::getuid());
}

constexpr off_t k_history_limit = 256 * 1024;

double epoch_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Opens (creating if needed, world-writable so other users can take it too) the lock file. Never
// through a symbolic link: in a folder every user writes (/tmp), a link planted under the lease's
// name would otherwise make croq truncate and write whatever file it points to.
int open_lock(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd >= 0) {
    struct stat st{};
    if (::fstat(fd, &st) == 0 && st.st_uid == ::getuid()) (void)::fchmod(fd, 0666);
    return fd;
  }
  if (errno == EACCES) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);  // another user's file: lock it read-only
  if (fd < 0) {
    throw Error(ExitCode::failure, fmt::format("cannot open the lease file {}: {}", path.string(), std::strerror(errno)),
                "set CROQ_LEASE_DIR to a folder every croq user can write");
  }
  return fd;
}

std::filesystem::path lease_dir() {
  std::filesystem::path dir = "/tmp";
  if (const char* d = std::getenv("CROQ_LEASE_DIR"); d && *d) dir = d;
  return dir;
}

}  // namespace

std::string lease_id_of(const GpuInfo& gpu) { return gpu.uuid.empty() ? "gpu" + std::to_string(gpu.index) : gpu.uuid; }

std::string resolve_gpu_lease_id(const std::string& device_flag) {
  auto gpus = query_gpus();
  if (auto g = select_gpu(gpus, device_flag)) return lease_id_of(*g);
  std::string want = device_flag;
  if (want.empty()) {
    if (const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES"); cvd && *cvd) {
      want = cvd;
      want = want.substr(0, want.find(','));
    }
  }
  if (starts_with(want, "GPU-")) return want;
  char* end = nullptr;
  const long n = want.empty() ? 0 : std::strtol(want.c_str(), &end, 10);
  if (!want.empty() && (end == want.c_str() || *end != '\0' || n < 0)) return "gpu0";
  return "gpu" + std::to_string(n);
}

json LeaseState::to_json() const {
  return {{"device_id", device_id}, {"path", path.string()}, {"held", held}, {"holder", held ? json(holder) : json(nullptr)}};
}

std::filesystem::path DeviceLease::history_path(const std::string& device_id) {
  return lease_dir() / ("croq-gpu-" + safe_id(device_id) + ".history");
}

std::filesystem::path DeviceLease::lock_path(const std::string& device_id) {
  return lease_dir() / ("croq-gpu-" + safe_id(device_id) + ".lock");
}

DeviceLease::DeviceLease(DeviceLease&& other) noexcept
    : m_device_id(std::move(other.m_device_id)),
      m_purpose(std::move(other.m_purpose)),
      m_acquired_at(std::move(other.m_acquired_at)),
      m_fd(other.m_fd),
      m_acquired_ms(other.m_acquired_ms),
      m_waited(other.m_waited) {
  other.m_fd = -1;
}

// Appends one line to the history while the lock is held (best effort: a history that cannot be
// written never stops a measurement).
void DeviceLease::record(const char* event) const {
  const auto path = history_path(m_device_id);
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return;
  struct stat st{};
  if (::fstat(fd, &st) == 0) {
    if (st.st_uid == ::getuid()) (void)::fchmod(fd, 0666);
    if (st.st_size > k_history_limit) {
      std::filesystem::path old = path;
      old += ".1";
      if (::rename(path.c_str(), old.c_str()) == 0) {
        ::close(fd);
        fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0) return;
        (void)::fchmod(fd, 0666);
      }
    }
  }
  const double now = epoch_ms();
  json line = {{"event", event},      {"device_id", m_device_id}, {"pid", ::getpid()},
               {"user", user_name()}, {"purpose", m_purpose},     {"at", now_iso8601()},
               {"t_ms", now}};
  if (std::string(event) == "release") line["held_ms"] = now - m_acquired_ms;
  if (std::string(event) == "acquire") line["waited_ms"] = m_waited.count();
  const std::string text = dump_compact(line) + "\n";
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

DeviceLease::~DeviceLease() {
  if (m_fd >= 0) {
    record("release");
    // Clear the holder line first (best effort), then release.
    (void)!::ftruncate(m_fd, 0);
    ::flock(m_fd, LOCK_UN);
    ::close(m_fd);
  }
}

std::optional<DeviceLease> DeviceLease::try_acquire(const std::string& device_id, const std::string& purpose) {
  auto lease = try_take(device_id, purpose);
  if (lease) lease->record("acquire");
  return lease;
}

std::optional<DeviceLease> DeviceLease::try_take(const std::string& device_id, const std::string& purpose) {
  const auto path = lock_path(device_id);
  ensure_dir(path.parent_path());
  int fd = open_lock(path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return held(device_id, purpose, fd);
}

// A lease from a lock file descriptor this process has just locked: the holder line is written.
DeviceLease DeviceLease::held(const std::string& device_id, const std::string& purpose, int fd) {
  std::string line = fmt::format("pid {} user {} since {}: {}", ::getpid(), user_name(), now_iso8601(), purpose);
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, line.data(), line.size(), 0);
  DeviceLease lease;
  lease.m_device_id = device_id;
  lease.m_purpose = purpose;
  lease.m_fd = fd;
  lease.m_acquired_at = now_iso8601();
  lease.m_acquired_ms = epoch_ms();
  return lease;
}

DeviceLease DeviceLease::acquire(const std::string& device_id, const std::string& purpose,
                                 std::chrono::milliseconds timeout,
                                 const std::function<void(const std::string&)>& on_wait) {
  Stopwatch clock;
  if (auto lease = try_take(device_id, purpose)) {
    lease->record("acquire");
    return std::move(*lease);
  }
  if (on_wait) on_wait(holder(device_id));
  // The device must not stay idle while a candidate waits for it (bench/sweep_scheduling.sh
  // measures the handoff): a waiter blocks in flock(2), which the kernel wakes the moment the holder
  // releases, instead of polling. The blocking call runs on a thread of its own so that the timeout
  // holds; a waiter that gives up leaves that thread to release the lock at once if it ever gets it.
  struct Waiter {
    std::mutex m;
    std::condition_variable cv;
    int fd = -1;
    bool locked = false;
    bool failed = false;
    bool abandoned = false;
    int error = 0;
  };
  auto w = std::make_shared<Waiter>();
  const auto path = lock_path(device_id);
  w->fd = open_lock(path);
  std::thread([w] {
    int rc;
    do {
      rc = ::flock(w->fd, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    const int error = rc == 0 ? 0 : errno;
    std::lock_guard<std::mutex> g(w->m);
    if (w->abandoned) {
      if (rc == 0) ::flock(w->fd, LOCK_UN);
      ::close(w->fd);
      return;
    }
    (rc == 0 ? w->locked : w->failed) = true;
    w->error = error;
    w->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lk(w->m);
  const auto left = timeout - std::chrono::milliseconds(static_cast<long long>(clock.elapsed_ms()));
  w->cv.wait_for(lk, std::max(left, std::chrono::milliseconds(0)), [&] { return w->locked || w->failed; });
  if (w->locked) {
    DeviceLease lease = held(device_id, purpose, w->fd);
    lease.m_waited = std::chrono::milliseconds(static_cast<long long>(clock.elapsed_ms()));
    lease.record("acquire");
    return lease;
  }
  const bool failed = w->failed;
  const int error = w->error;
  if (failed) ::close(w->fd);
  else w->abandoned = true;  // the thread closes the file when its flock returns
  lk.unlock();
  if (failed) {
    throw Error(ExitCode::failure, fmt::format("cannot lock the lease file {}: {}", path.string(), std::strerror(error)),
                "set CROQ_LEASE_DIR to a folder every croq user can write");
  }
  std::string who = holder(device_id);
  throw Error(ExitCode::busy,
              fmt::format("the device {} is leased{} (waited {:.0f} s)", device_id, who.empty() ? "" : " by " + who,
                          clock.elapsed_ms() / 1000.0),
              "wait for that measurement to finish, or pass a longer --lease-timeout");
}

LeaseState DeviceLease::state(const std::string& device_id) {
  LeaseState s;
  s.device_id = device_id;
  s.path = lock_path(device_id);
  int fd = ::open(s.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return s;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    s.held = true;
    s.holder = holder(device_id);
  } else {
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return s;
}

std::vector<json> DeviceLease::history(const std::string& device_id) {
  std::vector<json> out;
  std::filesystem::path current = history_path(device_id);
  std::filesystem::path old = current;
  old += ".1";
  for (const auto& p : {old, current}) {
    std::ifstream in(p);
    std::string line;
    while (std::getline(in, line)) {
      if (auto j = try_parse_json(line); j && j->is_object()) out.push_back(*j);
    }
  }
  return out;
}

std::string DeviceLease::holder(const std::string& device_id) {
  std::error_code ec;
  const auto path = lock_path(device_id);
  if (!std::filesystem::exists(path, ec)) return {};
  auto text = read_file(path);
  if (!text) return {};
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace croq
