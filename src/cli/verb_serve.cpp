// croq serve and croq report: their options (web_verbs.hpp). What they do is run_serve and
// run_report: the monitor itself in croq-web (web_verbs_impl.cpp), a hand-over to croq-web in croq
// (web_verbs_exec.cpp).
#include <memory>

#include "cli/verbs.hpp"
#include "cli/web_verbs.hpp"

namespace croq::cli {

VerbRunner setup_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  app.add_option("--bind", o->bind, "HOST:PORT to listen on (default 127.0.0.1:8642; env CROQ_SERVE_BIND); "
                                    "anything but loopback needs a token");
  app.add_option("--db", o->db, "the database: a SQLite file (default <root>/.croq/monitor.db; env CROQ_SERVE_DB), or "
                                  "postgresql://user@host:port/database for one database several machines write");
  app.add_option("--token-file", o->token_file, "file holding the access token (env CROQ_SERVE_TOKEN_FILE); "
                                                "without it a non-loopback bind generates one and shows it once");
  app.add_option("--poll-ms", o->poll_ms, "how often the ledgers are checked for changes")->default_val(500)
      ->check(CLI::Range(20, 60000));
  app.add_option("--scan-every", o->scan_every, "a full scan for new task folders every N polls")->default_val(4)
      ->check(CLI::Range(1, 100000));
  app.add_option("--max-running", o->max_running, "at most N running tasks in all (0: one per device only)")
      ->default_val(0)->check(CLI::Range(0, 10000));
  app.add_option("--threads", o->threads, "threads that answer pages and API calls (event streams have their own)")
      ->default_val(16)->check(CLI::Range(1, 1024));
  app.add_option("--max-streams", o->max_streams, "event streams open at once (dashboard tabs; each holds a thread)")
      ->default_val(128)->check(CLI::Range(1, 4096));
  app.add_option("--max-client-streams", o->max_client_streams, "event streams open at once from one client address")
      ->default_val(32)->check(CLI::Range(1, 4096));
  app.add_option("--max-client-connections", o->max_client_connections,
                 "open connections of one client address (past it, its oldest one still sending a request is closed)")
      ->default_val(128)->check(CLI::Range(2, 65536));
  app.add_option("--head-timeout-ms", o->head_timeout_ms, "time a client has to send a request's head (408 after)")
      ->default_val(5000)->check(CLI::Range(100, 600000));
  app.add_option("--body-timeout-ms", o->body_timeout_ms, "time a client has to send a request's body (408 after)")
      ->default_val(10000)->check(CLI::Range(100, 600000));
  app.add_option("--stop-grace-ms", o->stop_grace_ms, "SIGTERM to SIGKILL delay when stopping a task")
      ->default_val(10000)->check(CLI::Range(0, 3600000));
  app.add_option("--max-body", o->max_body, "largest request body accepted, in bytes")->default_val(1 << 20)
      ->check(CLI::Range(1024, 64 << 20));
  app.add_flag("--no-scheduler", o->no_scheduler, "index and serve only: start, stop and adopt no child");
  app.add_flag("--check", o->check, "compare the database with the ledgers on disk, print the differences, exit "
                                    "(1 if any)");
  app.add_flag("--once", o->once, "bring the database in step with the disk once (adopting new tasks) and exit");
  return [o](Context& ctx) -> ExitCode { return run_serve(ctx, *o); };
}

VerbRunner setup_report(CLI::App& app) {
  auto o = std::make_shared<ReportVerbOptions>();
  app.add_option("--task", o->tasks, "a task_uid, <gpu>/<dsl>/<shape_key>/<model>, or a shape key (repeatable)");
  app.add_flag("--all", o->all, "every task of the workspace");
  app.add_option("--out", o->out, "folder to write (created if missing; files in it are replaced)")->required();
  app.add_flag("--sweep", o->sweep, "the report across the sweep (tuning/state.json): shapes x dtypes table, progress "
                                    "over time, bottleneck mix");
  app.add_option("--window", o->window, "rounds per bar of the bottleneck distribution (0: automatic)")
      ->default_val(0)->check(CLI::Range(0, 100000));
  return [o](Context& ctx) -> ExitCode { return run_report(ctx, *o); };
}

}  // namespace croq::cli
