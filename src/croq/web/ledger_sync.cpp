// Database <- disk synchronisation and the consistency check (ledger_sync.hpp).
#include "croq/web/ledger_sync.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/util/error.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/web/task_spec.hpp"

namespace croq::web {

namespace {

struct FileStat {
  bool exists = false;
  int64_t size = 0;
  int64_t mtime_ns = 0;
};

FileStat stat_file(const fs::path& p) {
  struct stat st {};
  FileStat f;
  if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return f;
  f.exists = true;
  f.size = st.st_size;
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  return f;
}

std::string read_range(const fs::path& p, uint64_t offset, uint64_t length) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::string out(length, '\0');
  in.read(out.data(), static_cast<std::streamsize>(length));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

std::string signature_before(const fs::path& p, uint64_t offset) {
  uint64_t from = offset > 64 ? offset - 64 : 0;
  return sha256_hex(read_range(p, from, offset - from));
}

RoundRow to_row(const RoundRecord& r, int seq) {
  RoundRow row;
  row.seq = seq;
  row.round = r.round;
  row.iter = r.iter;
  row.kernel = r.kernel;
  row.tflops = r.tflops;
  row.decision = decision_name(r.decision);
  row.bottleneck = r.bottleneck;
  row.category = r.category;
  row.idea = r.idea;
  row.expected_gain = r.expected_gain;
  row.timestamp = r.timestamp;
  row.source = r.source();
  row.record = dump_compact(r.to_json());
  return row;
}

json brief(const std::optional<RecordBrief>& b) { return b ? b->to_json() : json(nullptr); }

bool same_number(std::optional<double> a, std::optional<double> b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return std::fabs(*a - *b) <= 1e-9 * std::max(1.0, std::fabs(*a));
}

}  // namespace

json SyncStats::to_json() const {
  return {{"tasks_scanned", tasks_scanned}, {"tasks_adopted", tasks_adopted}, {"tasks_changed", tasks_changed},
          {"rounds_added", rounds_added},   {"reindexed", reindexed},         {"tasks_claimed", tasks_claimed},
          {"remote_changed", remote_changed}, {"ms", ms}, {"warnings", warnings}, {"conflicts", conflicts}};
}

std::string server_owner(const Workspace& ws) {
  if (const char* o = std::getenv("CROQ_SERVE_OWNER"); o && *o) return o;
  char name[256] = {0};
  std::string host = ::gethostname(name, sizeof name - 1) == 0 && name[0] ? std::string(name) : "localhost";
  std::error_code ec;
  fs::path root = fs::weakly_canonical(fs::absolute(ws.root()), ec);
  return host + ":" + (ec ? ws.root().string() : root.string());
}

json ledger_stats(const Workspace& ws, const TaskRef& task) {
  json s;
  LedgerIndex idx;
  std::error_code ec;
  json warnings = json::array();
  if (fs::exists(ws.idea_log(task), ec)) {
    idx = Ledger(ws, task).index();
  } else if (fs::exists(ws.results_tsv(task), ec)) {
    std::vector<std::string> w;
    for (const auto& r : Ledger(ws, task).read_tsv(&w)) idx.fold(r);
    for (auto& x : w) idx.warnings.push_back(x);
  }
  for (size_t i = 0; i < idx.warnings.size() && i < 5; ++i) warnings.push_back(idx.warnings[i]);
  s["records"] = idx.records;
  s["rounds"] = idx.rounds.size();
  s["max_round"] = idx.max_round;
  s["best"] = brief(idx.best);
  s["baseline"] = brief(idx.baseline);
  s["last"] = brief(idx.last);
  s["best_tflops"] = idx.best && idx.best->tflops ? json(*idx.best->tflops) : json(nullptr);
  s["baseline_tflops"] = idx.baseline && idx.baseline->tflops ? json(*idx.baseline->tflops) : json(nullptr);
  if (idx.best && idx.best->tflops && idx.baseline && idx.baseline->tflops && *idx.baseline->tflops > 0) {
    s["pct_of_baseline"] = 100.0 * *idx.best->tflops / *idx.baseline->tflops;
  } else {
    s["pct_of_baseline"] = nullptr;
  }
  json d = json::object();
  for (const auto& [k, v] : idx.decisions) d[k] = v;
  s["decisions"] = d;
  s["non_keep_streak"] = idx.non_keep_streak;
  s["discard_streak"] = idx.discard_streak;
  s["invalid_lines"] = idx.invalid_lines;
  s["torn_tail"] = idx.torn_tail;
  s["last_activity"] = idx.last ? json(idx.last->timestamp) : json(nullptr);
  // Where the protocol stands: the step derived from evidence (protocol engine) and the checkpoint.
  json protocol = json::object();
  try {
    if (auto cp = read_checkpoint(ws, task)) {
      protocol["checkpoint"] = checkpoint_status_name(cp->status);
      protocol["iter"] = cp->iter;
      protocol["round"] = cp->round;
      protocol["idea"] = preview(cp->idea, 160);
      protocol["updated_at"] = cp->updated_at;
    }
  } catch (const Error& e) {
    warnings.push_back(e.what());
    protocol["checkpoint"] = "UNREADABLE";
  }
  try {
    croq::TaskState ps = derive_state(ws, task);
    protocol["step"] = step_name(ps.step);
    protocol["next_action"] = ps.next_action;
    protocol["mode"] = ps.details.value("mode", "");
  } catch (const std::exception& e) {
    warnings.push_back(std::string("protocol state: ") + e.what());
  }
  s["protocol"] = protocol.empty() ? json(nullptr) : protocol;
  s["warnings"] = warnings;
  return s;
}

LedgerSync::LedgerSync(const Workspace& ws, Database& db, EventBus* bus, std::string owner)
    : m_ws(ws), m_db(db), m_bus(bus), m_owner(owner.empty() ? server_owner(ws) : std::move(owner)) {}

void LedgerSync::publish(const std::string& kind, const std::string& uid, json data) {
  if (m_bus) m_bus->publish(kind, uid, std::move(data));
}

namespace {

// What a round or stats event carries of a task's stats.
json stats_summary(const json& stats) {
  if (!stats.is_object()) return json::object();
  return {{"best_tflops", stats.value("best_tflops", json(nullptr))},
          {"pct_of_baseline", stats.value("pct_of_baseline", json(nullptr))},
          {"rounds", stats.value("rounds", json(nullptr))},
          {"records", stats.value("records", json(nullptr))},
          {"last_activity", stats.value("last_activity", json(nullptr))},
          {"protocol", stats.value("protocol", json(nullptr))}};
}

}  // namespace

// Another server's task: its rows change only through that server; what changed since the last
// poll goes out as the events this server sends for its own tasks (with `owner` added), so that a
// dashboard open here follows it live.
void LedgerSync::watch_remote(const TaskRow& row, SyncStats& stats) {
  Remote now{row.state, row.updated_at, m_db.round_count(row.uid), dump_compact(row.stats)};
  auto it = m_remote.find(row.uid);
  if (it == m_remote.end()) {  // first sight: take note, send nothing (the page loads the rest)
    m_remote.emplace(row.uid, std::move(now));
    return;
  }
  Remote& was = it->second;
  if (now.state == was.state && now.updated_at == was.updated_at && now.rounds == was.rounds && now.stats == was.stats) {
    return;
  }
  ++stats.remote_changed;
  const json summary = stats_summary(row.stats);
  if (now.rounds > was.rounds) {
    RoundQuery q;
    q.after_seq = was.rounds - 1;
    for (const RoundRow& r : m_db.rounds(row.uid, q)) {
      json d = r.to_json();
      d["idea"] = preview(r.idea, 200);
      d["stats"] = summary;
      d["owner"] = row.owner;
      publish("round", row.uid, std::move(d));
    }
  } else if (now.rounds < was.rounds) {
    publish("task", row.uid, {{"change", "reindexed"}, {"stats", summary}, {"owner", row.owner}});
  } else if (now.stats != was.stats) {
    publish("task", row.uid, {{"change", "stats"}, {"stats", summary}, {"owner", row.owner}});
  }
  if (now.state != was.state || now.updated_at != was.updated_at) {
    json d = row.state_event("remote");
    d["owner"] = row.owner;
    publish("state", row.uid, std::move(d));
  }
  was = std::move(now);
}

// A row the database already holds for a task on this disk: this server's once claimed (a row
// from before owners, for the same task), else a conflict.
TaskRow LedgerSync::claim(TaskRow row, const TaskRef& task, SyncStats* stats) {
  if (row.owner.empty() && row.key == task.id()) {
    if (m_db.claim_task(row.uid, m_owner)) {
      row.owner = m_owner;
      m_db.add_history(row.uid, now_iso8601(), "claimed",
                       {{"owner", m_owner}, {"state", row.state}, {"reason", "claimed by " + m_owner}});
      if (stats) ++stats->tasks_claimed;
      publish("task", row.uid, {{"change", "claimed"}, {"key", row.key}, {"owner", m_owner}});
      return row;
    }
    if (auto fresh = m_db.task(row.uid)) row = *fresh;  // another server claimed it first
  }
  if (row.owner == m_owner) {
    throw Error(ExitCode::conflict,
                fmt::format("task {} has task_uid {}, which is this server's task {}: two folders with one task_uid",
                            task.id(), row.uid, row.key),
                "if one folder is a copy of the other, give it a task_uid of its own: remove task_uid from its "
                "task_config.json (the next scan writes a new one)");
  }
  throw Error(ExitCode::conflict,
              fmt::format("task {} on this disk has task_uid {}, which belongs to {} (task {} there); "
                          "this server leaves it alone",
                          task.id(), row.uid, row.owner.empty() ? std::string("no server yet") : "server " + row.owner,
                          row.key),
              "if this folder is a copy of that task, give it a task_uid of its own: remove task_uid from its "
              "task_config.json (the next scan writes a new one)");
}

TaskRow LedgerSync::adopt(const TaskRef& task, SyncStats* stats) {
  std::lock_guard lock(m_mutex);
  if (auto known = m_db.task_by_key(m_owner, task.id())) return *known;
  std::optional<json> cfg = read_task_config(m_ws, task);  // throws corrupt: reported by the caller
  std::string uid = cfg ? get_string(*cfg, "task_uid").value_or("") : "";
  if (!uid.empty()) {
    if (auto existing = m_db.task(uid)) return claim(*existing, task, stats);
  } else if (auto unclaimed = m_db.task_by_key("", task.id())) {
    // A row from before owners whose task_config.json has lost its task_uid: claimed, and the
    // uid written back.
    TaskRow row = claim(*unclaimed, task, stats);
    ensure_task_config(m_ws, task, row.uid);
    return row;
  }
  if (uid.empty()) {
    // The seeds' rule: a task's uid is written into its task_config.json before anything else.
    json written = ensure_task_config(m_ws, task, new_task_uid());
    uid = get_string(written, "task_uid").value_or("");
    cfg = written;
  }
  TaskRow row;
  row.uid = uid;
  row.key = task.id();
  row.gpu = task.gpu;
  row.dsl = task.dsl;
  row.shape_key = task.shape.text;
  row.model = task.model;
  row.created_at = cfg ? get_string(*cfg, "created_at").value_or(now_iso8601()) : now_iso8601();
  row.updated_at = now_iso8601();
  row.origin = "adopted";
  row.owner = m_owner;
  row.state = run_state_name(RunState::external);
  row.reason = "found on disk";
  // A task `croq tune` started says so in logs/tune.json: shown as croq tune's, with its times.
  if (auto text = read_file(m_ws.kind_dir(task, ArtifactKind::logs) / "tune.json")) {
    if (auto tj = try_parse_json(*text); tj && tj->is_object()) {
      row.origin = "croq tune";
      const bool done = tj->value("completed", false);
      const std::string started = get_string(*tj, "started_at").value_or("");
      const std::string finished = get_string(*tj, "finished_at").value_or("");
      row.reason = done ? fmt::format("started by croq tune; finished {}", finished)
                        : fmt::format("started by croq tune at {}; not finished (croq tune resumes it)", started);
      if (!started.empty() && !finished.empty()) {
        auto a = parse_iso8601(started), b = parse_iso8601(finished);
        if (a && b && *b >= *a) row.run_seconds = std::chrono::duration<double>(*b - *a).count();
      }
    }
  }
  // A task a monitor created carries its spec in task_config.json (and its state beside it), so a
  // lost database loses no task definition.
  bool has_spec = false;
  if (cfg && cfg->contains("monitor") && (*cfg)["monitor"].is_object() && (*cfg)["monitor"].contains("spec")) {
    try {
      json spec_json = (*cfg)["monitor"]["spec"];
      TaskSpec spec = TaskSpec::from_json(spec_json, task.gpu);
      row.spec = spec.to_json();
      row.origin = "created";
      has_spec = spec.driver.kind != "none";
    } catch (const Error& e) {
      if (stats) stats->warnings.push_back(fmt::format("{}: monitor spec in task_config.json ignored: {}", task.id(), e.what()));
    }
  }
  if (row.spec.empty()) {
    TaskSpec spec;
    spec.gpu = task.gpu;
    spec.dsl = task.dsl;
    spec.shape_key = task.shape.text;
    spec.model = task.model;
    spec.device = task.dsl == "cpp" ? "cpu" : "0";
    if (cfg) spec.mode = get_string(*cfg, "mode").value_or(spec.mode);
    row.spec = spec.to_json();
  }
  if (has_spec) {
    row.state = run_state_name(RunState::paused);
    row.reason = "recovered from task_config.json; resume to run it";
    if (auto st = read_monitor_state(m_ws, task); st && get_string(*st, "task_uid").value_or("") == uid) {
      auto state = get_string(*st, "state").value_or("");
      if (parse_run_state(state) && state != "external") {
        row.state = state;
        row.reason = get_string(*st, "reason").value_or("");
        row.queued_at = get_string(*st, "queued_at").value_or("");
        row.runs = static_cast<int>(get_integer(*st, "runs").value_or(0));
        row.crash_count = static_cast<int>(get_integer(*st, "crash_count").value_or(0));
        row.park_count = static_cast<int>(get_integer(*st, "park_count").value_or(0));
        row.run_seconds = get_number(*st, "run_seconds").value_or(0);
        row.not_before = get_string(*st, "not_before").value_or("");
        row.stop_target = get_string(*st, "stop_target").value_or("");
        row.stop_requested_at = get_string(*st, "stop_requested_at").value_or("");
        row.pid = static_cast<int>(get_integer(*st, "pid").value_or(0));
        row.pid_start = get_integer(*st, "pid_start").value_or(0);
        row.run_started_at = get_string(*st, "run_started_at").value_or("");
        row.last_exit = st->contains("last_exit") ? (*st)["last_exit"] : json(nullptr);
      }
    }
  }
  m_db.insert_task(row);
  m_db.add_history(row.uid, row.updated_at, "adopted", {{"origin", row.origin}, {"state", row.state}});
  if (stats) ++stats->tasks_adopted;
  publish("task", row.uid, {{"change", "adopted"}, {"key", row.key}, {"state", row.state}});
  return row;
}

int LedgerSync::sync_task(const TaskRow& row, SyncStats* stats) {
  std::lock_guard lock(m_mutex);
  if (row.owner != m_owner) return 0;  // another server's: its disk, not this one, says what it holds
  TaskRef task;
  try {
    task = make_task(row.gpu, row.dsl, row.shape_key, row.model);
  } catch (const Error& e) {
    if (stats) stats->warnings.push_back(fmt::format("{}: {}", row.key, e.what()));
    return 0;
  }
  const FileStat log = stat_file(m_ws.idea_log(task));
  const FileStat tsv = stat_file(m_ws.results_tsv(task));
  const FileStat cp = stat_file(m_ws.checkpoint(task));
  const FileStat ev = stat_file(evidence_log_path(m_ws, task));
  const FileStat proto = stat_file(protocol_path(m_ws, task));
  Seen& seen = m_seen[row.uid];
  const bool files_same = seen.log_size == (log.exists ? log.size : -2) && seen.log_mtime == log.mtime_ns &&
                          seen.tsv_size == (tsv.exists ? tsv.size : -2) && seen.tsv_mtime == tsv.mtime_ns;
  // The checkpoint, the evidence log and protocol.json change the protocol state only.
  const bool cp_same = seen.cp_size == (cp.exists ? cp.size : -2) && seen.cp_mtime == cp.mtime_ns &&
                       seen.ev_size == (ev.exists ? ev.size : -2) && seen.ev_mtime == ev.mtime_ns &&
                       seen.proto_mtime == proto.mtime_ns;
  if (files_same && cp_same) return 0;

  SyncUpdate update;
  std::optional<SyncState> prev = m_db.sync_state(row.uid);
  SyncState state = prev.value_or(SyncState{});
  std::vector<RecordBrief> added;
  bool rounds_changed = false;
  if (log.exists) {
    bool from_start = !prev || prev->kind != "jsonl" || static_cast<uint64_t>(log.size) < prev->bytes ||
                      (prev->bytes > 0 && signature_before(m_ws.idea_log(task), prev->bytes) != prev->tail_sig);
    if (from_start) {
      state = SyncState{};
      state.kind = "jsonl";
      update.replace = true;
    }
    if (static_cast<uint64_t>(log.size) > state.bytes) {
      std::string chunk = read_range(m_ws.idea_log(task), state.bytes, static_cast<uint64_t>(log.size) - state.bytes);
      size_t last_nl = chunk.rfind('\n');
      size_t complete = last_nl == std::string::npos ? 0 : last_nl + 1;
      JsonlParse parsed = parse_idea_log(std::string_view(chunk).substr(0, complete));
      for (const auto& r : parsed.records) {
        update.rounds.push_back(to_row(r, state.records++));
        added.push_back(RecordBrief::of(r));
      }
      state.bytes += complete;
      state.tail_sig = signature_before(m_ws.idea_log(task), state.bytes);
    }
    state.size = log.size;
    state.mtime_ns = log.mtime_ns;
    rounds_changed = update.replace || !update.rounds.empty();
  } else if (tsv.exists) {
    if (!prev || prev->kind != "tsv" || prev->size != tsv.size || prev->mtime_ns != tsv.mtime_ns) {
      std::vector<std::string> warnings;
      auto records = Ledger(m_ws, task).read_tsv(&warnings);
      state = SyncState{};
      state.kind = "tsv";
      update.replace = true;
      for (const auto& r : records) update.rounds.push_back(to_row(r, state.records++));
      state.size = tsv.size;
      state.mtime_ns = tsv.mtime_ns;
      rounds_changed = true;
    }
  } else if (prev && prev->kind != "none") {
    state = SyncState{};
    update.replace = true;
    rounds_changed = true;
  }
  update.state = state;
  if (rounds_changed || !cp_same || !prev) update.stats = ledger_stats(m_ws, task);
  m_db.apply_sync(row.uid, update);
  seen.log_size = log.exists ? log.size : -2;
  seen.log_mtime = log.mtime_ns;
  seen.tsv_size = tsv.exists ? tsv.size : -2;
  seen.tsv_mtime = tsv.mtime_ns;
  seen.cp_size = cp.exists ? cp.size : -2;
  seen.cp_mtime = cp.mtime_ns;
  seen.ev_size = ev.exists ? ev.size : -2;
  seen.ev_mtime = ev.mtime_ns;
  seen.proto_mtime = proto.mtime_ns;

  if (stats) {
    ++stats->tasks_changed;
    stats->rounds_added += static_cast<int>(update.rounds.size());
    if (update.replace && prev) ++stats->reindexed;
  }
  json summary;
  if (update.stats) summary = stats_summary(*update.stats);
  if (update.replace) {
    publish("task", row.uid, {{"change", "reindexed"}, {"records", state.records}, {"stats", summary}});
  } else {
    for (size_t i = 0; i < update.rounds.size(); ++i) {
      const RoundRow& r = update.rounds[i];
      json d = r.to_json();
      d["idea"] = preview(r.idea, 200);
      d["stats"] = summary;
      publish("round", row.uid, std::move(d));
    }
    if (update.rounds.empty() && update.stats) publish("task", row.uid, {{"change", "stats"}, {"stats", summary}});
  }
  return static_cast<int>(update.rounds.size());
}

SyncStats LedgerSync::full_scan() {
  std::lock_guard lock(m_mutex);
  SyncStats stats;
  Stopwatch clock;
  for (const TaskRef& t : m_ws.list_tasks()) {
    ++stats.tasks_scanned;
    try {
      TaskRow row = adopt(t, &stats);
      sync_task(row, &stats);
    } catch (const Error& e) {
      if (e.code() != ExitCode::conflict) {
        stats.warnings.push_back(fmt::format("{}: {}", t.id(), e.what()));
      } else {
        stats.conflicts.push_back(e.hint().empty() ? std::string(e.what()) : fmt::format("{} ({})", e.what(), e.hint()));
      }
    } catch (const std::exception& e) {
      stats.warnings.push_back(fmt::format("{}: {}", t.id(), e.what()));
    }
  }
  stats.ms = clock.elapsed_ms();
  return stats;
}

SyncStats LedgerSync::poll_known() {
  std::lock_guard lock(m_mutex);
  SyncStats stats;
  Stopwatch clock;
  for (const TaskRow& row : m_db.tasks()) {
    if (row.owner != m_owner) {
      if (row.owner.empty() || !m_bus) continue;
      try {
        watch_remote(row, stats);
      } catch (const std::exception& e) {
        stats.warnings.push_back(fmt::format("{} (server {}): {}", row.key, row.owner, e.what()));
      }
      continue;
    }
    ++stats.tasks_scanned;
    try {
      sync_task(row, &stats);
    } catch (const std::exception& e) {
      stats.warnings.push_back(fmt::format("{}: {}", row.key, e.what()));
    }
  }
  stats.ms = clock.elapsed_ms();
  return stats;
}

// ---- check ----

json CheckItem::to_json() const { return {{"task", task}, {"uid", uid}, {"kind", kind}, {"detail", detail}}; }

json CheckReport::to_json() const {
  json j;
  j["clean"] = clean();
  j["owner"] = owner;
  j["tasks_on_disk"] = tasks_on_disk;
  j["tasks_in_db"] = tasks_in_db;
  j["tasks_of_other_servers"] = tasks_of_other_servers;
  j["tasks_unclaimed"] = tasks_unclaimed;
  j["rounds_on_disk"] = rounds_on_disk;
  j["rounds_in_db"] = rounds_in_db;
  j["differences"] = json::array();
  for (const auto& d : differences) j["differences"].push_back(d.to_json());
  j["pending"] = json::array();
  for (const auto& d : pending) j["pending"].push_back(d.to_json());
  return j;
}

CheckReport check_database(const Workspace& ws, Database& db, const std::string& owner) {
  CheckReport rep;
  rep.owner = owner.empty() ? server_owner(ws) : owner;
  std::map<std::string, TaskRow> by_key;  // this server's rows
  std::map<std::string, TaskRow> others;  // every other row, by uid
  for (auto& row : db.tasks()) {
    if (row.owner == rep.owner) {
      by_key[row.key] = row;
    } else {
      if (row.owner.empty()) ++rep.tasks_unclaimed;
      else ++rep.tasks_of_other_servers;
      others[row.uid] = row;
    }
  }
  rep.tasks_in_db = static_cast<int>(by_key.size());
  std::map<std::string, bool> on_disk;
  for (const TaskRef& t : ws.list_tasks()) {
    ++rep.tasks_on_disk;
    on_disk[t.id()] = true;
    auto it = by_key.find(t.id());
    auto add = [&](std::vector<CheckItem>& list, const std::string& uid, const char* kind, std::string detail) {
      list.push_back({t.id(), uid, kind, std::move(detail)});
    };
    std::vector<RoundRecord> records;
    std::string disk_uid;
    try {
      if (auto cfg = read_task_config(ws, t)) disk_uid = get_string(*cfg, "task_uid").value_or("");
      std::error_code ec;
      if (fs::exists(ws.idea_log(t), ec)) {
        // Only complete lines count: a torn last line is not a record yet.
        records = Ledger(ws, t).read_all().records;
      } else if (fs::exists(ws.results_tsv(t), ec)) {
        std::vector<std::string> w;
        records = Ledger(ws, t).read_tsv(&w);
      }
    } catch (const std::exception& e) {
      add(rep.differences, "", "unreadable", e.what());
      continue;
    }
    rep.rounds_on_disk += static_cast<int>(records.size());
    if (it == by_key.end()) {
      auto other = disk_uid.empty() ? others.end() : others.find(disk_uid);
      if (other != others.end() && !other->second.owner.empty()) {
        add(rep.differences, disk_uid, "owned_elsewhere",
            fmt::format("its task_uid belongs to server {} (task {} there); this server leaves it alone (if this "
                        "folder is a copy, remove task_uid from its task_config.json)",
                        other->second.owner, other->second.key));
      } else if (other != others.end()) {
        add(rep.differences, disk_uid, "missing_in_db",
            fmt::format("on disk with {} records; its row in the database has no owner yet (from before owners: "
                        "the server claims it at its next scan)",
                        records.size()));
      } else {
        add(rep.differences, disk_uid, "missing_in_db",
            fmt::format("on disk with {} records, not in the database (the server adopts it at its next scan)",
                        records.size()));
      }
      continue;
    }
    const TaskRow& row = it->second;
    if (!disk_uid.empty() && disk_uid != row.uid) {
      add(rep.differences, row.uid, "uid_differs",
          fmt::format("task_config.json says task_uid {}, the database {}", disk_uid, row.uid));
    } else if (disk_uid.empty()) {
      add(rep.differences, row.uid, "uid_differs", "task_config.json has no task_uid");
    }
    std::vector<RoundRow> rows = db.rounds(row.uid);
    rep.rounds_in_db += static_cast<int>(rows.size());
    size_t n = std::min(rows.size(), records.size());
    bool mismatch = false;
    for (size_t i = 0; i < n; ++i) {
      const RoundRecord& r = records[i];
      const RoundRow& d = rows[i];
      if (d.round != r.round || d.iter != r.iter || d.kernel != r.kernel || d.decision != decision_name(r.decision) ||
          d.bottleneck != r.bottleneck || !same_number(d.tflops, r.tflops) || d.seq != static_cast<int>(i)) {
        add(rep.differences, row.uid, "round_differs",
            fmt::format("record {}: disk round {} {} {} {}, database round {} {} {} {}", i, r.round, r.kernel,
                        decision_name(r.decision), format_tflops(r.tflops), d.round, d.kernel, d.decision,
                        format_tflops(d.tflops)));
        mismatch = true;
        break;
      }
    }
    if (!mismatch && rows.size() > records.size()) {
      add(rep.differences, row.uid, "extra_rounds_in_db",
          fmt::format("the database holds {} records, the disk {}", rows.size(), records.size()));
    } else if (!mismatch && rows.size() < records.size()) {
      add(rep.pending, row.uid, "behind",
          fmt::format("the database holds the first {} of {} records", rows.size(), records.size()));
    } else if (!mismatch) {
      json disk_stats;
      try {
        disk_stats = ledger_stats(ws, t);
      } catch (const std::exception& e) {
        disk_stats = json::object();
      }
      auto num = [](const json& j, const char* k) -> std::optional<double> {
        if (!j.is_object() || !j.contains(k) || !j[k].is_number()) return std::nullopt;
        return j[k].get<double>();
      };
      if (!same_number(num(disk_stats, "best_tflops"), num(row.stats, "best_tflops")) ||
          !same_number(num(disk_stats, "baseline_tflops"), num(row.stats, "baseline_tflops")) ||
          !same_number(num(disk_stats, "records"), num(row.stats, "records"))) {
        add(rep.differences, row.uid, "stats_differ",
            fmt::format("summary on disk: best {} baseline {} records {}; database: best {} baseline {} records {}",
                        format_tflops(num(disk_stats, "best_tflops")), format_tflops(num(disk_stats, "baseline_tflops")),
                        disk_stats.value("records", 0), format_tflops(num(row.stats, "best_tflops")),
                        format_tflops(num(row.stats, "baseline_tflops")), row.stats.value("records", 0)));
      }
    }
    if (auto st = read_monitor_state(ws, t)) {
      std::string disk_state = get_string(*st, "state").value_or("");
      if (get_string(*st, "task_uid").value_or("") == row.uid && disk_state != row.state) {
        add(rep.differences, row.uid, "state_differs",
            fmt::format("state.json says {}, the database {}", disk_state, row.state));
      }
    }
  }
  for (const auto& [key, row] : by_key) {
    if (!on_disk.count(key)) {
      rep.differences.push_back({key, row.uid, "missing_on_disk", "in the database, but its folder is gone"});
    }
  }
  return rep;
}

}  // namespace croq::web
