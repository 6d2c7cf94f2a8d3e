// croq sass dump | compare (the seeds' sass_compare dump-custom / dump-baseline / compare): their
// options; the dumps and the comparison are profile::run_sass_dump and profile::run_sass_compare
// (croq/profile/run_sass.hpp, which says where SASS comes from and where it is kept).
#include <memory>
#include <optional>

#include "cli/verbs.hpp"
#include "croq/profile/run_sass.hpp"

namespace croq::cli {

VerbRunner setup_sass_dump(CLI::App& app) {
  struct Opts {
    std::string gpu, dsl, shape_key, model;
    profile::SassDumpOptions dump;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--candidate", o->dump.src.so, "a compiled candidate (.so) or executable to disassemble with cuobjdump");
  app.add_option("--report", o->dump.src.report, "an .ncu-rep: SASS of the kernel it captured (the library baseline's)");
  app.add_option("--sass-file", o->dump.src.file, "a text file already holding SASS (cuobjdump, nvdisasm or ncu source page)");
  app.add_option("--kernel", o->dump.src.kernel, "regex choosing the function (default: the largest)");
  app.add_option("--gpu", o->gpu, "task: device key (with --dsl --shape-key --model)");
  app.add_option("--dsl", o->dsl, "task: dsl");
  app.add_option("--shape-key", o->shape_key, "task: shape key");
  app.add_option("--model", o->model, "task: model");
  app.add_option("--iter", o->dump.iter, "task: the candidate iter<NNN>_<tag> (bin/<key>/<model>/<kernel>.so)");
  app.add_flag("--baseline", o->dump.baseline, "task: this is the library baseline's SASS (kept as perf/.../sass_baseline.sass)");
  app.add_option("--out", o->dump.out, "write the SASS text here (default with a task: perf/<key>/<model>/sass_<kernel>.sass)");
  app.add_option("--cuobjdump", o->dump.cuobjdump, "cuobjdump executable (default: CROQ_CUOBJDUMP, else cuobjdump)");
  app.add_option("--ncu", o->dump.ncu, "ncu executable (default: CROQ_NCU, else ncu)");
  return [o](Context& ctx) {
    std::optional<TaskRef> task;
    if (!o->dsl.empty() || !o->shape_key.empty() || !o->model.empty()) {
      TaskOptions t{o->gpu, o->dsl, o->shape_key, o->model};
      task = resolve_task(ctx, t);
    }
    return print_step(ctx, profile::run_sass_dump(task ? &ctx.ws() : nullptr, task, o->dump, step_deps(ctx)));
  };
}

VerbRunner setup_sass_compare(CLI::App& app) {
  struct Opts {
    std::string gpu, dsl, shape_key, model;
    profile::SassCompareOptions compare;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--candidate", o->compare.cand.so, "the candidate binary (.so or executable)");
  app.add_option("--candidate-sass", o->compare.cand.file, "the candidate's SASS as text");
  app.add_option("--candidate-kernel", o->compare.cand.kernel, "regex choosing the candidate's function");
  app.add_option("--baseline-report", o->compare.base.report, "the baseline's .ncu-rep (SASS of the kernel actually launched)");
  app.add_option("--baseline-sass", o->compare.base.file, "the baseline's SASS as text");
  app.add_option("--baseline-kernel", o->compare.base.kernel, "regex choosing the baseline's function");
  app.add_option("--gpu", o->gpu, "task: device key");
  app.add_option("--dsl", o->dsl, "task: dsl");
  app.add_option("--shape-key", o->shape_key, "task: shape key");
  app.add_option("--model", o->model, "task: model");
  app.add_option("--iter", o->compare.iter, "task: the candidate iter<NNN>_<tag>; the baseline is perf/.../sass_baseline.sass");
  app.add_option("--cuobjdump", o->compare.cuobjdump, "cuobjdump executable (default: CROQ_CUOBJDUMP, else cuobjdump)");
  app.add_option("--ncu", o->compare.ncu, "ncu executable (default: CROQ_NCU, else ncu)");
  return [o](Context& ctx) {
    std::optional<TaskRef> task;
    if (!o->compare.iter.empty()) task = resolve_task(ctx, TaskOptions{o->gpu, o->dsl, o->shape_key, o->model});
    return print_step(ctx, profile::run_sass_compare(task ? &ctx.ws() : nullptr, task, o->compare, step_deps(ctx)));
  };
}

}  // namespace croq::cli
