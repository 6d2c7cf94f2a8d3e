// croq prepare as a function: a task's starting kernel (discover.hpp: the one recommended, the
// one picked, or a file given) copied to iter001 (with a croqtile kernel's companion sources) and
// its build and run scripts written. iter001 must be the task's next iteration: refused when it is
// stored, or has a source already (unless `force`, and then only while it is not stored).
#pragma once
#include <string>

#include "croq/util/step.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct PrepareOptions {
  std::string from;             // a source file to start from instead of discovery
  int pick = 0;                 // discovery's candidate (1-based); 0: the recommended one
  std::string tag;              // iter001_<tag> (default: from the source's name)
  bool force = false;           // replace iter001's source while it is not stored
  std::string croq_exe;         // the croq the scripts name
  int lock_timeout_ms = 30000;  // the task lock, to reserve iter001
};

// {iter, kernel, source, files, from, scripts, next}; the note says what was copied from where.
StepResult run_prepare(Workspace& ws, const TaskRef& task, const PrepareOptions& o, const StepDeps& deps);

}  // namespace croq
