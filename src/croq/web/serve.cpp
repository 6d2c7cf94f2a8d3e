// croq serve as a function (serve.hpp).
#include "croq/web/serve.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "croq/gpu/device_key.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/web/auth.hpp"
#include "croq/web/child.hpp"
#include "croq/web/http_server.hpp"
#include "croq/web/ledger_sync.hpp"
#include "croq/web/monitor.hpp"
#include "croq/web/postgres_database.hpp"

namespace croq::web {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string default_gpu_key() {
  if (const char* g = std::getenv("CROQ_GPU"); g && *g) return g;
  auto gpus = query_gpus();
  if (!gpus.empty()) return make_gpu_key(gpus.front().name, gpus.front().compute_cap);
  return {};
}

// The croq the scheduler starts tasks with: the one beside this executable (croq-web), else this
// executable itself (which has every verb too).
std::string croq_exe() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "croq";
  fs::path beside = self.parent_path() / "croq";
  return fs::exists(beside, ec) ? beside.string() : self.string();
}

}  // namespace

ExitCode run_serve(const Workspace& ws, const ServeOptions& opts, const std::function<void(const json&)>& emit,
                 const StepDeps& deps) {
  const ServeOptions* o = &opts;
  auto note = [&](const std::string& line) {
    if (deps.note) deps.note(line);
  };
  const std::string db_location = !o->db.empty() ? o->db : env_or("CROQ_SERVE_DB", (ws.root() / ".croq" / "monitor.db").string());

  if (o->check) {
    DatabaseOptions dopt;
    dopt.read_only = true;
    auto db = open_database(db_location, dopt);
    CheckReport rep = check_database(ws, *db, server_owner(ws));
    json doc = rep.to_json();
    doc["ok"] = rep.clean();
    doc["db"] = db->location();
    doc["root"] = ws.root().string();
    emit(doc);
    if (rep.clean()) {
      note(fmt::format("croq serve --check: the database matches the ledgers ({} tasks, {} records{}{})",
                           rep.tasks_on_disk, rep.rounds_on_disk,
                           rep.pending.empty() ? "" : fmt::format("; {} tasks still being indexed", rep.pending.size()),
                           rep.tasks_of_other_servers == 0
                               ? ""
                               : fmt::format("; {} tasks of other servers not compared", rep.tasks_of_other_servers)));
    } else {
      note(fmt::format("croq serve --check: {} differences between the database and the ledgers",
                           rep.differences.size()));
      for (const auto& d : rep.differences) note(fmt::format("  {} {}: {}", d.kind, d.task, d.detail));
    }
    return rep.clean() ? ExitCode::ok : ExitCode::failure;
  }

  // One server per database: the lock is released by the kernel if the server dies. A
  // PostgreSQL database is shared by the servers of several machines: one server per workspace.
  std::string lock_path = db_location;
  if (starts_with(lock_path, "sqlite:")) lock_path = lock_path.substr(7);
  if (is_postgres_location(db_location)) lock_path = (ws.root() / ".croq" / "monitor-postgresql").string();
  if (fs::path(lock_path).has_parent_path()) ensure_dir(fs::path(lock_path).parent_path());
  auto lock = FileLock::try_acquire(lock_path + ".lock", std::chrono::milliseconds(0), o->once ? "croq serve --once" : "croq serve");
  if (!lock) {
    throw Error(ExitCode::busy,
                fmt::format("another croq serve uses {} ({})", is_postgres_location(db_location)
                                                                 ? redact_postgres_location(db_location)
                                                                 : db_location,
                            FileLock::describe_holder(lock_path + ".lock")),
                "stop it first, or pass another --db");
  }
  auto db = open_database(db_location);

  MonitorOptions mo;
  mo.poll_ms = o->poll_ms;
  mo.scan_every = o->scan_every;
  mo.run_scheduler = !o->no_scheduler && !o->once;
  mo.query_gpus = !o->once;
  mo.scheduler.croq_exe = croq_exe();
  mo.scheduler.max_running = o->max_running;
  mo.scheduler.stop_grace = std::chrono::milliseconds(o->stop_grace_ms);
  mo.verbs = o->verbs;
  if (!o->once) mo.default_gpu = default_gpu_key();

  SupervisedLauncher launcher(deps.runner);
  if (o->once) {
    Monitor monitor(ws, *db, launcher, mo);
    SyncStats s = monitor.initial_sync();
    json doc = s.to_json();
    doc["ok"] = true;
    doc["db"] = db->location();
    doc["root"] = ws.root().string();
    doc["owner"] = monitor.owner();
    emit(doc);
    note(fmt::format("croq serve --once: {} tasks scanned, {} adopted, {} records added in {:.0f} ms",
                         s.tasks_scanned, s.tasks_adopted, s.rounds_added, s.ms));
    for (const auto& c : s.conflicts) note("croq serve: conflict: " + c);
    return ExitCode::ok;
  }

  const std::string bind_text = !o->bind.empty() ? o->bind : env_or("CROQ_SERVE_BIND", "127.0.0.1:8642");
  BindAddress bind = parse_bind(bind_text);
  AuthConfig auth = make_auth(bind, !o->token_file.empty() ? o->token_file : env_or("CROQ_SERVE_TOKEN_FILE", ""));
  mo.server_facts = {{"bind", bind.text()}, {"auth", auth.required ? "token (" + auth.source + ")" : auth.source}};

  // Signals are taken by one thread (sigwait); every other thread, children's supervisors
  // included, starts with them blocked and unblocks what it needs.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  Monitor monitor(ws, *db, launcher, mo);
  SyncStats first = monitor.initial_sync();
  HttpOptions ho;
  ho.bind = bind;
  ho.auth = auth;
  ho.threads = o->threads;
  ho.max_streams = o->max_streams;
  ho.max_streams_per_client = o->max_client_streams;
  ho.max_client_connections = o->max_client_connections;
  ho.head_timeout = std::chrono::milliseconds(o->head_timeout_ms);
  ho.body_timeout = std::chrono::milliseconds(o->body_timeout_ms);
  ho.max_body_bytes = o->max_body;
  HttpServer http(monitor, ho);
  int port = http.bind();
  bind.port = port;
  monitor.set_server_fact("bind", bind.text());
  const std::string url = fmt::format("http://{}/", bind.text());
  json doc = {{"ok", true},
              {"url", url},
              {"bind", bind.text()},
              {"port", port},
              {"db", db->location()},
              {"root", ws.root().string()},
              {"owner", monitor.owner()},
              {"auth", auth.required ? "token" : "none"},
              {"scheduler", mo.run_scheduler},
              {"tasks", first.tasks_scanned},
              {"adopted", first.tasks_adopted},
              {"records_indexed", first.rounds_added},
              {"index_ms", first.ms},
              {"pid", ::getpid()}};
  emit(doc);
  note(fmt::format("croq serve: {} (workspace {}, database {})", url, ws.root().string(), db->location()));
  if (auth.required && auth.source == "generated") {
    note(fmt::format("croq serve: access token (shown once; keep it): {}", auth.token));
    note(fmt::format("croq serve: open {}?token=<token> once in a browser, or send 'Authorization: Bearer <token>'", url));
  }
  for (const auto& w : first.warnings) note("croq serve: warning: " + w);
  for (const auto& c : first.conflicts) note("croq serve: conflict: " + c);

  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (sig == 0) return;
    monitor.bus().close();
    http.stop();
  });
  monitor.start();
  bool served = http.run();
  monitor.bus().close();
  monitor.stop();
  // Wake the signal thread if the server stopped for another reason.
  ::kill(::getpid(), SIGTERM);
  signal_thread.join();
  note("croq serve: stopped (running tasks keep running; the next croq serve adopts them)");
  return served ? ExitCode::ok : ExitCode::failure;
}

}  // namespace croq::web
