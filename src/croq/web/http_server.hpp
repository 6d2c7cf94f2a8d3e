// The monitor's HTTP side (cpp-httplib): the dashboard pages, the REST API and the event stream
// of docs/api.md, behind the checks of auth.hpp. Connections are read by the stage of
// connections.hpp (time limits for a request's head and body, a cap per client address), so that
// slow or many clients cannot take the threads that answer; the API has a pool of its own and
// event streams a separate, capped set. Handlers never start a shell and never open a file
// outside the workspace: static assets are looked up by name in the binary, task files only under
// the task's own artifact folders (opened beneath them, hard links refused). Bodies above the
// limit get 413, malformed JSON 400, unknown routes 404, each with a JSON message; a handler's
// exception becomes an error response, never a crash.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "croq/web/auth.hpp"
#include "croq/web/monitor.hpp"

namespace croq::web {

struct HttpOptions {
  BindAddress bind;
  AuthConfig auth;
  size_t max_body_bytes = 1 << 20;
  int threads = 16;                  // answer the API and the pages; event streams never use them
  int max_streams = 128;             // event streams open at once (each holds a thread of its own)
  int max_streams_per_client = 32;   // of one client address
  int max_client_connections = 128;  // open connections of one client address (connections.hpp)
  std::chrono::milliseconds head_timeout{5000};   // a request's head, from its first byte
  std::chrono::milliseconds body_timeout{10000};  // its body, after the head
  int keepalive_seconds = 5;         // idle time between two requests of one connection
  int write_timeout_ms = 10000;      // a response write that makes no progress
};

class HttpServer {
 public:
  HttpServer(Monitor& monitor, HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the socket; returns the port (the chosen one when the bind asked for port 0).
  // Throws Error(busy) when the address is in use.
  int bind();
  // Serves until stop(). Returns false if the listening loop failed.
  bool run();
  void stop();
  // The connection stage's counters (open, waiting, evicted, refused, timed_out, ...).
  json connection_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

}  // namespace croq::web
