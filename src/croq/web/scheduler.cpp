// The scheduler (scheduler.hpp).
#include "croq/web/scheduler.hpp"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/util/rate_limit.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/web/ledger_sync.hpp"

namespace croq::web {

namespace {

constexpr size_t k_rate_limit_window = 16 * 1024;
constexpr size_t k_max_log_line = 2000;
constexpr int k_max_log_lines_per_tick = 500;
constexpr uint64_t k_max_log_read = 256 * 1024;

std::string read_tail_bytes(const fs::path& p, size_t n) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in) return {};
  auto size = static_cast<uint64_t>(in.tellg());
  uint64_t from = size > n ? size - n : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string out(size - from, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

[[noreturn]] void refuse(const std::string& msg, const std::string& hint = {}) {
  throw Error(ExitCode::refused, msg, hint);
}

}  // namespace

bool mentions_rate_limit(std::string_view text) { return mentions_rate_limit_phrase(text); }

Scheduler::Scheduler(const Workspace& ws, Database& db, EventBus* bus, ChildLauncher& launcher,
                     SchedulerOptions options, Clock now)
    : m_ws(ws),
      m_db(db),
      m_bus(bus),
      m_launcher(launcher),
      m_options(std::move(options)),
      m_owner(m_options.owner.empty() ? server_owner(ws) : m_options.owner),
      m_now(std::move(now)) {}

std::string Scheduler::now_text() const { return to_iso8601(now()); }

void Scheduler::commit(TaskRow& row, const std::string& history_kind, json history) {
  row.updated_at = now_text();
  m_db.update_task(row);
  try {
    write_monitor_state(m_ws, make_task(row.gpu, row.dsl, row.shape_key, row.model), row);
  } catch (const std::exception&) {
    // The database holds the state; the file is its copy for rebuilding a lost database.
  }
  history["state"] = row.state;
  history["reason"] = row.reason;
  m_db.add_history(row.uid, row.updated_at, history_kind, history);
  if (m_bus) {
    m_bus->publish("state", row.uid, row.state_event(history_kind));
  }
}

ChildHandle Scheduler::handle_of(const TaskRow& row, const TaskRef& task) const {
  ChildHandle h;
  h.pid = row.pid;
  h.start = row.pid_start;
  h.status_path = run_status_path(m_ws, task, row.runs);
  return h;
}

double Scheduler::running_seconds(const TaskRow& row) const {
  double s = row.run_seconds;
  if (!row.run_started_at.empty()) {
    if (auto t = parse_iso8601(row.run_started_at)) {
      s += std::max(0.0, std::chrono::duration<double>(now() - *t).count());
    }
  }
  return s;
}

bool Scheduler::budget_reached(const TaskRow& row, const TaskSpec& spec, std::string* why) const {
  int rounds = row.stats.value("rounds", 0);
  if (spec.budgets.rounds > 0 && rounds >= spec.budgets.rounds) {
    if (why) *why = fmt::format("budget reached: {} of {} rounds", rounds, spec.budgets.rounds);
    return true;
  }
  double secs = running_seconds(row);
  if (spec.budgets.seconds > 0 && secs >= spec.budgets.seconds) {
    if (why) *why = fmt::format("budget reached: ran {:.0f} of {:.0f} s", secs, spec.budgets.seconds);
    return true;
  }
  return false;
}

void Scheduler::request_stop(TaskRow& row, const std::string& target, const std::string& reason) {
  row.state = run_state_name(RunState::stopping);
  row.stop_target = target;
  row.stop_requested_at = now_text();
  row.reason = reason;
  commit(row, "stop_requested", {{"target", target}});
  TaskRef task = make_task(row.gpu, row.dsl, row.shape_key, row.model);
  m_launcher.signal(handle_of(row, task), SIGTERM);
}

void Scheduler::start(TaskRow& row) {
  TaskSpec spec = TaskSpec::from_json(row.spec, row.gpu);
  TaskRef task = spec.task();
  ExpandContext ctx{m_options.croq_exe, m_ws.root().string(), row.uid};
  // The run is recorded before the child exists, so that a crash in between leaves a trace the
  // next server follows (the supervisor's pid file).
  row.runs += 1;
  row.state = run_state_name(RunState::running);
  row.reason = fmt::format("run {} starting", row.runs);
  row.pid = 0;
  row.pid_start = 0;
  row.run_started_at = now_text();
  row.not_before.clear();
  row.stop_target.clear();
  commit(row, "starting", {{"run", row.runs}});

  LaunchSpec ls;
  ls.argv = expand_argv(spec, ctx);
  ls.cwd = spec.driver.cwd.empty() ? m_ws.root() : m_ws.root() / spec.driver.cwd;
  ls.env_set = child_env(spec, ctx, row.runs);
  ls.log_path = run_log_path(m_ws, task, row.runs);
  ls.status_path = run_status_path(m_ws, task, row.runs);
  ls.pid_path = monitor_dir(m_ws, task) / fmt::format("run-{:04d}.pid", row.runs);
  Launched l;
  if (!m_ws.contains(ls.cwd)) {
    l.error = fmt::format("driver.cwd {} lies outside the workspace", spec.driver.cwd);
  } else {
    try {
      ensure_dir(monitor_dir(m_ws, task));
      std::ofstream(ls.log_path, std::ios::app)
          << fmt::format("[croq serve] {} run {}: {}\n", now_text(), row.runs, shell_join(ls.argv));
      l = m_launcher.launch(ls);
    } catch (const std::exception& e) {
      l.error = e.what();
    }
  }
  if (!l.started) {
    std::ofstream(ls.log_path, std::ios::app) << "[croq serve] not started: " << l.error << "\n";
    row.reason = "not started: " + l.error;
    ChildStatus st;
    st.kind = ChildStatus::Kind::exited;
    st.exit_code = 127;
    on_exit(row, st);
    return;
  }
  row.pid = l.handle.pid;
  row.pid_start = l.handle.start;
  row.reason = fmt::format("run {} (pid {})", row.runs, row.pid);
  commit(row, "started", {{"run", row.runs}, {"pid", row.pid}, {"argv", ls.argv}});
  m_tails[row.uid] = LogTail{ls.log_path, 0, {}, row.runs};
}

bool Scheduler::output_mentions_rate_limit(const TaskRef& task, int run) const {
  return mentions_rate_limit(read_tail_bytes(run_log_path(m_ws, task, run), k_rate_limit_window));
}

void Scheduler::on_exit(TaskRow& row, const ChildStatus& status) {
  TaskSpec spec = TaskSpec::from_json(row.spec, row.gpu);
  TaskRef task = spec.task();
  tail_log(row, task, /*final=*/true);
  m_tails.erase(row.uid);
  row.run_seconds = running_seconds(row);
  row.run_started_at.clear();
  row.pid = 0;
  row.pid_start = 0;
  const bool vanished = status.kind == ChildStatus::Kind::vanished;
  const bool clean = !vanished && status.exit_code == 0 && status.signal == 0;
  std::string how = vanished ? std::string("ended without a status (killed, or the machine restarted)")
                    : status.signal ? fmt::format("killed by signal {}", status.signal)
                                    : fmt::format("exit {}", status.exit_code);
  std::string outcome;
  const std::string start_failure = starts_with(row.reason, "not started: ") ? row.reason : std::string();
  std::string why;
  if (!row.stop_target.empty()) {
    outcome = "stopped";
    row.state = row.stop_target;
    row.stop_target.clear();
    row.stop_requested_at.clear();
    // row.reason keeps why the stop was asked for.
  } else if (!vanished && (status.exit_code == k_rate_limit_exit_code ||
                           (!clean && output_mentions_rate_limit(task, row.runs)))) {
    outcome = "rate_limited";
    row.park_count += 1;
    double wait = spec.budgets.park_seconds * std::pow(2.0, row.park_count - 1);
    wait = std::min(wait, m_options.park_max_seconds);
    auto until = now() + std::chrono::milliseconds(static_cast<long long>(wait * 1000));
    row.state = run_state_name(RunState::parked);
    row.not_before = to_iso8601(until);
    row.reason = fmt::format("rate limited ({}{}); retry at {}", how,
                             status.exit_code == k_rate_limit_exit_code ? "" : ", rate limit in the output",
                             row.not_before);
  } else if (clean) {
    outcome = "finished";
    row.crash_count = 0;
    row.park_count = 0;
    if (budget_reached(row, spec, &why)) {
      row.state = run_state_name(RunState::done);
      row.reason = why;
    } else if (spec.restart_on_exit) {
      row.state = run_state_name(RunState::queued);
      row.queued_at = now_text();
      row.reason = "session ended before the budget; starting a new one";
    } else {
      row.state = run_state_name(RunState::done);
      row.reason = "the driver finished (exit 0)";
    }
  } else {
    outcome = "crashed";
    row.crash_count += 1;
    row.park_count = 0;
    std::string what = start_failure.empty() ? how : start_failure;
    if (row.crash_count > spec.budgets.max_restarts) {
      row.state = run_state_name(RunState::failed);
      row.reason = fmt::format("crashed {}; last: {} (see memory/.../monitor/run-{:04d}.log)",
                               row.crash_count == 1 ? std::string("once") : fmt::format("{} times", row.crash_count),
                               what, row.runs);
    } else {
      row.state = run_state_name(RunState::queued);
      row.queued_at = now_text();
      auto until = now() + std::chrono::milliseconds(
                               static_cast<long long>(m_options.crash_backoff_seconds * 1000 * row.crash_count));
      row.not_before = to_iso8601(until);
      row.reason = fmt::format("crashed ({}); restart {} of {}", what, row.crash_count, spec.budgets.max_restarts);
    }
  }
  row.last_exit = {{"run", row.runs},
                   {"exit_code", vanished ? json(nullptr) : json(status.exit_code)},
                   {"signal", status.signal},
                   {"outcome", outcome},
                   {"at", now_text()}};
  commit(row, "exited", {{"run", row.runs}, {"outcome", outcome}, {"how", how}});
}

void Scheduler::tail_log(const TaskRow& row, const TaskRef& task, bool final) {
  auto it = m_tails.find(row.uid);
  if (it == m_tails.end()) {
    // A child adopted after a restart: follow only what it writes from now on.
    LogTail t;
    t.path = run_log_path(m_ws, task, row.runs);
    t.run = row.runs;
    std::error_code ec;
    auto size = fs::file_size(t.path, ec);
    t.offset = ec ? 0 : size;
    it = m_tails.emplace(row.uid, std::move(t)).first;
  }
  LogTail& t = it->second;
  std::error_code ec;
  auto size = fs::file_size(t.path, ec);
  if (ec || size <= t.offset) {
    if (final && !t.partial.empty() && m_bus) {
      m_bus->publish("log", row.uid, {{"run", t.run}, {"line", preview(t.partial, k_max_log_line)}});
      t.partial.clear();
    }
    return;
  }
  uint64_t n = std::min<uint64_t>(size - t.offset, k_max_log_read);
  std::ifstream in(t.path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(t.offset));
  std::string chunk(n, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(n));
  chunk.resize(static_cast<size_t>(in.gcount()));
  t.offset += chunk.size();
  std::string text = t.partial + chunk;
  t.partial.clear();
  size_t start = 0;
  int published = 0, skipped = 0;
  while (true) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) break;
    std::string line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    start = nl + 1;
    if (published < k_max_log_lines_per_tick) {
      if (m_bus) {
        std::string shown = is_valid_utf8(line) ? line.substr(0, k_max_log_line) : preview(line, k_max_log_line);
        if (!is_valid_utf8(shown)) shown = preview(line, k_max_log_line);
        m_bus->publish("log", row.uid, {{"run", t.run}, {"line", shown}});
      }
      ++published;
    } else {
      ++skipped;
    }
  }
  t.partial = text.substr(start);
  if (t.partial.size() > 64 * 1024) t.partial.erase(0, t.partial.size() - 64 * 1024);
  if (final && !t.partial.empty() && m_bus) {
    m_bus->publish("log", row.uid, {{"run", t.run}, {"line", preview(t.partial, k_max_log_line)}});
    t.partial.clear();
  }
  if (skipped > 0 && m_bus) {
    m_bus->publish("log", row.uid, {{"run", t.run}, {"skipped", skipped},
                                    {"line", fmt::format("[croq serve] {} lines not streamed (see the run log)", skipped)}});
  }
}

void Scheduler::recover() {
  std::lock_guard lock(m_mutex);
  for (TaskRow row : m_db.tasks()) {
    if (row.owner != m_owner || !state_has_child(row.state)) continue;
    TaskRef task = make_task(row.gpu, row.dsl, row.shape_key, row.model);
    if (row.pid == 0) {
      // The server stopped between starting the run and recording its pid: the supervisor wrote it.
      auto text = read_file(monitor_dir(m_ws, task) / fmt::format("run-{:04d}.pid", row.runs));
      if (text) {
        try {
          row.pid = std::stoi(trim(*text));
          row.pid_start = process_start_time(row.pid).value_or(0);
        } catch (const std::exception&) {
          row.pid = 0;
        }
      }
    }
    ChildStatus st = m_launcher.poll(handle_of(row, task));
    if (st.kind == ChildStatus::Kind::running) {
      row.reason = fmt::format("run {} (pid {}) adopted after a server restart", row.runs, row.pid);
      commit(row, "adopted_child", {{"run", row.runs}, {"pid", row.pid}});
    }
    // Ended meanwhile: the next tick records how.
  }
}

// Requests other servers took for this server's tasks, oldest first: each is carried out (or its
// refusal noted in the task's history) before it is removed, so none is lost to a crash between.
void Scheduler::carry_out_requests() {
  for (const TaskRequest& q : m_db.requests_for(m_owner)) {
    json note = {{"action", q.action}, {"requested_by", q.requested_by}, {"requested_at", q.requested_at}};
    try {
      TaskRow row = act_locked(q.task_uid, q.action);
      note["state"] = row.state;
      note["reason"] = fmt::format("{} asked by {}: done", q.action, q.requested_by);
      m_db.add_history(q.task_uid, now_text(), "request_done", note);
    } catch (const Error& e) {
      note["reason"] = fmt::format("{} asked by {}: not done: {}", q.action, q.requested_by, e.what());
      m_db.add_history(q.task_uid, now_text(), "request_refused", note);
      if (m_bus) m_bus->publish("task", q.task_uid, {{"change", "request_refused"}, {"reason", note["reason"]}});
    }
    m_db.remove_request(q.id);
  }
}

void Scheduler::tick() {
  std::lock_guard lock(m_mutex);
  carry_out_requests();
  const auto t_now = now();
  std::vector<TaskRow> rows;
  for (TaskRow& row : m_db.tasks()) {
    if (row.owner == m_owner) rows.push_back(std::move(row));  // other servers schedule theirs
  }
  std::set<std::string> busy;
  int running = 0;
  // 1. Children: output, exits, budgets, stop escalation.
  for (TaskRow& row : rows) {
    if (!state_has_child(row.state)) continue;
    TaskSpec spec;
    TaskRef task;
    try {
      spec = TaskSpec::from_json(row.spec, row.gpu);
      task = spec.task();
    } catch (const std::exception& e) {
      continue;
    }
    ChildStatus st = m_launcher.poll(handle_of(row, task));
    if (st.kind == ChildStatus::Kind::vanished && row.pid == 0) {
      // Launch recorded but no pid yet (a crash between the two): give the supervisor a moment.
      auto started = parse_iso8601(row.run_started_at);
      if (started && t_now - *started < std::chrono::seconds(30)) {
        busy.insert(spec.device);
        ++running;
        continue;
      }
    }
    if (st.kind == ChildStatus::Kind::running) {
      tail_log(row, task, false);
      busy.insert(spec.device);
      ++running;
      std::string why;
      if (row.state == "running" && budget_reached(row, spec, &why)) {
        request_stop(row, run_state_name(RunState::done), why);
      } else if (row.state == "stopping") {
        auto asked = parse_iso8601(row.stop_requested_at);
        if (asked && t_now - *asked > m_options.stop_grace) {
          m_launcher.signal(handle_of(row, task), SIGKILL);
        }
      }
      continue;
    }
    on_exit(row, st);
  }
  // 2. Parked tasks whose wait is over.
  for (TaskRow& row : rows) {
    if (row.state != "parked") continue;
    auto until = parse_iso8601(row.not_before);
    if (!until || *until <= t_now) {
      row.state = run_state_name(RunState::queued);
      row.queued_at = now_text();
      row.not_before.clear();
      row.reason = "retrying after a rate limit";
      commit(row, "unparked");
    }
  }
  // 3. Start queued tasks: priority first, then the order they were queued in.
  std::vector<TaskRow*> queue;
  for (TaskRow& row : rows) {
    if (row.state != "queued") continue;
    auto until = parse_iso8601(row.not_before);
    if (!row.not_before.empty() && until && *until > t_now) continue;
    queue.push_back(&row);
  }
  std::stable_sort(queue.begin(), queue.end(), [](const TaskRow* a, const TaskRow* b) {
    int pa = a->spec.value("priority", 0), pb = b->spec.value("priority", 0);
    if (pa != pb) return pa > pb;
    return a->queued_at < b->queued_at;
  });
  for (TaskRow* row : queue) {
    if (m_options.max_running > 0 && running >= m_options.max_running) break;
    std::string device = row->spec.value("device", "");
    if (busy.count(device)) continue;
    TaskSpec spec;
    try {
      spec = TaskSpec::from_json(row->spec, row->gpu);
    } catch (const std::exception& e) {
      row->state = run_state_name(RunState::failed);
      row->reason = std::string("invalid spec: ") + e.what();
      commit(*row, "invalid");
      continue;
    }
    std::string why;
    if (budget_reached(*row, spec, &why)) {
      row->state = run_state_name(RunState::done);
      row->reason = why;
      commit(*row, "budget");
      continue;
    }
    start(*row);
    if (state_has_child(row->state)) {
      busy.insert(device);
      ++running;
    }
  }
}

TaskRow Scheduler::create(const TaskSpec& spec) {
  std::lock_guard lock(m_mutex);
  TaskRef task = spec.task();
  if (auto existing = m_db.task_by_key(m_owner, task.id())) {
    throw Error(ExitCode::conflict, fmt::format("task {} exists (task_uid {})", task.id(), existing->uid),
                "change its driver or budgets with PATCH /api/v1/tasks/" + existing->uid);
  }
  std::error_code ec;
  if (fs::exists(m_ws.task_config(task), ec)) {
    throw Error(ExitCode::conflict, fmt::format("task {} exists on disk", task.id()),
                "the monitor adopts it at its next scan; then set its driver with PATCH");
  }
  TaskRow row;
  row.uid = new_task_uid();
  row.key = task.id();
  row.gpu = task.gpu;
  row.dsl = task.dsl;
  row.shape_key = task.shape.text;
  row.model = task.model;
  row.origin = "created";
  row.owner = m_owner;
  row.spec = spec.to_json();
  row.created_at = now_text();
  // The seeds' rule: the task_uid is written into task_config.json before anything else.
  json extra = {{"mode", spec.mode},
                {"monitor", {{"spec", row.spec}, {"created_by", "croq serve"}, {"created_at", row.created_at}}}};
  ensure_task_config(m_ws, task, row.uid, extra);
  const bool runnable = spec.driver.kind != "none";
  row.state = run_state_name(runnable ? RunState::queued : RunState::external);
  row.reason = runnable ? "waiting for its device" : "no driver: the monitor only follows its ledger";
  row.queued_at = row.created_at;
  row.updated_at = row.created_at;
  m_db.insert_task(row);
  write_monitor_state(m_ws, task, row);
  m_db.add_history(row.uid, row.created_at, "created", {{"state", row.state}, {"spec", row.spec}});
  if (m_bus) m_bus->publish("task", row.uid, {{"change", "created"}, {"key", row.key}, {"state", row.state}});
  return row;
}

TaskRow Scheduler::act(const std::string& uid, const std::string& action) {
  std::lock_guard lock(m_mutex);
  return act_locked(uid, action);
}

TaskRequest Scheduler::request(const std::string& uid, const std::string& action) {
  std::lock_guard lock(m_mutex);
  auto found = m_db.task(uid);
  if (!found) throw_not_found(fmt::format("no task {}", uid));
  if (action != "pause" && action != "resume" && action != "cancel" && action != "retry") {
    throw_usage(fmt::format("unknown action '{}'", preview(action, 20)), "actions: pause resume cancel retry");
  }
  if (found->owner.empty()) {
    refuse(fmt::format("cannot {} task {}: no server has claimed it yet (a row from before task owners)", action, uid),
           "start croq serve (or croq serve --once) in the workspace that holds it; that server claims it");
  }
  TaskRequest q;
  q.task_uid = uid;
  q.action = action;
  q.requested_by = m_owner;
  q.requested_at = now_text();
  q.id = m_db.add_request(q);
  m_db.add_history(uid, q.requested_at, "requested",
                   {{"action", action},
                    {"requested_by", m_owner},
                    {"owner", found->owner},
                    {"state", found->state},
                    {"reason", fmt::format("{} asked by {}; its owner {} carries it out", action, m_owner,
                                           found->owner)}});
  if (m_bus) m_bus->publish("task", uid, {{"change", "requested"}, {"request", q.to_json()}});
  return q;
}

TaskRow Scheduler::act_locked(const std::string& uid, const std::string& action) {
  auto found = m_db.task(uid);
  if (!found) throw_not_found(fmt::format("no task {}", uid));
  TaskRow row = *found;
  if (row.owner != m_owner) {
    refuse(fmt::format("task {} belongs to {}; this server ({}) cannot {} it directly",
                       uid, row.owner.empty() ? std::string("no server yet") : "server " + row.owner, m_owner, action),
           "ask through the API (POST /api/v1/tasks/<uid>/<action>), which records the request for its owner");
  }
  const std::string s = row.state;
  const bool has_driver = row.spec.contains("driver") && row.spec["driver"].value("kind", "none") != "none";
  auto not_now = [&](const std::string& what) {
    refuse(fmt::format("cannot {} task {}: it is {}", action, uid, s), what);
  };
  if (action == "pause") {
    if (s == "running") {
      request_stop(row, "paused", "paused");
    } else if (s == "stopping") {
      row.stop_target = "paused";
      row.reason = "pausing";
      commit(row, "pause");
    } else if (s == "queued" || s == "parked") {
      row.state = "paused";
      row.reason = "paused";
      row.not_before.clear();
      commit(row, "pause");
    } else {
      not_now("only queued, parked or running tasks can be paused");
    }
  } else if (action == "resume") {
    if (!has_driver) not_now("set a driver first (PATCH /api/v1/tasks/" + uid + ")");
    if (s == "paused" || s == "external") {
      row.state = "queued";
      row.queued_at = now_text();
      row.not_before.clear();
      row.reason = "resumed";
      commit(row, "resume");
    } else {
      not_now("only paused tasks can be resumed (retry restarts a finished one)");
    }
  } else if (action == "cancel") {
    if (s == "running") {
      request_stop(row, "cancelled", "cancelled");
    } else if (s == "stopping") {
      row.stop_target = "cancelled";
      row.reason = "cancelled";
      commit(row, "cancel");
    } else if (s == "queued" || s == "parked" || s == "paused") {
      row.state = "cancelled";
      row.reason = "cancelled";
      row.not_before.clear();
      commit(row, "cancel");
    } else {
      not_now("only queued, parked, paused or running tasks can be cancelled");
    }
  } else if (action == "retry") {
    if (!has_driver) not_now("set a driver first (PATCH /api/v1/tasks/" + uid + ")");
    if (s == "failed" || s == "cancelled" || s == "done" || s == "parked") {
      row.state = "queued";
      row.queued_at = now_text();
      row.not_before.clear();
      row.crash_count = 0;
      row.park_count = 0;
      row.reason = "retry";
      commit(row, "retry");
    } else {
      not_now("only failed, cancelled, done or parked tasks can be retried");
    }
  } else {
    throw_usage(fmt::format("unknown action '{}'", preview(action, 20)), "actions: pause resume cancel retry");
  }
  return row;
}

TaskRow Scheduler::update_spec(const std::string& uid, const TaskSpec& spec) {
  std::lock_guard lock(m_mutex);
  auto found = m_db.task(uid);
  if (!found) throw_not_found(fmt::format("no task {}", uid));
  TaskRow row = *found;
  require_own_spec(row);
  if (state_has_child(row.state)) refuse("the task is running", "pause it first");
  TaskRef task = spec.task();
  if (task.id() != row.key) {
    throw_usage(fmt::format("gpu, dsl, shape_key and model cannot change ({} -> {})", row.key, task.id()),
                "create a new task instead");
  }
  {
    Ledger ledger(m_ws, task);
    FileLock lock_file = ledger.lock(std::chrono::milliseconds(10000), "croq serve: task spec update");
    json cfg = read_task_config(m_ws, task).value_or(json::object());
    if (cfg.empty()) cfg = ensure_task_config(m_ws, task, row.uid);
    cfg["mode"] = spec.mode;
    cfg["monitor"] = {{"spec", spec.to_json()}, {"created_by", "croq serve"}, {"updated_at", now_text()}};
    atomic_write(m_ws.task_config(task), dump_pretty(cfg));
  }
  row.spec = spec.to_json();
  if (row.state == "external" && spec.driver.kind != "none") {
    row.state = "paused";
    row.reason = "driver set; resume to run it";
  }
  commit(row, "spec_updated", {{"spec", row.spec}});
  return row;
}

void Scheduler::require_own_spec(const TaskRow& row) const {
  if (row.owner == m_owner) return;
  refuse(fmt::format("task {} belongs to {}: its spec lives in that workspace's task_config.json", row.uid,
                     row.owner.empty() ? std::string("no server yet") : "server " + row.owner),
         row.owner.empty() ? std::string("start croq serve in the workspace that holds it first")
                           : "change it through the monitor of " + row.owner);
}

json Scheduler::devices() {
  std::lock_guard lock(m_mutex);
  json out = json::object();
  for (const TaskRow& row : m_db.tasks()) {
    if (row.owner != m_owner) continue;  // another machine's devices
    std::string device = row.spec.value("device", "");
    if (device.empty()) continue;
    if (!out.contains(device)) out[device] = nullptr;
    if (state_has_child(row.state)) {
      out[device] = {{"task", row.uid}, {"key", row.key}, {"since", row.run_started_at}, {"pid", row.pid}};
    }
  }
  return out;
}

}  // namespace croq::web
