// Device leases (lease.hpp).
#include "croq/gpu/lease.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
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

// Opens (creating if needed, world-writable so other users can take it too) the lock file.
int open_lock(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd >= 0) {
    struct stat st{};
    if (::fstat(fd, &st) == 0 && st.st_uid == ::getuid()) (void)::fchmod(fd, 0666);
    return fd;
  }
  if (errno == EACCES) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // another user's file: lock it read-only
  if (fd < 0) {
    throw Error(ExitCode::failure, fmt::format("cannot open the lease file {}: {}", path.string(), std::strerror(errno)),
                "set CROQ_LEASE_DIR to a folder every croq user can write");
  }
  return fd;
}

}  // namespace

std::filesystem::path DeviceLease::lock_path(const std::string& device_id) {
  std::filesystem::path dir = "/tmp";
  if (const char* d = std::getenv("CROQ_LEASE_DIR"); d && *d) dir = d;
  return dir / ("croq-gpu-" + safe_id(device_id) + ".lock");
}

DeviceLease::DeviceLease(DeviceLease&& other) noexcept
    : m_device_id(std::move(other.m_device_id)), m_fd(other.m_fd), m_waited(other.m_waited) {
  other.m_fd = -1;
}

DeviceLease::~DeviceLease() {
  if (m_fd >= 0) {
    // Clear the holder line first (best effort), then release.
    (void)!::ftruncate(m_fd, 0);
    ::flock(m_fd, LOCK_UN);
    ::close(m_fd);
  }
}

std::optional<DeviceLease> DeviceLease::try_acquire(const std::string& device_id, const std::string& purpose) {
  const auto path = lock_path(device_id);
  ensure_dir(path.parent_path());
  int fd = open_lock(path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  std::string line = fmt::format("pid {} user {} since {}: {}", ::getpid(), user_name(), now_iso8601(), purpose);
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, line.data(), line.size(), 0);
  DeviceLease lease;
  lease.m_device_id = device_id;
  lease.m_fd = fd;
  return std::optional<DeviceLease>(std::move(lease));
}

DeviceLease DeviceLease::acquire(const std::string& device_id, const std::string& purpose,
                                 std::chrono::milliseconds timeout,
                                 const std::function<void(const std::string&)>& on_wait) {
  Stopwatch clock;
  bool told = false;
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    if (auto lease = try_acquire(device_id, purpose)) {
      lease->m_waited = std::chrono::milliseconds(static_cast<long long>(clock.elapsed_ms()));
      return std::move(*lease);
    }
    if (!told) {
      told = true;
      if (on_wait) on_wait(holder(device_id));
    }
    if (clock.elapsed_ms() >= static_cast<double>(timeout.count())) {
      std::string who = holder(device_id);
      throw Error(ExitCode::busy,
                  fmt::format("the device {} is leased{} (waited {:.0f} s)", device_id,
                              who.empty() ? "" : " by " + who, clock.elapsed_ms() / 1000.0),
                  "wait for that measurement to finish, or pass a longer --lease-timeout");
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(200)) pause *= 2;
  }
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
