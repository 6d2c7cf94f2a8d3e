// Where a task stands, computed from its files (never from a driver's memory):
//  - resume_state: the seeds' resume JSON (resume_state.sh) plus croq's fields;
//  - reinforce_line: the one-line progress summary printed after each STORE.
#pragma once
#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

json resume_state(const Workspace& ws, const TaskRef& task);

struct Reinforce {
  std::string line;
  json doc;
};
Reinforce reinforce(const Workspace& ws, const TaskRef& task);

// Skill files a driver re-reads after each STORE (the seeds' continuation contract).
std::vector<std::string> skill_files_to_reread(const std::string& dsl);

}  // namespace croq
