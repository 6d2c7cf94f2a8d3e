// The candidate as one sealed copy in memory: the runner hashes, scans and loads the same bytes.
// Before, it opened the workspace's file three times (hash, purity scan, dlopen), and a driver
// that renamed another shared object over it between the opens had the built binary's hash
// recorded (and even its scan passed) while the other one ran: a KEEP at 28x, stored as measured.
#pragma once
#include <filesystem>
#include <string>

namespace croq {

class CandidateSnapshot {
 public:
  // Reads `path` once into a sealed memory file (memfd: no one, this process included, can write,
  // grow or shrink it). Throws croq::Error when it cannot be read or sealed.
  static CandidateSnapshot take(const std::filesystem::path& path);
  CandidateSnapshot(CandidateSnapshot&& other) noexcept;
  CandidateSnapshot& operator=(CandidateSnapshot&&) = delete;
  CandidateSnapshot(const CandidateSnapshot&) = delete;
  ~CandidateSnapshot();

  // "/proc/self/fd/<n>": what to hash, scan and dlopen. Valid while this object lives.
  std::filesystem::path path() const;
  long long size() const { return m_size; }

 private:
  CandidateSnapshot(int fd, long long size) : m_fd(fd), m_size(size) {}
  int m_fd = -1;
  long long m_size = 0;
};

}  // namespace croq
