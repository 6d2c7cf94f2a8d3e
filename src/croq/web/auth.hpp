// Who may talk to the monitor. Loopback only unless --bind says otherwise; any other address
// requires a token, read from a file (--token-file) or generated at start and shown once. With a
// token, every request must carry it (Authorization: Bearer <token>, the croq_token cookie set by
// opening /?token=<token> once, or ?token= on the event stream); without one (loopback), the Host
// header must name the loopback interface, which defeats DNS-rebinding pages. Requests that change
// something need the token even on loopback (any local user can reach a loopback port) and must
// be JSON (a cross-site form cannot send that). A request that carries an Origin (any method)
// must come from the monitor's own origin, compared with Host (never X-Forwarded-Host).
#pragma once
#include <optional>
#include <string>

namespace croq::web {

struct BindAddress {
  std::string host;  // "127.0.0.1", "::1", "0.0.0.0", "localhost", ...
  int port = 8642;   // 0: any free port
  bool loopback = true;
  std::string text() const;  // "127.0.0.1:8642", "[::1]:8642"
};

// "127.0.0.1:8642", "localhost:8642", "[::1]:8642", "0.0.0.0:8642", "8642" (loopback).
// Throws Error(usage) on anything else.
BindAddress parse_bind(const std::string& text);
bool is_loopback_host(const std::string& host);

struct AuthConfig {
  bool required = false;
  std::string token;
  std::string source;  // "none (loopback)", "file <path>", "generated"
};

// Reads --token-file when given (it must hold a token of at least 16 characters; a file readable
// by others is refused); else generates one when the address is not loopback.
AuthConfig make_auth(const BindAddress& bind, const std::string& token_file);
std::string generate_token();  // 32 random bytes as hex (OpenSSL)
bool tokens_equal(const std::string& a, const std::string& b);  // constant time

// The host part of a Host header ("localhost:8642" -> "localhost", "[::1]:1" -> "::1").
std::string host_of_header(const std::string& host_header);

// The value of cookie `name` in a Cookie header ("a=1; croq_token=abc" -> "abc"), or empty.
std::string cookie_value(const std::string& cookie_header, const std::string& name);

// Whether an Origin header ("https://monitor.example.org", "http://127.0.0.1:8642") names the
// same host and port as the Host header; default ports (80 for http, 443 for https) may be left
// out on either side. "null" and anything that is not scheme://authority is foreign.
bool same_origin(const std::string& origin, const std::string& host_header);

}  // namespace croq::web
