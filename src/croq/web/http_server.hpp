// The monitor's HTTP side (cpp-httplib): the dashboard pages, the REST API and the event stream
// of docs/api.md, behind the checks of auth.hpp. Handlers never start a shell and never open a
// file outside the workspace: static assets are looked up by name in the binary, task files only
// under the task's own artifact folders, after resolving symlinks. Bodies above the limit get
// 413, malformed JSON 400, unknown routes 404, each with a JSON message; a handler's exception
// becomes an error response, never a crash.
#pragma once
#include <memory>
#include <string>

#include "croq/web/auth.hpp"
#include "croq/web/monitor.hpp"

namespace croq::web {

struct HttpOptions {
  BindAddress bind;
  AuthConfig auth;
  size_t max_body_bytes = 1 << 20;
  int threads = 96;              // each open event stream holds one
  int keepalive_seconds = 5;
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

 private:
  struct Impl;
  std::unique_ptr<Impl> m;
};

}  // namespace croq::web
