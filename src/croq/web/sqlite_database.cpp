// The SQLite backend of database.hpp: one connection in WAL mode (readers never wait for the
// writer; `serve --check` reads while a server writes), guarded by a mutex, with the schema's
// migrations below. Every write that belongs together (a task's new rounds, its sync position
// and its summary) is one transaction, so a crash leaves the index at a consistent earlier point
// that the next sync continues from.
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/web/database.hpp"
#include "croq/web/postgres_database.hpp"

namespace croq::web {

namespace {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};

// Append only: a released migration is never edited; a change is a new version.
const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "tasks, rounds, sync positions, history",
       R"sql(
CREATE TABLE tasks (
  uid TEXT PRIMARY KEY,
  task_key TEXT NOT NULL UNIQUE,
  gpu TEXT NOT NULL, dsl TEXT NOT NULL, shape_key TEXT NOT NULL, model TEXT NOT NULL,
  origin TEXT NOT NULL,
  spec TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  queued_at TEXT NOT NULL DEFAULT '',
  not_before TEXT NOT NULL DEFAULT '',
  stop_target TEXT NOT NULL DEFAULT '',
  stop_requested_at TEXT NOT NULL DEFAULT '',
  runs INTEGER NOT NULL DEFAULT 0,
  crash_count INTEGER NOT NULL DEFAULT 0,
  park_count INTEGER NOT NULL DEFAULT 0,
  run_seconds REAL NOT NULL DEFAULT 0,
  pid INTEGER NOT NULL DEFAULT 0,
  pid_start INTEGER NOT NULL DEFAULT 0,
  run_started_at TEXT NOT NULL DEFAULT '',
  last_exit TEXT NOT NULL DEFAULT 'null',
  stats TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE rounds (
  task_uid TEXT NOT NULL REFERENCES tasks(uid),
  seq INTEGER NOT NULL,
  round INTEGER NOT NULL,
  iter TEXT NOT NULL, kernel TEXT NOT NULL,
  tflops REAL,
  decision TEXT NOT NULL, bottleneck TEXT NOT NULL, category TEXT NOT NULL,
  idea TEXT NOT NULL, expected_gain TEXT NOT NULL, timestamp TEXT NOT NULL, source TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (task_uid, seq)
) WITHOUT ROWID;
CREATE TABLE ledger_sync (
  task_uid TEXT PRIMARY KEY REFERENCES tasks(uid),
  kind TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  tail_sig TEXT NOT NULL,
  records INTEGER NOT NULL,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL
);
CREATE TABLE task_history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_uid TEXT NOT NULL REFERENCES tasks(uid),
  at TEXT NOT NULL,
  kind TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX task_history_by_task ON task_history(task_uid, id);
)sql"},
      {2, "round filters by decision and bottleneck",
       R"sql(
CREATE INDEX rounds_by_decision ON rounds(task_uid, decision);
CREATE INDEX rounds_by_bottleneck ON rounds(task_uid, bottleneck);
)sql"},
      // Keys become unique per owner, which SQLite cannot change in place: the table is rebuilt
      // (rowids kept, so the creation order stays) with foreign keys off (migrate()).
      {3, "task owners (several servers on one database) and requests for other servers' tasks",
       R"sql(
CREATE TABLE tasks_v3 (
  uid TEXT PRIMARY KEY,
  task_key TEXT NOT NULL,
  gpu TEXT NOT NULL, dsl TEXT NOT NULL, shape_key TEXT NOT NULL, model TEXT NOT NULL,
  origin TEXT NOT NULL,
  spec TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  queued_at TEXT NOT NULL DEFAULT '',
  not_before TEXT NOT NULL DEFAULT '',
  stop_target TEXT NOT NULL DEFAULT '',
  stop_requested_at TEXT NOT NULL DEFAULT '',
  runs INTEGER NOT NULL DEFAULT 0,
  crash_count INTEGER NOT NULL DEFAULT 0,
  park_count INTEGER NOT NULL DEFAULT 0,
  run_seconds REAL NOT NULL DEFAULT 0,
  pid INTEGER NOT NULL DEFAULT 0,
  pid_start INTEGER NOT NULL DEFAULT 0,
  run_started_at TEXT NOT NULL DEFAULT '',
  last_exit TEXT NOT NULL DEFAULT 'null',
  stats TEXT NOT NULL DEFAULT '{}',
  owner TEXT NOT NULL DEFAULT '',
  UNIQUE (owner, task_key)
);
INSERT INTO tasks_v3 (rowid, uid, task_key, gpu, dsl, shape_key, model, origin, spec, state, reason, created_at,
  updated_at, queued_at, not_before, stop_target, stop_requested_at, runs, crash_count, park_count, run_seconds,
  pid, pid_start, run_started_at, last_exit, stats)
SELECT rowid, uid, task_key, gpu, dsl, shape_key, model, origin, spec, state, reason, created_at,
  updated_at, queued_at, not_before, stop_target, stop_requested_at, runs, crash_count, park_count, run_seconds,
  pid, pid_start, run_started_at, last_exit, stats FROM tasks;
DROP TABLE tasks;
ALTER TABLE tasks_v3 RENAME TO tasks;
CREATE TABLE task_requests (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_uid TEXT NOT NULL REFERENCES tasks(uid),
  action TEXT NOT NULL,
  requested_by TEXT NOT NULL,
  requested_at TEXT NOT NULL
);
CREATE INDEX task_requests_by_task ON task_requests(task_uid, id);
)sql"},
  };
  return list;
}

// A prepared statement, finalized on destruction.
class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view sql) : m_db(db) {
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &m_stmt, nullptr) != SQLITE_OK) {
      throw Error(ExitCode::internal, fmt::format("database: cannot prepare statement: {}", sqlite3_errmsg(db)));
    }
  }
  ~Stmt() { sqlite3_finalize(m_stmt); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, const std::string& v) {
    check(sqlite3_bind_text(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& bind(int i, const char* v) { return bind(i, std::string(v)); }
  Stmt& bind(int i, long long v) {
    check(sqlite3_bind_int64(m_stmt, i, v));
    return *this;
  }
  Stmt& bind(int i, int v) { return bind(i, static_cast<long long>(v)); }
  Stmt& bind(int i, double v) {
    check(sqlite3_bind_double(m_stmt, i, v));
    return *this;
  }
  Stmt& bind(int i, std::optional<double> v) {
    if (v) return bind(i, *v);
    check(sqlite3_bind_null(m_stmt, i));
    return *this;
  }
  // True while a row is available.
  bool step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    if (rc == SQLITE_CONSTRAINT) {
      throw Error(ExitCode::conflict, fmt::format("database: {}", sqlite3_errmsg(m_db)));
    }
    throw Error(ExitCode::internal, fmt::format("database: {}", sqlite3_errmsg(m_db)),
                "check the disk (space, permissions) and run `croq serve --check`");
  }
  void run() {
    while (step()) {
    }
  }
  void reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
  }
  std::string text(int c) const {
    const unsigned char* p = sqlite3_column_text(m_stmt, c);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(m_stmt, c)))
             : std::string();
  }
  long long integer(int c) const { return sqlite3_column_int64(m_stmt, c); }
  double real(int c) const { return sqlite3_column_double(m_stmt, c); }
  bool is_null(int c) const { return sqlite3_column_type(m_stmt, c) == SQLITE_NULL; }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw Error(ExitCode::internal, fmt::format("database: bind: {}", sqlite3_errmsg(m_db)));
  }
  sqlite3* m_db;
  sqlite3_stmt* m_stmt = nullptr;
};

json parse_or(const std::string& text, json fallback) {
  auto j = try_parse_json(text);
  return j ? *j : fallback;
}

const char* k_task_columns =
    "uid, task_key, gpu, dsl, shape_key, model, origin, spec, state, reason, created_at, updated_at, "
    "queued_at, not_before, stop_target, stop_requested_at, runs, crash_count, park_count, run_seconds, "
    "pid, pid_start, run_started_at, last_exit, stats, owner";

TaskRow read_task(const Stmt& s) {
  TaskRow t;
  t.uid = s.text(0);
  t.key = s.text(1);
  t.gpu = s.text(2);
  t.dsl = s.text(3);
  t.shape_key = s.text(4);
  t.model = s.text(5);
  t.origin = s.text(6);
  t.spec = parse_or(s.text(7), json::object());
  t.state = s.text(8);
  t.reason = s.text(9);
  t.created_at = s.text(10);
  t.updated_at = s.text(11);
  t.queued_at = s.text(12);
  t.not_before = s.text(13);
  t.stop_target = s.text(14);
  t.stop_requested_at = s.text(15);
  t.runs = static_cast<int>(s.integer(16));
  t.crash_count = static_cast<int>(s.integer(17));
  t.park_count = static_cast<int>(s.integer(18));
  t.run_seconds = s.real(19);
  t.pid = static_cast<int>(s.integer(20));
  t.pid_start = s.integer(21);
  t.run_started_at = s.text(22);
  t.last_exit = parse_or(s.text(23), nullptr);
  t.stats = parse_or(s.text(24), json::object());
  t.owner = s.text(25);
  return t;
}

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(const fs::path& path, const DatabaseOptions& options) : m_path(path), m_options(options) {
    int flags = SQLITE_OPEN_NOMUTEX;
    if (options.read_only) {
      flags |= SQLITE_OPEN_READONLY;
      std::error_code ec;
      if (!fs::exists(path, ec)) {
        throw_not_found(fmt::format("no monitor database at {}", path.string()),
                        "start `croq serve` once (or `croq serve --once`) to create it, or pass --db");
      }
    } else {
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      if (path.has_parent_path()) ensure_dir(path.parent_path());
    }
    if (sqlite3_open_v2(path.c_str(), &m_db, flags, nullptr) != SQLITE_OK) {
      std::string msg = m_db ? sqlite3_errmsg(m_db) : "out of memory";
      sqlite3_close(m_db);
      m_db = nullptr;
      throw Error(ExitCode::usage, fmt::format("cannot open the monitor database {}: {}", path.string(), msg),
                  "check the path and its permissions (--db)");
    }
    sqlite3_busy_timeout(m_db, 10000);
    try {
      if (!options.read_only) {
        exec("PRAGMA journal_mode=WAL");
        exec("PRAGMA synchronous=NORMAL");
      }
      // A migration that rebuilds a table runs with foreign keys off (SQLite's way to rebuild a
      // table that others reference); migrate() checks them before it commits.
      exec("PRAGMA foreign_keys=OFF");
      migrate();
      exec("PRAGMA foreign_keys=ON");
    } catch (...) {
      sqlite3_close(m_db);
      m_db = nullptr;
      throw;
    }
  }

  ~SqliteDatabase() override {
    if (m_db) sqlite3_close(m_db);
  }

  std::string location() const override { return "sqlite:" + m_path.string(); }

  int schema_version() override {
    std::lock_guard lock(m_mutex);
    return current_version_locked();
  }

  json info() override {
    std::lock_guard lock(m_mutex);
    json j;
    j["backend"] = "sqlite";
    j["sqlite_version"] = sqlite3_libversion();
    j["location"] = location();
    j["schema_version"] = current_version_locked();
    std::error_code ec;
    auto bytes = fs::file_size(m_path, ec);
    j["bytes"] = ec ? 0 : bytes;
    auto wal = fs::file_size(m_path.string() + "-wal", ec);
    j["wal_bytes"] = ec ? 0 : wal;
    Stmt s(m_db, "PRAGMA journal_mode");
    j["journal_mode"] = s.step() ? s.text(0) : "";
    Stmt c(m_db, "SELECT (SELECT COUNT(*) FROM tasks), (SELECT COUNT(*) FROM rounds)");
    if (c.step()) {
      j["tasks"] = c.integer(0);
      j["rounds"] = c.integer(1);
    }
    return j;
  }

  std::vector<TaskRow> tasks() override {
    std::lock_guard lock(m_mutex);
    std::vector<TaskRow> out;
    Stmt s(m_db, fmt::format("SELECT {} FROM tasks ORDER BY created_at, rowid", k_task_columns));
    while (s.step()) out.push_back(read_task(s));
    return out;
  }

  std::optional<TaskRow> task(const std::string& uid) override {
    std::lock_guard lock(m_mutex);
    Stmt s(m_db, fmt::format("SELECT {} FROM tasks WHERE uid = ?1", k_task_columns));
    s.bind(1, uid);
    if (s.step()) return read_task(s);
    return std::nullopt;
  }

  std::optional<TaskRow> task_by_key(const std::string& owner, const std::string& key) override {
    std::lock_guard lock(m_mutex);
    Stmt s(m_db, fmt::format("SELECT {} FROM tasks WHERE owner = ?1 AND task_key = ?2", k_task_columns));
    s.bind(1, owner).bind(2, key);
    if (s.step()) return read_task(s);
    return std::nullopt;
  }

  void insert_task(const TaskRow& t) override {
    std::lock_guard lock(m_mutex);
    require_writable();
    Stmt s(m_db, fmt::format("INSERT INTO tasks ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                             "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
                             k_task_columns));
    bind_task(s, t);
    s.bind(25, dump_compact(t.stats)).bind(26, t.owner);
    s.run();
  }

  void update_task(const TaskRow& t) override {
    std::lock_guard lock(m_mutex);
    require_writable();
    Stmt s(m_db,
           "UPDATE tasks SET task_key = ?2, gpu = ?3, dsl = ?4, shape_key = ?5, model = ?6, origin = ?7, "
           "spec = ?8, state = ?9, reason = ?10, created_at = ?11, updated_at = ?12, queued_at = ?13, "
           "not_before = ?14, stop_target = ?15, stop_requested_at = ?16, runs = ?17, crash_count = ?18, "
           "park_count = ?19, run_seconds = ?20, pid = ?21, pid_start = ?22, run_started_at = ?23, "
           "last_exit = ?24 WHERE uid = ?1");
    bind_task(s, t);
    s.run();
    if (sqlite3_changes(m_db) == 0) throw_not_found(fmt::format("no task {} in the database", t.uid));
  }

  bool claim_task(const std::string& uid, const std::string& owner) override {
    std::lock_guard lock(m_mutex);
    require_writable();
    Stmt s(m_db, "UPDATE tasks SET owner = ?2 WHERE uid = ?1 AND owner = ''");
    s.bind(1, uid).bind(2, owner).run();
    return sqlite3_changes(m_db) > 0;
  }

  long long add_request(const TaskRequest& r) override {
    std::lock_guard lock(m_mutex);
    require_writable();
    Stmt s(m_db,
           "INSERT INTO task_requests (task_uid, action, requested_by, requested_at) VALUES (?1, ?2, ?3, ?4)");
    s.bind(1, r.task_uid).bind(2, r.action).bind(3, r.requested_by).bind(4, r.requested_at).run();
    return sqlite3_last_insert_rowid(m_db);
  }

  std::vector<TaskRequest> requests_for(const std::string& owner) override {
    std::lock_guard lock(m_mutex);
    Stmt s(m_db,
           "SELECT r.id, r.task_uid, r.action, r.requested_by, r.requested_at FROM task_requests r "
           "JOIN tasks t ON t.uid = r.task_uid WHERE t.owner = ?1 ORDER BY r.id");
    s.bind(1, owner);
    return read_requests(s);
  }

  std::vector<TaskRequest> task_requests(const std::string& uid) override {
    std::lock_guard lock(m_mutex);
    Stmt s(m_db,
           "SELECT id, task_uid, action, requested_by, requested_at FROM task_requests WHERE task_uid = ?1 "
           "ORDER BY id");
    s.bind(1, uid);
    return read_requests(s);
  }

  void remove_request(long long id) override {
    std::lock_guard lock(m_mutex);
    require_writable();
    Stmt s(m_db, "DELETE FROM task_requests WHERE id = ?1");
    s.bind(1, id).run();
  }

  std::optional<SyncState> sync_state(const std::string& uid) override {
    std::lock_guard lock(m_mutex);
    Stmt s(m_db, "SELECT kind, bytes, tail_sig, records, size, mtime_ns FROM ledger_sync WHERE task_uid = ?1");
    s.bind(1, uid);
    if (!s.step()) return std::nullopt;
    SyncState st;
    st.kind = s.text(0);
    st.bytes = static_cast<uint64_t>(s.integer(1));
    st.tail_sig = s.text(2);
    st.records = static_cast<int>(s.integer(3));
    st.size = s.integer(4);
    st.mtime_ns = s.integer(5);
    return st;
  }

  void apply_sync(const std::string& uid, const SyncUpdate& u) override {
    std::lock_guard lock(m_mutex);
    require_writable();
    exec("BEGIN IMMEDIATE");
    try {
      if (u.replace) {
        Stmt d(m_db, "DELETE FROM rounds WHERE task_uid = ?1");
        d.bind(1, uid).run();
      }
      if (!u.rounds.empty()) {
        Stmt ins(m_db,
                 "INSERT INTO rounds (task_uid, seq, round, iter, kernel, tflops, decision, bottleneck, "
                 "category, idea, expected_gain, timestamp, source, record) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                 "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
        for (const auto& r : u.rounds) {
          ins.bind(1, uid).bind(2, r.seq).bind(3, r.round).bind(4, r.iter).bind(5, r.kernel);
          ins.bind(6, r.tflops).bind(7, r.decision).bind(8, r.bottleneck).bind(9, r.category);
          ins.bind(10, r.idea).bind(11, r.expected_gain).bind(12, r.timestamp).bind(13, r.source);
          ins.bind(14, r.record);
          ins.run();
          ins.reset();
        }
      }
      Stmt st(m_db,
              "INSERT INTO ledger_sync (task_uid, kind, bytes, tail_sig, records, size, mtime_ns) VALUES "
              "(?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(task_uid) DO UPDATE SET kind = excluded.kind, "
              "bytes = excluded.bytes, tail_sig = excluded.tail_sig, records = excluded.records, "
              "size = excluded.size, mtime_ns = excluded.mtime_ns");
      st.bind(1, uid).bind(2, u.state.kind).bind(3, static_cast<long long>(u.state.bytes));
      st.bind(4, u.state.tail_sig).bind(5, u.state.records).bind(6, static_cast<long long>(u.state.size));
      st.bind(7, static_cast<long long>(u.state.mtime_ns));
      st.run();
      if (u.stats) {
        Stmt t(m_db, "UPDATE tasks SET stats = ?2 WHERE uid = ?1");
        t.bind(1, uid).bind(2, dump_compact(*u.stats)).run();
      }
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  std::vector<RoundRow> rounds(const std::string& uid, const RoundQuery& q) override {
    std::lock_guard lock(m_mutex);
    std::string sql =
        "SELECT seq, round, iter, kernel, tflops, decision, bottleneck, category, idea, expected_gain, "
        "timestamp, source, record FROM rounds WHERE task_uid = ?1 AND seq > ?2";
    if (!q.decision.empty()) {
      sql += q.decision == "FAIL"
                 ? " AND decision IN ('COMPILE_FAIL','VERIFY_FAIL','RUNTIME_FAIL','SEGFAULT','HANG')"
                 : " AND decision = ?3";
    }
    if (!q.bottleneck.empty()) sql += " AND bottleneck = ?4";
    if (!q.category.empty()) sql += " AND category = ?5";
    if (!q.text.empty()) sql += " AND (instr(lower(idea), ?6) > 0 OR instr(lower(kernel), ?6) > 0)";
    sql += q.newest_first ? " ORDER BY seq DESC" : " ORDER BY seq";
    if (q.limit > 0) sql += " LIMIT ?7";
    Stmt s(m_db, sql);
    s.bind(1, uid).bind(2, q.after_seq);
    if (!q.decision.empty() && q.decision != "FAIL") s.bind(3, q.decision);
    if (!q.bottleneck.empty()) s.bind(4, q.bottleneck);
    if (!q.category.empty()) s.bind(5, q.category);
    if (!q.text.empty()) s.bind(6, to_lower(q.text));
    if (q.limit > 0) s.bind(7, q.limit);
    std::vector<RoundRow> out;
    while (s.step()) {
      RoundRow r;
      r.seq = static_cast<int>(s.integer(0));
      r.round = static_cast<int>(s.integer(1));
      r.iter = s.text(2);
      r.kernel = s.text(3);
      if (!s.is_null(4)) r.tflops = s.real(4);
      r.decision = s.text(5);
      r.bottleneck = s.text(6);
      r.category = s.text(7);
      r.idea = s.text(8);
      r.expected_gain = s.text(9);
      r.timestamp = s.text(10);
      r.source = s.text(11);
      r.record = s.text(12);
      out.push_back(std::move(r));
    }
    return out;
  }

  int round_count(const std::string& uid) override {
    std::lock_guard lock(m_mutex);
    Stmt s(m_db, "SELECT COUNT(*) FROM rounds WHERE task_uid = ?1");
    s.bind(1, uid);
    return s.step() ? static_cast<int>(s.integer(0)) : 0;
  }

  void add_history(const std::string& uid, const std::string& at, const std::string& kind,
                   const json& data) override {
    std::lock_guard lock(m_mutex);
    require_writable();
    Stmt s(m_db, "INSERT INTO task_history (task_uid, at, kind, data) VALUES (?1, ?2, ?3, ?4)");
    s.bind(1, uid).bind(2, at).bind(3, kind).bind(4, dump_compact(data)).run();
  }

  std::vector<json> history(const std::string& uid, int limit) override {
    std::lock_guard lock(m_mutex);
    Stmt s(m_db, "SELECT id, at, kind, data FROM task_history WHERE task_uid = ?1 ORDER BY id DESC LIMIT ?2");
    s.bind(1, uid).bind(2, limit > 0 ? limit : 100);
    std::vector<json> out;
    while (s.step()) {
      json j;
      j["id"] = s.integer(0);
      j["at"] = s.text(1);
      j["kind"] = s.text(2);
      j["data"] = parse_or(s.text(3), json::object());
      out.push_back(std::move(j));
    }
    return out;
  }

 private:
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(m_db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      throw Error(ExitCode::internal, fmt::format("database: {}: {}", preview(sql, 60), msg),
                  "check the disk (space, permissions) and run `croq serve --check`");
    }
  }

  void require_writable() const {
    if (m_options.read_only) throw Error(ExitCode::internal, "database: write on a read-only connection");
  }

  bool has_table_locked(const char* name) {
    Stmt s(m_db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
    s.bind(1, name);
    return s.step();
  }

  int current_version_locked() {
    if (!has_table_locked("schema_migrations")) return 0;
    Stmt s(m_db, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    return s.step() ? static_cast<int>(s.integer(0)) : 0;
  }

  void migrate() {
    std::lock_guard lock(m_mutex);
    const int newest = migrations().back().version;
    const int target = m_options.target_version > 0 ? m_options.target_version : newest;
    int current = current_version_locked();
    if (current > newest) {
      throw Error(ExitCode::corrupt,
                  fmt::format("the monitor database {} has schema version {}, newer than this croq knows ({})",
                              m_path.string(), current, newest),
                  "run a newer croq, or point --db at another file (this one is left untouched)");
    }
    if (current >= target) return;
    if (m_options.read_only) {
      throw Error(ExitCode::corrupt,
                  fmt::format("the monitor database {} has schema version {}; this croq needs {}",
                              m_path.string(), current, target),
                  "start `croq serve` once to upgrade it");
    }
    exec("BEGIN IMMEDIATE");
    try {
      exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
           "description TEXT NOT NULL, applied_at TEXT NOT NULL)");
      current = current_version_locked();  // another process may have migrated meanwhile
      for (const auto& m : migrations()) {
        if (m.version <= current || m.version > target) continue;
        exec(m.sql);
        Stmt s(m_db, "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?1, ?2, ?3)");
        s.bind(1, m.version).bind(2, m.description).bind(3, now_iso8601()).run();
      }
      Stmt fk(m_db, "PRAGMA foreign_key_check");
      if (fk.step()) {
        throw Error(ExitCode::corrupt,
                    fmt::format("the monitor database {}: a row of {} refers to a missing row after the upgrade",
                                m_path.string(), fk.text(0)),
                    "the database is left as it was; rebuild it from the ledgers (move it away, then `croq serve "
                    "--once`)");
      }
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }

  static std::vector<TaskRequest> read_requests(Stmt& s) {
    std::vector<TaskRequest> out;
    while (s.step()) {
      TaskRequest r;
      r.id = s.integer(0);
      r.task_uid = s.text(1);
      r.action = s.text(2);
      r.requested_by = s.text(3);
      r.requested_at = s.text(4);
      out.push_back(std::move(r));
    }
    return out;
  }

  static void bind_task(Stmt& s, const TaskRow& t) {
    s.bind(1, t.uid).bind(2, t.key).bind(3, t.gpu).bind(4, t.dsl).bind(5, t.shape_key).bind(6, t.model);
    s.bind(7, t.origin).bind(8, dump_compact(t.spec)).bind(9, t.state).bind(10, t.reason);
    s.bind(11, t.created_at).bind(12, t.updated_at).bind(13, t.queued_at).bind(14, t.not_before);
    s.bind(15, t.stop_target).bind(16, t.stop_requested_at).bind(17, t.runs).bind(18, t.crash_count);
    s.bind(19, t.park_count).bind(20, t.run_seconds).bind(21, t.pid).bind(22, t.pid_start);
    s.bind(23, t.run_started_at).bind(24, dump_compact(t.last_exit));
  }

  fs::path m_path;
  DatabaseOptions m_options;
  sqlite3* m_db = nullptr;
  std::mutex m_mutex;
};

}  // namespace

json TaskRequest::to_json() const {
  return {{"id", id}, {"task_uid", task_uid}, {"action", action}, {"requested_by", requested_by},
          {"requested_at", requested_at}};
}

json TaskRow::state_event(const std::string& change) const {
  return {{"state", state},         {"reason", reason},           {"runs", runs},
          {"crash_count", crash_count}, {"park_count", park_count}, {"not_before", not_before},
          {"stop_target", stop_target}, {"device", spec.value("device", "")}, {"last_exit", last_exit},
          {"change", change}};
}

json RoundRow::to_json() const {
  json j;
  j["seq"] = seq;
  j["round"] = round;
  j["iter"] = iter;
  j["kernel"] = kernel;
  j["tflops"] = tflops ? json(*tflops) : json(nullptr);
  j["decision"] = decision;
  j["bottleneck"] = bottleneck;
  j["category"] = category;
  j["idea"] = idea;
  j["expected_gain"] = expected_gain;
  j["timestamp"] = timestamp;
  j["source"] = source;
  return j;
}

int newest_schema_version() { return migrations().back().version; }

std::unique_ptr<Database> open_database(const std::string& location, const DatabaseOptions& options) {
  if (location.empty()) throw_usage("no database location given", "pass --db PATH");
  if (is_postgres_location(location)) return open_postgres_database(location, options);
  std::string path = location;
  if (starts_with(location, "sqlite:")) path = location.substr(7);
  else if (location.find("://") != std::string::npos) {
    throw_usage(fmt::format("unknown database scheme in '{}'", preview(location)),
                "pass a file path or sqlite:PATH");
  }
  return std::make_unique<SqliteDatabase>(fs::path(path), options);
}

}  // namespace croq::web
