// croq build as a function: iterations' sources built into candidates (build/builder.hpp), several
// at once, each through the build cache, under the protocol (a build implements the open plan;
// restoring a stored KEEP's lost binary is the one other build allowed), with the protocol's
// evidence of what was built from which source.
#pragma once
#include <string>
#include <vector>

#include "croq/build/builder.hpp"
#include "croq/util/step.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct BuildStepOptions {
  std::vector<std::string> iters;  // "7", "iter007", "iter007_tag", "attemptAAAB"
  int jobs = 1;                    // builds at once
  BuildOptions options;
};

// Every target is located (and the protocol asked) before anything is built: a typo in one
// changes nothing. {one build's document} or {verdict OK|FAILED, builds}; candidate_failed when
// one did not build. The compilers run through the process-wide runner (builder.hpp).
StepResult run_build(const Workspace& ws, const TaskRef& task, const BuildStepOptions& o, const StepDeps& deps);

}  // namespace croq
