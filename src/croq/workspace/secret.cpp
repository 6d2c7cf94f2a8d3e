// The workspace key (secret.hpp).
#include "croq/workspace/secret.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

namespace croq {

namespace {

bool is_key(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The key file's content, read without following a symbolic link; nullopt if absent or unreadable.
std::optional<std::string> read_key(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[128];
  ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::optional<std::string> create_key(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  ::chmod(p.parent_path().c_str(), 0700);
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) return std::nullopt;
  std::string hex;
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  hex += "\n";
  const fs::path tmp = p.string() + fmt::format(".tmp.{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return std::nullopt;
  const bool written = ::write(fd, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size()) && ::fsync(fd) == 0;
  ::close(fd);
  // link(2) never replaces: of two processes creating the key at once, one wins and both use it.
  if (written) (void)::link(tmp.c_str(), p.c_str());
  ::unlink(tmp.c_str());
  return read_key(p);
}

}  // namespace

fs::path workspace_key_path(const Workspace& ws) { return ws.tuning_dir() / ".croq" / "key"; }

std::optional<std::string> workspace_key(const Workspace& ws) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;  // per root, for the life of the process
  const fs::path p = workspace_key_path(ws);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(p.string()); it != known.end()) return it->second;
  std::optional<std::string> key = read_key(p);
  std::error_code ec;
  if (!key && !fs::exists(fs::symlink_status(p, ec))) key = create_key(p);
  if (!key || !is_key(*key)) return std::nullopt;
  known[p.string()] = *key;
  return key;
}

std::string workspace_mac(const std::string& key, std::string_view purpose, std::string_view data) {
  std::string message;
  message.reserve(purpose.size() + 1 + data.size());
  message.append(purpose);
  message.push_back('\n');
  message.append(data);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), out, &n);
  std::string hex;
  hex.reserve(n * 2);
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", out[i]);
  return hex;
}

}  // namespace croq
