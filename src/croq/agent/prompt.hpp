// What an agent session is told: the loop's first prompt for a task, and the resume summary
// (`croq resume --summary`) that starts every later session — where the task stands, computed
// from the ledger and the protocol's evidence, never from the previous session's prose.
#pragma once
#include <string>

#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::agent {

struct PromptContext {
  std::string croq_exe;
  std::string skills_dir = ".claude/skills";
  std::string task_uid;
};

// The resume summary: a few lines of text (best, last rounds, the open plan, the protocol's next
// step and its command, the stop condition), plus the same facts as JSON.
struct ResumeSummary {
  std::string text;
  json doc;
};
ResumeSummary resume_summary(const Workspace& ws, const TaskRef& task);

std::string initial_prompt(const Workspace& ws, const TaskRef& task, const PromptContext& ctx);
std::string resume_prompt(const Workspace& ws, const TaskRef& task, const PromptContext& ctx);

}  // namespace croq::agent
