// croq profile (the seeds' ncu_profile) and croq classify (the seeds' profile_extract): their
// options. The profile itself (Nsight Compute on one launch of the candidate under the GPU lease,
// or the CPU timing roofline for dsl cpp; the files, the classification, the evidence) is
// profile::run_profile (croq/profile/run_profile.hpp).
// classify: one Nsight Compute CSV (raw page or per-section form) -> bottleneck, confidence,
// evidence, metrics and hints.
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/profile/classify_csv.hpp"
#include "croq/profile/run_profile.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"

namespace croq::cli {

VerbRunner setup_profile(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    profile::ProfileOptions profile;
  };
  auto o = std::make_shared<Opts>();
  profile::ProfileOptions& p = o->profile;
  add_task_options(app, o->task);
  app.add_option("--iter", p.iter, "the candidate: iter<NNN>_<tag> (or iter<NNN>); its .so is bin/<key>/<model>/<kernel>.so");
  app.add_option("--round", p.round, "the round number for the file names ncu_<kernel>_round<R> (default: the task's next round)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--library", p.library, "profile the library baseline instead (cublas): files ncu_iter000_<library>_round<R>");
  app.add_flag("--baseline", p.baseline, "the library baseline (same as --library cublas)");
  app.add_option("--binary", p.binary, "a legacy self-contained executable to profile (kernel-name filter and launch skip instead of NVTX)");
  app.add_option("--binary-arg", p.binary_args, "an argument for --binary (repeatable)");
  app.add_option("--preset", p.preset, "full (--set full, every section) or quick (the sections the classifier reads)")
      ->default_val("full");
  app.add_option("--kernel-name", p.kernel_name, "only kernels whose name matches this regex");
  app.add_option("--launch-skip", p.launch_skip, "skip this many matching launches first (default: 0 with NVTX, 1 for --binary)");
  app.add_option("--warmup", p.warmup, "warm-up launches the runner makes before the profiled one")->default_val(3)->check(CLI::Range(0, 1000));
  app.add_option("--seed", p.seed, "input seed for the runner")->default_val(1);
  app.add_option("--b-layout", p.b_layout,
                 "row | col | auto: layout of B for the runner (auto: the candidate's form, as croq measure finds it)")
      ->default_val("auto");
  app.add_option("--ncu", p.ncu, "the ncu executable (default: CROQ_NCU, else ncu on PATH)");
  app.add_option("--runner", p.runner, "the measurement runner (default: CROQ_GPU_RUNNER, else croq-gpu-runner beside croq)");
  app.add_option("--device", p.device, "GPU index or UUID to lease (default: first of CUDA_VISIBLE_DEVICES, else 0)");
  app.add_option("--timeout", p.timeout_s, "seconds ncu may run")->default_val(600)->check(CLI::Range(1, 86400));
  app.add_option("--lease-timeout", p.lease_timeout_s, "seconds to wait for the device's lease")
      ->default_val(600)->check(CLI::Range(0.0, 86400.0));
  app.add_flag("--no-classify", p.no_classify, "only capture; do not classify the CSV");
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);  // the task context fills what was left out
    require_buildable_dsl(t.dsl, "profile candidates of");
    return print_step(ctx, profile::run_profile(ctx.ws(), t, o->profile, step_deps(ctx)));
  };
}

VerbRunner setup_classify(CLI::App& app) {
  struct Opts {
    std::string csv;
    std::string iter;
    std::string dsl = "cuda";
    std::string shape_key;
    std::string kernel;
    double flops = 0;
    std::string dtype;
    std::string ncu_rep;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--csv", o->csv, "the Nsight Compute CSV (--page raw --csv, --section X --csv, or --print-summary per-kernel --csv)")->required();
  app.add_option("--iter", o->iter, "the iteration the profile belongs to (echoed in the output)");
  app.add_option("--dsl", o->dsl, "cuda | croqtile | triton | cpp: the IDEA menu the hints come from")->default_val("cuda");
  app.add_option("--shape-key", o->shape_key, "the problem (for achieved TFLOPS and the peak): matmul_f16fp32_4096x4096x4096");
  app.add_option("--kernel", o->kernel, "regex choosing the kernel row when the CSV holds several");
  app.add_option("--flops", o->flops, "the kernel's floating-point operations (instead of --shape-key)");
  app.add_option("--dtype", o->dtype, "dtype pair for the peak (f16f32, bf16, e4m3f16, tf32, f32, ...)");
  app.add_option("--ncu-rep", o->ncu_rep, "the .ncu-rep the CSV came from (default: the CSV's sibling .ncu-rep)");
  return [o](Context& ctx) {
    validate_dsl(o->dsl);
    profile::ClassifyRequest req;
    req.csv = o->csv;
    req.iter = o->iter;
    req.kernel_pattern = o->kernel;
    req.options.dsl = o->dsl;
    if (!o->shape_key.empty()) {
      profile::ShapeWork w = profile::shape_work(o->shape_key);
      req.options.flops = w.flops;
      req.options.dtype = w.dtype;
    }
    if (o->flops > 0) req.options.flops = o->flops;
    if (!o->dtype.empty()) req.options.dtype = parse_dtype_pair_or_throw(o->dtype).canonical;
    if (!o->ncu_rep.empty()) req.ncu_rep = fs::path(o->ncu_rep);
    json doc = profile::classify_csv(req);
    ctx.note(fmt::format("[classify] {}: {} ({} confidence) — {}", doc["kernel"].get<std::string>(),
                         doc["bottleneck"].get<std::string>(), doc["confidence"].get<std::string>(),
                         doc["reason"].get<std::string>()));
    ctx.emit(doc);
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
