// croq measure and croq baseline: their options, parsed into steps/measure_step.hpp's structs;
// the steps themselves (device, lease, runner, measurement file, evidence, iter000's record) are
// run_measure and run_baseline. The method is in docs/measurement.md.
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/steps/measure_step.hpp"
#include "croq/util/number.hpp"
#include "croq/workspace/ids.hpp"

namespace croq::cli {

namespace {

// Options shared by measure and baseline: the runner's statistics and the run's limits.
void add_run_options(CLI::App& app, MeasureRunOptions& o, double default_timeout_s) {
  o.timeout_s = default_timeout_s;
  app.add_option("--device", o.device, "GPU index or UUID (default: CUDA_VISIBLE_DEVICES' first, else 0)");
  app.add_option("--seed", o.seed_text, "seed of the random inputs (default: fresh, recorded)")
      ->check(CLI::Validator(
          [](std::string& v) {
            return parse_decimal_unsigned(v) ? std::string() : "value '" + v + "' is not a decimal whole number";
          },
          "", "decimal seed"));
  app.add_option("--timeout", o.timeout_s, "seconds before the run is killed and recorded as HANG")
      ->default_val(default_timeout_s)->check(CLI::Range(1.0, 86400.0));
  app.add_option("--lease-timeout", o.lease_timeout_s, "seconds to wait for the device's lease")
      ->default_val(1800)->check(CLI::Range(0.0, 86400.0));
  app.add_option("--idle-timeout", o.idle_timeout_s,
                 "seconds to wait, holding the lease, for other processes to leave the GPU (and its clocks to be "
                 "free of limits) before timing; a GPU still shared then, or shared after the timing, makes the "
                 "measurement contended: shown, never stored as a decision's evidence")
      ->default_val(60)->check(CLI::Range(0.0, 86400.0));
  app.add_option("--b-layout", o.b_layout, "row, col, or auto (try the candidate's form)")
      ->default_val("auto")->check(CLI::IsMember({"row", "col", "auto"}));
  app.add_option("--warmup", o.warmup, "untimed launches before timing")->default_val(10)->check(CLI::Range(0, 100000));
  app.add_option("--warmup-ms", o.warmup_ms,
                 "then launch back to back until the warm-up has lasted this long: times the GPU in its "
                 "sustained, power-limited state instead of its burst state (0: the --warmup launches only)")
      ->default_val(0)->check(CLI::Range(0.0, 600000.0));
  app.add_option("--min-reps", o.min_reps, "timed repetitions at least")->default_val(20)->check(CLI::Range(1, 1000000));
  app.add_option("--max-reps", o.max_reps, "timed repetitions at most")->default_val(500)->check(CLI::Range(1, 1000000));
  app.add_option("--cv-target", o.cv_target, "stop once the coefficient of variation is below this")
      ->default_val(0.01)->check(CLI::Range(0.0, 10.0));
  app.add_option("--min-time-ms", o.min_time_ms,
                 "the CV target stops the repetitions only after they have lasted this long")
      ->default_val(0)->check(CLI::Range(0.0, 3.6e6));
  app.add_option("--time-budget-ms", o.time_budget_ms, "stop repeating after this much time")
      ->default_val(2000)->check(CLI::Range(0.0, 3.6e6));
  app.add_option("--rest-ratio", o.rest_ratio,
                 "duty cycle: once the GPU has been busy --rest-window-ms, it idles this many times as long, "
                 "so the timing stays under the power cap whatever ran before (0: back to back; auto: 1 on a "
                 "GPU, 0 for the cpp dsl, whose CPU timing has no power cap to stay under and only gets colder "
                 "caches from resting)")
      ->default_val("auto")
      ->check(CLI::Validator(
          [](std::string& v) {
            auto x = parse_decimal_number(v);
            return v == "auto" || (x && *x >= 0 && *x <= 100) ? std::string()
                                                                : "value '" + v + "' is not auto or a decimal number from 0 to 100";
          },
          "", "auto or decimal"));
  app.add_option("--rest-window-ms", o.rest_window_ms, "busy time between two rests")
      ->default_val(10)->check(CLI::Range(0.1, 60000.0));
  app.add_option("--processes", o.processes,
                 "a short kernel (median under --short-ms) is measured in this many runner processes and the "
                 "one with the median TFLOPS is the result: its time moves a few per cent between processes")
      ->default_val(3)->check(CLI::Range(1, 20));
  app.add_option("--short-ms", o.short_ms, "the median below which a kernel is short")
      ->default_val(0.025)->check(CLI::Range(0.0, 1000.0));
  app.add_flag("--no-l2-flush", o.no_l2_flush, "time hot: no L2 flush, no input rotation");
}

}  // namespace

VerbRunner setup_measure(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    MeasureOptions measure;
    bool pairs = false;
  };
  auto o = std::make_shared<Opts>();
  MeasureOptions& m = o->measure;
  add_task_options(app, o->task);
  app.add_option("--iter", m.iter, "iter<NNN>[_tag]: the built candidate of that iteration");
  app.add_flag("--pairs", o->pairs,
               "measure what the decision needs, in one command: the candidate (if not measured yet), a back-to-back "
               "re-run of a suspicious change, the close call's pairs; then print croq decide's result");
  app.add_option("--candidate", m.candidate, "a candidate file (.so, or a program with --legacy)");
  app.add_flag("--legacy", m.legacy, "run a self-timed program and parse its output (source: reported)");
  app.add_option("--out", m.out, "measurement file (default: perf/<key>/<model>/measure_<kernel>.json)");
  app.add_option("--mode", m.mode, "measure (verify and time) or verify (correctness only)")
      ->default_val("measure")->check(CLI::IsMember({"measure", "verify"}));
  add_run_options(app, m.run, 120);
  return [o](Context& ctx) {
    const MeasureOptions& m = o->measure;
    if (m.iter.empty() == m.candidate.empty()) throw_usage("give exactly one of --iter and --candidate");
    TaskRef t = resolve_task(ctx, o->task);  // the task context fills what was left out
    require_buildable_dsl(t.dsl, "measure candidates of");
    if (o->pairs) {
      if (m.iter.empty() || !m.out.empty() || m.legacy) {
        throw_usage("--pairs measures a built candidate by its --iter name (no --candidate, --out or --legacy)");
      }
      return run_measure_pairs(ctx, t, m.iter);
    }
    return print_step(ctx, run_measure(ctx.ws(), t, m, step_deps(ctx)));
  };
}

VerbRunner setup_baseline(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    BaselineOptions baseline;
  };
  auto o = std::make_shared<Opts>();
  BaselineOptions& b = o->baseline;
  add_task_options(app, o->task);
  app.add_option("--task-uid", b.task_uid,
                 "the task's uid, written to task_config.json first (default: the uid the task already has, else a new one)");
  app.add_option("--library", b.library,
                 "auto: the fastest library for the problem (GPU: cuBLAS and cuBLASLt; for gemm_sp also "
                 "cuSPARSELt, every library measured on the same pruned inputs; cpp: OpenBLAS), or one of "
                 "cublas, cublaslt, cusparselt, openblas")
      ->default_val("auto")->check(CLI::IsMember({"auto", "cublas", "cublaslt", "cusparselt", "openblas"}));
  app.add_option("--cusparselt", b.cusparselt,
                 "libcusparseLt.so.0 or the folder holding it (default: CROQ_CUSPARSELT, the loader's search "
                 "path, then the nvidia-cusparselt Python package)");
  app.add_flag("--force", b.force, "measure again even if a baseline exists");
  app.add_option("--iters", b.iters, "timed repetitions at least (the original skill's --iters; same as --min-reps)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--dtype", b.dtype, "the original skill's argument: checked against the shape key");
  app.add_option("--m", b.m, "checked against the shape key");
  app.add_option("--n", b.n, "checked against the shape key");
  app.add_option("--k", b.k, "checked against the shape key");
  add_run_options(app, b.run, 300);
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);  // the task context fills what was left out
    require_buildable_dsl(t.dsl, "measure a baseline for");
    BaselineOptions b = o->baseline;
    b.lock_timeout_ms = o->task.lock_timeout_ms;
    return print_step(ctx, run_baseline(ctx.ws(), t, b, step_deps(ctx)));
  };
}

}  // namespace croq::cli
