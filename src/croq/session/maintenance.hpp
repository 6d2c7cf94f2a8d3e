// Session validation and cleaning (the seeds' validate_tuning_session.py and
// clean_kernel_work_state.py). Cleaning never deletes: damaged files are kept beside the
// repaired ones as .bak.<time>, and a reset moves the tree into tuning/.trash/<time>/.
#pragma once
#include <vector>

#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct TaskValidation {
  TaskRef task;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  json to_json() const;
};

TaskValidation validate_task(const Workspace& ws, const TaskRef& task);

// Repairs one task: drops unreadable lines of idea-log.jsonl (old file kept as .bak.<time>),
// rebuilds results.tsv and the index, sets a damaged checkpoint aside. Returns the actions taken.
std::vector<std::string> clean_task_invalid(const Workspace& ws, const TaskRef& task,
                                            std::chrono::milliseconds lock_timeout);

// Moves tuning/<gpu>/<dsl> into tuning/.trash/<time>/<gpu>/<dsl>. Returns the new location.
fs::path reset_dsl_tree(const Workspace& ws, const std::string& gpu, const std::string& dsl);

}  // namespace croq
