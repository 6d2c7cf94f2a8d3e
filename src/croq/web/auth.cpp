// Bind addresses and tokens (auth.hpp).
#include "croq/web/auth.hpp"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"

namespace croq::web {

std::string BindAddress::text() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) == 1) return (ntohl(a.s_addr) >> 24) == 127;
  in6_addr b{};
  if (::inet_pton(AF_INET6, host.c_str(), &b) == 1) return IN6_IS_ADDR_LOOPBACK(&b);
  return false;
}

BindAddress parse_bind(const std::string& text) {
  auto bad = [&]() -> BindAddress {
    throw_usage(fmt::format("--bind '{}' is not HOST:PORT", preview(text, 60)),
                "e.g. --bind 127.0.0.1:8642, --bind 0.0.0.0:8642 (needs a token), --bind [::1]:8642");
  };
  BindAddress b;
  std::string host, port;
  if (text.empty()) return bad();
  if (text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') return bad();
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else if (text.find(':') == std::string::npos) {
    host = "127.0.0.1";
    port = text;
  } else {
    auto colon = text.rfind(':');
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) return bad();  // IPv6 needs brackets
  }
  if (host.empty() || port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    return bad();
  }
  int p = std::stoi(port);
  if (p > 65535) return bad();
  in_addr a4{};
  in6_addr a6{};
  bool numeric = ::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
  bool name_ok = host.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") ==
                 std::string::npos;
  if (!numeric && !name_ok) return bad();
  b.host = host;
  b.port = p;
  b.loopback = is_loopback_host(host);
  return b;
}

std::string generate_token() {
  unsigned char buf[32];
  if (RAND_bytes(buf, sizeof buf) != 1) throw Error(ExitCode::internal, "cannot generate a random token (OpenSSL)");
  std::string out;
  for (unsigned char c : buf) out += fmt::format("{:02x}", c);
  return out;
}

bool tokens_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || a.empty()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

AuthConfig make_auth(const BindAddress& bind, const std::string& token_file) {
  AuthConfig c;
  if (!token_file.empty()) {
    struct stat st {};
    if (::stat(token_file.c_str(), &st) != 0) {
      throw_usage(fmt::format("--token-file {} does not exist", token_file),
                  fmt::format("create it: openssl rand -hex 32 > {0} && chmod 600 {0}", token_file));
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
      throw_usage(fmt::format("--token-file {} can be read by other users", token_file),
                  fmt::format("chmod 600 {}", token_file));
    }
    c.token = trim(read_file_or_throw(token_file));
    if (c.token.size() < 16 || c.token.find_first_of(" \t\r\n") != std::string::npos || !is_valid_utf8(c.token)) {
      throw_usage(fmt::format("--token-file {} must hold one token of at least 16 characters", token_file),
                  "e.g. openssl rand -hex 32");
    }
    c.required = true;
    c.source = "file " + token_file;
    return c;
  }
  if (!bind.loopback) {
    c.token = generate_token();
    c.required = true;
    c.source = "generated";
    return c;
  }
  c.source = "none (loopback)";
  return c;
}

std::string host_of_header(const std::string& h) {
  if (h.empty()) return h;
  if (h.front() == '[') {
    auto close = h.find(']');
    return close == std::string::npos ? h : h.substr(1, close - 1);
  }
  auto colon = h.find(':');
  return colon == std::string::npos ? h : h.substr(0, colon);
}

std::string cookie_value(const std::string& header, const std::string& name) {
  size_t p = 0;
  while (p < header.size()) {
    size_t e = header.find(';', p);
    std::string item = trim(header.substr(p, e == std::string::npos ? std::string::npos : e - p));
    if (starts_with(item, name + "=")) return item.substr(name.size() + 1);
    if (e == std::string::npos) break;
    p = e + 1;
  }
  return {};
}

// Whether an Origin header ("https://monitor.example.org", "http://127.0.0.1:8642") names the
// same host and port as the Host header; default ports (80 for http, 443 for https) may be left
// out on either side. "null" and anything that is not scheme://authority is foreign.
bool same_origin(const std::string& origin, const std::string& host_header) {
  std::string o = to_lower(trim(origin));
  std::string h = to_lower(trim(host_header));
  auto sep = o.find("://");
  if (sep == std::string::npos || h.empty()) return false;
  std::string scheme = o.substr(0, sep);
  std::string authority = o.substr(sep + 3);
  if ((scheme != "http" && scheme != "https") || authority.empty() ||
      authority.find_first_of("/?#@ ") != std::string::npos) {
    return false;
  }
  const std::string default_port = scheme == "https" ? ":443" : ":80";
  auto strip = [&](std::string& a) {
    if (a.size() > default_port.size() && a.compare(a.size() - default_port.size(), default_port.size(), default_port) == 0 &&
        a.back() != ']') {
      a.resize(a.size() - default_port.size());
    }
  };
  strip(authority);
  strip(h);
  return authority == h;
}

}  // namespace croq::web
