// croq build: its options; the builds are run_build (croq/steps/build_step.hpp).
#include <memory>

#include "cli/verbs.hpp"
#include "croq/steps/build_step.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/ids.hpp"

namespace croq::cli {

VerbRunner setup_build(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::vector<std::string> iters;
    int jobs = 1;
    std::string arch;
    std::string flags;
    std::string choreo_flags;
    bool no_cache = false;
    std::string phase = "auto";
    bool force = false;
    bool no_abi = false;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--iter", o->iters, "iteration(s) to build: 7, iter007, iter007_tag, attemptAAAB (repeatable)")
      ->required();
  app.add_option("-j,--jobs", o->jobs, "builds to run at once")->check(CLI::Range(1, 64));
  app.add_option("--arch", o->arch, "CUDA architecture (default: from the device key; sm90_* -> sm_90a)");
  app.add_option("--flags", o->flags, "extra compiler flags, appended to croq's (one string, shell words)");
  app.add_option("--choreo-flags", o->choreo_flags, "croqtile: phase-1 choreo flags, e.g. \"--use-warpspec\"");
  app.add_flag("--no-cache", o->no_cache, "compile even when the build cache holds the result");
  app.add_option("--phase", o->phase, "croqtile: auto (default: phase 1 when the .cu is missing or stale), 1 (.co -> .cu only: the original skill's co2cu), 2 (build the .cu as it is), all (both)")
      ->check(CLI::IsMember({"auto", "1", "2", "all"}));
  app.add_flag("--force", o->force, "croqtile: let phase 1 overwrite a hand-edited .cu");
  app.add_flag("--no-abi", o->no_abi, "croqtile: do not build the ABI-bound shared object");
  return [o](Context& ctx) {
    TaskRef task = resolve_task(ctx, o->task);  // the task context fills what was left out
    require_buildable_dsl(task.dsl, "build");
    BuildStepOptions b;
    b.iters = o->iters;
    b.jobs = o->jobs;
    BuildOptions& options = b.options;
    options.arch = o->arch;
    options.flags = split_shell_words(o->flags);
    options.choreo_flags = split_shell_words(o->choreo_flags);
    options.use_cache = !o->no_cache;
    options.phase = o->phase;
    options.force = o->force;
    options.abi = !o->no_abi;
    options.croq_exe = (self_exe_dir() / "croq").string();
    return print_step(ctx, run_build(ctx.ws(), task, b, step_deps(ctx)));
  };
}

}  // namespace croq::cli
