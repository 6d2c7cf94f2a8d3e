// croq discover and croq prepare: the starting kernel of a task (src/croq/build/discover.hpp),
// copied to iter001 with its build and run scripts.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/build/prepare.hpp"
#include "croq/build/discover.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

namespace croq::cli {

namespace {

// The workspace if one can be found; discovery works without (tiers A and C).
Workspace* optional_workspace(Context& ctx) {
  try {
    return &ctx.ws();
  } catch (const Error&) {
    return nullptr;
  }
}

}  // namespace

VerbRunner setup_discover(CLI::App& app) {
  struct Opts {
    std::string dsl;
    std::string op;
    std::string dtype;
    std::string gpu;
    std::string shape_key;
    std::string model;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--dsl", o->dsl, "cuda | croqtile | triton | cpp")->required();
  app.add_option("--operator", o->op, "operator family, e.g. matmul")->required();
  app.add_option("--dtype", o->dtype, "only kernels for this dtype (f16f32, bf16f32, ...)");
  app.add_option("--gpu", o->gpu, "the device key the kernel is for (default: CROQ_GPU, else detected; may be absent)");
  app.add_option("--shape-key", o->shape_key, "with --model: the task being prepared (left out of tier B)");
  app.add_option("--model", o->model, "with --shape-key: the task being prepared");
  return [o](Context& ctx) {
    require_buildable_dsl(o->dsl, "discover kernels of");
    validate_path_component(o->op, "operator");
    if (!o->dtype.empty()) parse_dtype_pair_or_throw(o->dtype);
    DiscoverRequest req;
    req.dsl = o->dsl;
    req.op = o->op;
    req.dtype = o->dtype;
    try {
      req.gpu = resolve_device_key(o->gpu, o->dsl);
    } catch (const Error&) {
      req.gpu.clear();  // no GPU here and none named: tier B is not ordered by GPU
    }
    if (!o->shape_key.empty() && !o->model.empty() && !req.gpu.empty()) {
      req.exclude = make_task(req.gpu, o->dsl, o->shape_key, o->model);
    }
    Workspace* ws = optional_workspace(ctx);
    Discovery d = discover_starting_kernels(ws, req);
    json out{{"dsl", o->dsl}, {"operator", o->op}, {"dtype", o->dtype}, {"gpu", req.gpu}};
    out.update(d.to_json(ws));
    ctx.note(fmt::format("[discover] tier {}: {} candidate(s)", out.value("tier", ""), d.candidates.size()));
    ctx.emit(out);
    return ExitCode::ok;
  };
}

VerbRunner setup_prepare(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    PrepareOptions prepare;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--from", o->prepare.from, "copy this file as iter001 (instead of a discovered kernel)");
  app.add_option("--pick", o->prepare.pick, "the discovered kernel to use (its `index` in croq discover)")->check(CLI::PositiveNumber);
  app.add_option("--tag", o->prepare.tag, "tag of iter001 (default: from the kernel's name)");
  app.add_flag("--force", o->prepare.force, "replace an iter001 source that is not stored yet");
  return [o](Context& ctx) {
    if (!o->prepare.from.empty() && o->prepare.pick > 0) throw_usage("--from and --pick exclude each other");
    TaskRef task = resolve_task(ctx, o->task);  // the task context fills what was left out
    require_buildable_dsl(task.dsl, "prepare a starting kernel of");
    PrepareOptions p = o->prepare;
    p.croq_exe = (self_exe_dir() / "croq").string();
    p.lock_timeout_ms = o->task.lock_timeout_ms;
    return print_step(ctx, run_prepare(ctx.ws(), task, p, step_deps(ctx)));
  };
}

}  // namespace croq::cli
