// `croq agent run`: starts an external agent CLI on a task and supervises it.
//
// Agents are command-line templates (<root>/.croq/agents.json, croq-agents-v1; defaults for the
// known CLIs are built in and written there by `croq init`):
//   {"schema":"croq-agents-v1","default":"claude",
//    "agents":{"claude":{"argv":["claude","-p","{prompt}","--dangerously-skip-permissions",...],
//                        "env":{},"skills_dir":".claude/skills"}, ...}}
// argv elements are expanded one by one (never through a shell): {prompt} {prompt_file} {root}
// {croq} {gpu} {dsl} {shape_key} {model} {task_uid} {session} {skills_dir}.
//
// Supervision, from evidence only (the ledger, the evidence log, the checkpoint — never the
// agent's prose): a session that makes no progress for `stall` is stopped; a session that exits
// (or is stopped) before the protocol's stop condition holds is resumed with the resume summary
// as its prompt, up to `max_sessions`; a rate limit (exit 75 or a rate-limit phrase in the last
// output) is waited out and retried up to `max_rate_limit_waits` times; the protocol's stop
// condition ends the run. Each session's output goes to
// memory/<key>/<model>/sessions/<session>.log, its prompt to <session>.prompt.md, and one line per
// session to sessions/index.jsonl.
//
// Exit codes (what the monitor's scheduler reads): 0 the stop condition holds; 75 still rate
// limited after the waits (the scheduler parks the task); 1 the session budget ran out first;
// 127 the agent program could not be started.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::agent {

inline constexpr const char* k_agents_schema = "croq-agents-v1";
inline constexpr int k_agent_rate_limited_exit = 75;  // the monitor's k_rate_limit_exit_code

struct AgentSpec {
  std::string name;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string skills_dir = ".claude/skills";
};

// The built-in templates (claude, cursor, opencode, codex) as a croq-agents-v1 document.
json default_agents_config();
fs::path agents_config_path(const fs::path& root);
// The agent `name` (empty: the config's default) from `config_file` (empty: <root>/.croq/agents.json
// when it exists), else the built-in defaults. Throws Error(usage) for an unknown agent or a
// malformed config.
AgentSpec load_agent(const fs::path& root, const std::string& name, const std::string& config_file);

struct SupervisorOptions {
  int max_sessions = 10;
  std::chrono::milliseconds stall{std::chrono::minutes(30)};
  std::chrono::milliseconds poll{2000};
  std::chrono::milliseconds rate_limit_wait{std::chrono::minutes(5)};  // doubles per consecutive wait
  int max_rate_limit_waits = 3;
  std::string croq_exe;
  std::string task_uid;
  // Waiting (rate limits); tests replace it.
  std::function<void(std::chrono::milliseconds)> sleep;
};

struct SupervisorResult {
  int exit_code = 0;
  std::string stop_reason;
  json doc;
};

SupervisorResult supervise(const Workspace& ws, const TaskRef& task, const AgentSpec& agent,
                           const SupervisorOptions& options, const std::function<void(const std::string&)>& note);

// memory/<key>/<model>/sessions
fs::path sessions_dir(const Workspace& ws, const TaskRef& task);

}  // namespace croq::agent
