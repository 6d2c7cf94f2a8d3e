// The sealed copy of a candidate (snapshot.hpp).
#include "croq/measure/snapshot.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <vector>

#include <fmt/format.h>

#include "croq/util/error.hpp"

namespace croq {

namespace {

// Closes the descriptors given, then throws with errno as it was before closing them.
[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, std::initializer_list<int> fds) {
  const int err = errno;
  for (int fd : fds) ::close(fd);
  throw Error(ExitCode::internal, fmt::format("cannot take a sealed copy of the candidate {}: {}: {}", path.string(), what,
                                              std::strerror(err)));
}

}  // namespace

CandidateSnapshot CandidateSnapshot::take(const std::filesystem::path& path) {
  const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) fail(path, "open", {});
  const int fd = ::memfd_create("croq-candidate", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) fail(path, "memfd_create", {in});
  std::vector<char> buf(1 << 20);
  long long size = 0;
  for (;;) {
    const ssize_t got = ::read(in, buf.data(), buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path, "read", {in, fd});
    if (got == 0) break;
    for (ssize_t done = 0; done < got;) {
      const ssize_t put = ::write(fd, buf.data() + done, static_cast<size_t>(got - done));
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) fail(path, "write", {in, fd});
      done += put;
    }
    size += got;
  }
  ::close(in);
  if (::fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    fail(path, "sealing", {fd});
  }
  return CandidateSnapshot(fd, size);
}

CandidateSnapshot::CandidateSnapshot(CandidateSnapshot&& other) noexcept : m_fd(other.m_fd), m_size(other.m_size) {
  other.m_fd = -1;
}

CandidateSnapshot::~CandidateSnapshot() {
  if (m_fd >= 0) ::close(m_fd);
}

std::filesystem::path CandidateSnapshot::path() const { return fmt::format("/proc/self/fd/{}", m_fd); }

}  // namespace croq
