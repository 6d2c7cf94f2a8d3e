// SHA-256 through OpenSSL's EVP interface.
#include "croq/util/hash.hpp"

#include <openssl/evp.h>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"

namespace croq {

Sha256::Sha256() : m_ctx(EVP_MD_CTX_new()) {
  if (!m_ctx || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(m_ctx), EVP_sha256(), nullptr) != 1) {
    throw Error(ExitCode::internal, "OpenSSL: cannot initialise SHA-256");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(m_ctx)); }

void Sha256::update(std::string_view data) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(m_ctx), data.data(), data.size());
}

void Sha256::field(std::string_view data) {
  const std::string len = fmt::format("{}:", data.size());
  update(len);
  update(data);
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(m_ctx), digest, &n);
  std::string out;
  out.reserve(n * 2);
  for (unsigned int i = 0; i < n; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

std::string sha256_file(const std::filesystem::path& path) {
  return sha256_hex(read_file_or_throw(path));
}

}  // namespace croq
