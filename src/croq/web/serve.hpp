// croq serve as a function: --check (the database compared with the ledgers), --once (the
// database brought in step with the disk, then exit), or the monitor itself (scheduler, REST API,
// event stream, dashboard) until SIGINT, SIGTERM or SIGHUP. Only croq-web runs it (the monitor's
// libraries stay out of croq).
#pragma once
#include <cstddef>
#include <functional>
#include <set>
#include <string>

#include "croq/util/json.hpp"
#include "croq/util/step.hpp"
#include "croq/workspace/workspace.hpp"

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

// `emit` gets the verb's document: at the end for --check and --once, once the server listens
// otherwise (its URL, port, token source). Returns the exit code (failure: differences found, or
// the server could not serve).
ExitCode run_serve(const Workspace& ws, const ServeOptions& o, const std::function<void(const json&)>& emit,
                   const StepDeps& deps);

}  // namespace croq::web
