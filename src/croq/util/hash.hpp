// SHA-256 (OpenSSL) of strings and files, as lowercase hex: the identity of candidates, sources
// and build inputs in measurement files and the build cache.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace croq {

std::string sha256_hex(std::string_view data);
// Throws croq::Error (not_found) if the file is missing.
std::string sha256_file(const std::filesystem::path& path);

// Incremental form, for hashing several inputs into one key.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view data);
  // Adds a length-prefixed field, so ("ab","c") and ("a","bc") hash differently.
  void field(std::string_view data);
  std::string hex();

 private:
  void* m_ctx;
};

}  // namespace croq
