// croq serve's options: what `croq serve` parses (src/cli) and what the monitor runs with
// (web/serve.hpp). A plain struct with no dependencies, so that croq, which does not link the
// monitor, parses the same options croq-web runs with.
#pragma once
#include <cstddef>
#include <set>
#include <string>

namespace croq::web {

struct ServeOptions {
  std::string bind;        // HOST:PORT (default: CROQ_SERVE_BIND, else 127.0.0.1:8642)
  std::string db;          // SQLite file or postgresql://... (default: CROQ_SERVE_DB, else <root>/.croq/monitor.db)
  std::string token_file;  // default: CROQ_SERVE_TOKEN_FILE
  int poll_ms = 500;
  int scan_every = 4;
  int max_running = 0;
  int threads = 16;
  int max_streams = 128;
  int max_client_streams = 32;
  int max_client_connections = 128;
  int head_timeout_ms = 5000;
  int body_timeout_ms = 10000;
  int stop_grace_ms = 10000;
  size_t max_body = 1 << 20;
  bool no_scheduler = false;
  bool check = false;
  bool once = false;
  std::set<std::string> verbs;  // the croq verbs of this build (the scheduler accepts their drivers)
};

}  // namespace croq::web
