// Task specs, states, argv expansion and the monitor's documents on disk (task_spec.hpp).
#include "croq/web/task_spec.hpp"

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/ids.hpp"

namespace croq::web {

namespace {

constexpr size_t k_max_args = 256;
constexpr size_t k_max_arg_bytes = 4096;

bool all_of_chars(const std::string& s, const char* allowed_extra) {
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view(allowed_extra).find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string field_string(const json& j, const char* key, const std::string& fallback = {}) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_string()) throw_usage(fmt::format("task field '{}' must be a string", key));
  return j[key].get<std::string>();
}

double field_number(const json& j, const char* key, double fallback, double lo, double hi) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number()) throw_usage(fmt::format("task field '{}' must be a number", key));
  double v = j[key].get<double>();
  if (!(v >= lo && v <= hi)) throw_usage(fmt::format("task field '{}' must lie in [{}, {}]", key, lo, hi));
  return v;
}

void check_text(const std::string& s, const char* what) {
  if (s.size() > k_max_arg_bytes) throw_usage(fmt::format("{} is longer than {} bytes", what, k_max_arg_bytes));
  if (!is_valid_utf8(s) || s.find('\0') != std::string::npos) {
    throw_usage(fmt::format("{} must be UTF-8 text without NUL", what));
  }
}

std::string expand_one(const std::string& arg, const std::map<std::string, std::string>& vars) {
  std::string out;
  size_t i = 0;
  while (i < arg.size()) {
    if (arg[i] == '{') {
      size_t close = arg.find('}', i);
      if (close != std::string::npos) {
        auto it = vars.find(arg.substr(i + 1, close - i - 1));
        if (it != vars.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += arg[i++];
  }
  return out;
}

}  // namespace

const char* run_state_name(RunState s) {
  switch (s) {
    case RunState::external: return "external";
    case RunState::queued: return "queued";
    case RunState::running: return "running";
    case RunState::stopping: return "stopping";
    case RunState::paused: return "paused";
    case RunState::parked: return "parked";
    case RunState::done: return "done";
    case RunState::failed: return "failed";
    case RunState::cancelled: return "cancelled";
  }
  return "?";
}

std::optional<RunState> parse_run_state(const std::string& s) {
  for (auto v : {RunState::external, RunState::queued, RunState::running, RunState::stopping,
                 RunState::paused, RunState::parked, RunState::done, RunState::failed, RunState::cancelled}) {
    if (s == run_state_name(v)) return v;
  }
  return std::nullopt;
}

bool state_has_child(const std::string& state) { return state == "running" || state == "stopping"; }

json TaskSpec::to_json() const {
  json j;
  j["gpu"] = gpu;
  j["dsl"] = dsl;
  j["shape_key"] = shape_key;
  j["model"] = model;
  j["mode"] = mode;
  j["device"] = device;
  j["priority"] = priority;
  json d;
  d["kind"] = driver.kind;
  d["argv"] = driver.argv;
  d["cwd"] = driver.cwd;
  d["env"] = json::object();
  for (const auto& [k, v] : driver.env) d["env"][k] = v;
  j["driver"] = d;
  j["budgets"] = {{"rounds", budgets.rounds},
                  {"seconds", budgets.seconds},
                  {"max_restarts", budgets.max_restarts},
                  {"park_seconds", budgets.park_seconds}};
  j["restart_on_exit"] = restart_on_exit;
  return j;
}

TaskSpec TaskSpec::from_json(const json& j, const std::string& default_gpu) {
  if (!j.is_object()) throw_usage("a task must be a JSON object");
  static const char* known[] = {"gpu", "dsl", "shape_key", "model", "mode", "device", "priority",
                                "driver", "budgets", "restart_on_exit"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool k = false;
    for (const char* f : known) k = k || it.key() == f;
    if (!k) throw_usage(fmt::format("unknown task field '{}'", preview(it.key(), 40)),
                        "fields: gpu dsl shape_key model mode device priority driver budgets restart_on_exit");
  }
  TaskSpec s;
  s.dsl = field_string(j, "dsl");
  s.shape_key = field_string(j, "shape_key");
  s.model = field_string(j, "model");
  s.gpu = field_string(j, "gpu", default_gpu);
  if (s.dsl.empty() || s.shape_key.empty() || s.model.empty()) {
    throw_usage("a task needs dsl, shape_key and model");
  }
  if (s.gpu.empty()) {
    throw_usage("a task needs a gpu key (e.g. sm90_NVIDIA_H200, or cpu_x86_64 for dsl cpp)",
                "no GPU was detected on this machine, so there is no default");
  }
  (void)make_task(s.gpu, s.dsl, s.shape_key, s.model);  // validates each part
  s.mode = field_string(j, "mode", "from_scratch");
  if (s.mode.empty() || s.mode.size() > 32 || !all_of_chars(s.mode, "_-")) {
    throw_usage("task field 'mode' must be 1-32 letters, digits, '_' or '-' (e.g. from_scratch)");
  }
  s.device = field_string(j, "device", s.dsl == "cpp" ? "cpu" : "0");
  if (s.device.empty() || s.device.size() > 64 || !all_of_chars(s.device, "_.:-")) {
    throw_usage("task field 'device' must be a GPU index, a GPU UUID or 'cpu'");
  }
  s.priority = static_cast<int>(field_number(j, "priority", 0, -1000, 1000));
  if (j.contains("restart_on_exit") && !j["restart_on_exit"].is_null()) {
    if (!j["restart_on_exit"].is_boolean()) throw_usage("task field 'restart_on_exit' must be true or false");
    s.restart_on_exit = j["restart_on_exit"].get<bool>();
  }
  if (j.contains("budgets") && !j["budgets"].is_null()) {
    const json& b = j["budgets"];
    if (!b.is_object()) throw_usage("task field 'budgets' must be an object");
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (it.key() != "rounds" && it.key() != "seconds" && it.key() != "max_restarts" && it.key() != "park_seconds") {
        throw_usage(fmt::format("unknown budget '{}'", preview(it.key(), 40)),
                    "budgets: rounds seconds max_restarts park_seconds");
      }
    }
    s.budgets.rounds = static_cast<int>(field_number(b, "rounds", 0, 0, 1e6));
    s.budgets.seconds = field_number(b, "seconds", 0, 0, 1e8);
    s.budgets.max_restarts = static_cast<int>(field_number(b, "max_restarts", 3, 0, 1000));
    s.budgets.park_seconds = field_number(b, "park_seconds", 900, 0, 86400);
  }
  if (j.contains("driver") && !j["driver"].is_null()) {
    const json& d = j["driver"];
    if (!d.is_object()) throw_usage("task field 'driver' must be an object");
    s.driver.kind = field_string(d, "kind", "command");
    if (s.driver.kind != "command" && s.driver.kind != "tune" && s.driver.kind != "agent" && s.driver.kind != "none") {
      throw_usage(fmt::format("unknown driver kind '{}'", preview(s.driver.kind, 40)), "kinds: command tune agent none");
    }
    if (d.contains("argv") && !d["argv"].is_null()) {
      if (!d["argv"].is_array()) {
        throw_usage("driver.argv must be an array of strings (one per argument; no shell is used)");
      }
      if (d["argv"].size() > k_max_args) throw_usage(fmt::format("driver.argv has more than {} arguments", k_max_args));
      for (const auto& a : d["argv"]) {
        if (!a.is_string()) throw_usage("driver.argv must be an array of strings (one per argument; no shell is used)");
        check_text(a.get<std::string>(), "a driver argument");
        s.driver.argv.push_back(a.get<std::string>());
      }
    }
    s.driver.cwd = field_string(d, "cwd");
    check_text(s.driver.cwd, "driver.cwd");
    if (!s.driver.cwd.empty()) {
      fs::path p(s.driver.cwd);
      if (p.is_absolute()) throw_usage("driver.cwd must be relative to the workspace root");
      for (const auto& part : p) {
        if (part == "..") throw_usage("driver.cwd must stay inside the workspace root (no '..')");
      }
    }
    if (d.contains("env") && !d["env"].is_null()) {
      if (!d["env"].is_object()) throw_usage("driver.env must be an object of strings");
      if (d["env"].size() > 64) throw_usage("driver.env has more than 64 variables");
      for (auto it = d["env"].begin(); it != d["env"].end(); ++it) {
        const std::string& k = it.key();
        if (k.empty() || k.size() > 128 || !all_of_chars(k, "_") || (k[0] >= '0' && k[0] <= '9')) {
          throw_usage(fmt::format("driver.env name '{}' is not a variable name", preview(k, 40)));
        }
        if (!it.value().is_string()) throw_usage("driver.env values must be strings");
        check_text(it.value().get<std::string>(), "a driver.env value");
        s.driver.env[k] = it.value().get<std::string>();
      }
    }
    if (s.driver.kind == "command" && s.driver.argv.empty()) {
      throw_usage("a command driver needs driver.argv (the program and its arguments)",
                  "e.g. \"driver\": {\"kind\": \"command\", \"argv\": [\"bash\", \"drive.sh\"]}");
    }
    if (s.driver.kind == "command" && s.driver.argv[0].empty()) throw_usage("driver.argv[0] is empty");
  }
  return s;
}

TaskRef TaskSpec::task() const { return make_task(gpu, dsl, shape_key, model); }

std::vector<std::string> expand_argv(const TaskSpec& spec, const ExpandContext& ctx) {
  std::map<std::string, std::string> vars = {
      {"croq", ctx.croq_exe},   {"root", ctx.root},       {"gpu", spec.gpu},
      {"dsl", spec.dsl},        {"shape_key", spec.shape_key}, {"model", spec.model},
      {"mode", spec.mode},      {"device", spec.device},  {"task_uid", ctx.task_uid},
      {"rounds_budget", std::to_string(spec.budgets.rounds)}};
  std::vector<std::string> out;
  if (spec.driver.kind == "tune") {
    // The device is chosen through CUDA_VISIBLE_DEVICES (child_env).
    out = {ctx.croq_exe, "--root", ctx.root, "tune", spec.shape_key, "--dsl", spec.dsl, "--gpu", spec.gpu,
           "--model", spec.model, "--task-uid", ctx.task_uid};
    if (spec.budgets.rounds > 0) {
      out.push_back("--rounds");
      out.push_back(std::to_string(spec.budgets.rounds));
    }
  } else if (spec.driver.kind == "agent") {
    out = {ctx.croq_exe, "--root",  ctx.root,     "agent",       "run",          "--dsl",
           spec.dsl,     "--gpu",   spec.gpu,     "--shape-key", spec.shape_key, "--model",
           spec.model,   "--task-uid", ctx.task_uid};
  }
  for (const auto& a : spec.driver.argv) out.push_back(expand_one(a, vars));
  return out;
}

std::map<std::string, std::string> child_env(const TaskSpec& spec, const ExpandContext& ctx, int run) {
  std::map<std::string, std::string> env = {
      {"CROQ_ROOT", ctx.root},          {"CROQ_GPU", spec.gpu},       {"CROQ_DSL", spec.dsl},
      {"CROQ_SHAPE_KEY", spec.shape_key}, {"CROQ_MODEL", spec.model}, {"CROQ_MODE", spec.mode},
      {"CROQ_DEVICE", spec.device},     {"CROQ_TASK_UID", ctx.task_uid},
      {"CROQ_RUN", std::to_string(run)}, {"CROQ_BIN", ctx.croq_exe},
      {"CROQ_BUDGET_ROUNDS", std::to_string(spec.budgets.rounds)},
      {"CROQ_BUDGET_SECONDS", fmt::format("{:.0f}", spec.budgets.seconds)}};
  if (spec.device != "cpu") env["CUDA_VISIBLE_DEVICES"] = spec.device;
  for (const auto& [k, v] : spec.driver.env) env[k] = v;
  return env;
}

fs::path monitor_dir(const Workspace& ws, const TaskRef& task) {
  return ws.kind_dir(task, ArtifactKind::memory) / "monitor";
}
fs::path monitor_state_path(const Workspace& ws, const TaskRef& task) { return monitor_dir(ws, task) / "state.json"; }
fs::path run_log_path(const Workspace& ws, const TaskRef& task, int run) {
  return monitor_dir(ws, task) / fmt::format("run-{:04d}.log", run);
}
fs::path run_status_path(const Workspace& ws, const TaskRef& task, int run) {
  return monitor_dir(ws, task) / fmt::format("run-{:04d}.status.json", run);
}

json monitor_state_doc(const TaskRow& row) {
  json j;
  j["schema"] = k_monitor_state_schema;
  j["task_uid"] = row.uid;
  j["state"] = row.state;
  j["reason"] = row.reason;
  j["queued_at"] = row.queued_at;
  j["runs"] = row.runs;
  j["crash_count"] = row.crash_count;
  j["park_count"] = row.park_count;
  j["run_seconds"] = row.run_seconds;
  j["not_before"] = row.not_before;
  j["stop_target"] = row.stop_target;
  j["stop_requested_at"] = row.stop_requested_at;
  j["pid"] = row.pid;
  j["pid_start"] = row.pid_start;
  j["run_started_at"] = row.run_started_at;
  j["last_exit"] = row.last_exit;
  j["updated_at"] = row.updated_at;
  return j;
}

void write_monitor_state(const Workspace& ws, const TaskRef& task, const TaskRow& row) {
  atomic_write(monitor_state_path(ws, task), dump_pretty(monitor_state_doc(row)), /*durable=*/true);
}

std::optional<json> read_monitor_state(const Workspace& ws, const TaskRef& task) {
  auto text = read_file(monitor_state_path(ws, task));
  if (!text) return std::nullopt;
  auto j = try_parse_json(*text);
  if (!j || !j->is_object() || get_string(*j, "schema").value_or("") != k_monitor_state_schema) return std::nullopt;
  return j;
}

}  // namespace croq::web
