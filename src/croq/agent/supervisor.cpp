// The supervisor of agent sessions (supervisor.hpp): templates, the session loop, progress from
// the task's files, stall and rate-limit handling, and the session records.
#include "croq/agent/supervisor.hpp"

#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "croq/agent/prompt.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/protocol/stop.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process.hpp"
#include "croq/util/rate_limit.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq::agent {

json default_agents_config() {
  return {
      {"schema", k_agents_schema},
      {"default", "claude"},
      {"agents",
       {{"claude",
         {{"argv", {"claude", "-p", "{prompt}", "--dangerously-skip-permissions", "--output-format", "stream-json",
                    "--verbose"}},
          {"env", json::object()},
          {"skills_dir", ".claude/skills"}}},
        {"cursor",
         {{"argv", {"cursor-agent", "-p", "{prompt}", "--force", "--output-format", "stream-json"}},
          {"env", json::object()},
          {"skills_dir", ".cursor/skills"}}},
        {"opencode", {{"argv", {"opencode", "run", "{prompt}"}}, {"env", json::object()}, {"skills_dir", ".opencode/skills"}}},
        {"codex",
         {{"argv", {"codex", "exec", "--dangerously-bypass-approvals-and-sandbox", "{prompt}"}},
          {"env", json::object()},
          {"skills_dir", ".agents/skills"}}}}}};
}

fs::path agents_config_path(const fs::path& root) { return root / ".croq" / "agents.json"; }

fs::path sessions_dir(const Workspace& ws, const TaskRef& task) {
  return ws.kind_dir(task, ArtifactKind::memory) / "sessions";
}

namespace {

AgentSpec spec_from(const std::string& name, const json& j, const std::string& origin) {
  if (!j.is_object() || !j.contains("argv") || !j["argv"].is_array() || j["argv"].empty()) {
    throw_usage(fmt::format("agent '{}' in {} needs a non-empty \"argv\" array", name, origin),
                "e.g. {\"argv\": [\"claude\", \"-p\", \"{prompt}\"]}");
  }
  AgentSpec s;
  s.name = name;
  for (const auto& a : j["argv"]) {
    if (!a.is_string()) throw_usage(fmt::format("agent '{}' in {}: argv elements must be strings", name, origin));
    s.argv.push_back(a.get<std::string>());
  }
  if (j.contains("env") && j["env"].is_object()) {
    for (auto it = j["env"].begin(); it != j["env"].end(); ++it) {
      if (it.value().is_string()) s.env[it.key()] = it.value().get<std::string>();
    }
  }
  s.skills_dir = j.value("skills_dir", ".claude/skills");
  return s;
}

std::string expand(const std::string& text, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '{') {
      size_t e = text.find('}', i);
      if (e != std::string::npos) {
        auto it = vars.find(text.substr(i + 1, e - i - 1));
        if (it != vars.end()) {
          out += it->second;
          i = e + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

// Sizes and times of the files an agent's progress changes (ledger, evidence, checkpoint,
// sources, binaries); the session's own log under memory/ is left out on purpose.
std::string progress_signature(const Workspace& ws, const TaskRef& task) {
  std::string sig;
  for (auto kind : {ArtifactKind::logs, ArtifactKind::checkpoints, ArtifactKind::srcs, ArtifactKind::bin,
                    ArtifactKind::perf}) {
    std::error_code ec;
    fs::path dir = ws.kind_dir(task, kind);
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code ec2;
      if (!it->is_regular_file(ec2)) continue;
      auto size = it->file_size(ec2);
      auto t = it->last_write_time(ec2).time_since_epoch().count();
      sig += fmt::format("{}:{}:{};", it->path().filename().string(), size, t);
    }
  }
  return sig;
}

int stored_rounds(const Workspace& ws, const TaskRef& task) {
  Ledger ledger(ws, task);
  if (!ledger.exists()) return 0;
  try {
    return ledger.index().max_round;
  } catch (const Error&) {
    return 0;
  }
}

std::string compact_now() {
  std::string t = now_iso8601();  // 2026-11-29T07:12:50.123Z
  std::string out;
  for (char c : t.substr(0, 19)) {
    if (c != '-' && c != ':') out += c;
  }
  return out + "Z";
}

}  // namespace

AgentSpec load_agent(const fs::path& root, const std::string& name, const std::string& config_file) {
  json config = default_agents_config();
  std::string origin = "croq's defaults";
  fs::path path = config_file.empty() ? agents_config_path(root) : fs::path(config_file);
  if (auto text = read_file(path)) {
    auto j = try_parse_json(*text);
    if (!j || !j->is_object() || !(*j)["agents"].is_object()) {
      throw_usage(fmt::format("{} is not an agents config (croq-agents-v1 with an \"agents\" object)", path.string()),
                  "fix it, or delete it and run `croq init` to write the defaults again");
    }
    origin = path.string();
    // The file's agents replace the defaults of the same name; the others stay available.
    for (auto it = (*j)["agents"].begin(); it != (*j)["agents"].end(); ++it) config["agents"][it.key()] = it.value();
    if (j->contains("default") && (*j)["default"].is_string()) config["default"] = (*j)["default"];
  } else if (!config_file.empty()) {
    throw_not_found(fmt::format("no agents config at {}", config_file));
  }
  std::string want = name.empty() ? config["default"].get<std::string>() : name;
  if (!config["agents"].contains(want)) {
    std::string known;
    for (auto it = config["agents"].begin(); it != config["agents"].end(); ++it) known += (known.empty() ? "" : ", ") + it.key();
    throw_usage(fmt::format("unknown agent '{}'", want), fmt::format("agents in {}: {}", origin, known));
  }
  return spec_from(want, config["agents"][want], origin);
}

SupervisorResult supervise(const Workspace& ws, const TaskRef& task, const AgentSpec& agent,
                           const SupervisorOptions& o, const std::function<void(const std::string&)>& note) {
  const fs::path dir = sessions_dir(ws, task);
  ensure_dir(dir);
  auto sleep = o.sleep ? o.sleep : [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  PromptContext pc{o.croq_exe, agent.skills_dir, o.task_uid};
  const int rounds_at_start = stored_rounds(ws, task);
  json sessions = json::array();
  int counted = 0, rate_waits = 0, exit_code = 1;
  std::string stop_reason;
  const bool resumed_task = rounds_at_start > 0 || fs::exists(dir / "index.jsonl");

  for (int n = 1;; ++n) {
    StopCheck sc = stop_condition(ws, task, derive_state(ws, task));
    if (sc.stop_allowed) {
      exit_code = 0;
      stop_reason = "the protocol's stop condition holds: " + sc.reason;
      break;
    }
    if (counted >= o.max_sessions) {
      exit_code = 1;
      stop_reason = fmt::format("{} sessions ended before the stop condition held ({})", counted, sc.reason);
      break;
    }
    const bool first = n == 1 && !resumed_task;
    const std::string id = fmt::format("{}-s{:02}", compact_now(), n);
    const std::string prompt = first ? initial_prompt(ws, task, pc) : resume_prompt(ws, task, pc);
    const fs::path prompt_file = dir / (id + ".prompt.md");
    const fs::path log_file = dir / (id + ".log");
    atomic_write(prompt_file, prompt);

    std::map<std::string, std::string> vars = {
        {"prompt", prompt},         {"prompt_file", prompt_file.string()}, {"root", ws.root().string()},
        {"croq", o.croq_exe},       {"gpu", task.gpu},                     {"dsl", task.dsl},
        {"shape_key", task.shape.text}, {"model", task.model},             {"task_uid", o.task_uid},
        {"session", id},            {"skills_dir", agent.skills_dir}};
    ProcessSpec spec;
    for (const auto& a : agent.argv) spec.argv.push_back(expand(a, vars));
    spec.cwd = ws.root();
    spec.env_set = {{"CROQ_ROOT", ws.root().string()}, {"CROQ_BIN", o.croq_exe},   {"CROQ_GPU", task.gpu},
                    {"CROQ_DSL", task.dsl},            {"CROQ_SHAPE_KEY", task.shape.text},
                    {"CROQ_MODEL", task.model},        {"CROQ_TASK_UID", o.task_uid}, {"CROQ_AGENT_SESSION", id}};
    for (const auto& [k, v] : agent.env) spec.env_set[k] = expand(v, vars);
    spec.max_capture_bytes = 0;  // the output goes to the log file as it arrives

    std::ofstream log(log_file, std::ios::binary | std::ios::app);
    std::string tail;
    spec.on_output = [&](bool, std::string_view chunk) {
      log.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      log.flush();
      tail.append(chunk);
      if (tail.size() > 32768) tail.erase(0, tail.size() - 16384);
    };
    using clock = std::chrono::steady_clock;
    std::string sig = progress_signature(ws, task);
    auto last_progress = clock::now(), last_poll = clock::now();
    std::string why_stopped;
    spec.should_stop = [&] {
      auto now = clock::now();
      if (now - last_poll < o.poll) return false;
      last_poll = now;
      std::string s = progress_signature(ws, task);
      if (s != sig) {
        sig = s;
        last_progress = now;
        if (stop_condition(ws, task, derive_state(ws, task)).stop_allowed) {
          why_stopped = "stop_condition";
          return true;
        }
      }
      if (now - last_progress >= o.stall) {
        why_stopped = "stalled";
        return true;
      }
      return false;
    };

    const int before = stored_rounds(ws, task);
    const std::string started_at = now_iso8601();
    note(fmt::format("agent run: session {} ({}) started: {}", id, first ? "first prompt" : "resume prompt",
                     agent.argv.front()));
    ProcessResult r = process_runner().run(spec);
    log.close();
    const int after = stored_rounds(ws, task);
    const bool rate_limited = r.started && !r.stopped &&
                              (r.exit_code == k_agent_rate_limited_exit ||
                               ((r.exit_code != 0 || r.term_signal != 0) && mentions_rate_limit_phrase(tail)));
    json rec = {{"session", id},
                {"agent", agent.name},
                {"started_at", started_at},
                {"ended_at", now_iso8601()},
                {"prompt", first ? "initial" : "resume"},
                {"exit_code", r.started && !r.term_signal ? json(r.exit_code) : json(nullptr)},
                {"signal", r.term_signal},
                {"outcome", !r.started ? "not_started" : r.stopped ? why_stopped : rate_limited ? "rate_limited" : "exited"},
                {"how", r.describe()},
                {"rounds_before", before},
                {"rounds_after", after},
                {"log", ws.display(log_file)},
                {"prompt_file", ws.display(prompt_file)}};
    append_line(dir / "index.jsonl", dump_compact(rec));
    sessions.push_back(rec);
    note(fmt::format("agent run: session {} ended ({}, {}); rounds {} -> {}", id, rec["outcome"].get<std::string>(),
                     r.describe(), before, after));
    if (!r.started) {
      exit_code = 127;
      stop_reason = fmt::format("the agent could not be started: {}", r.spawn_error);
      break;
    }
    if (rate_limited) {
      if (rate_waits >= o.max_rate_limit_waits) {
        exit_code = k_agent_rate_limited_exit;
        stop_reason = fmt::format("still rate limited after {} waits", rate_waits);
        break;
      }
      auto wait = o.rate_limit_wait * (1LL << std::min(rate_waits, 10));
      ++rate_waits;
      note(fmt::format("agent run: rate limited; waiting {} s before retrying", wait.count() / 1000.0));
      sleep(wait);
      continue;
    }
    rate_waits = 0;
    ++counted;
  }
  note("agent run: " + stop_reason);
  json doc = {{"task", task.id()},
              {"agent", agent.name},
              {"exit_code", exit_code},
              {"stop_reason", stop_reason},
              {"sessions", sessions},
              {"rounds_at_start", rounds_at_start},
              {"rounds", stored_rounds(ws, task)},
              {"sessions_dir", ws.display(dir)}};
  return {exit_code, stop_reason, doc};
}

}  // namespace croq::agent
