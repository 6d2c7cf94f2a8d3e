// croq measure and croq baseline: verify and time a candidate, or the library baseline, with
// croq's own harness (a runner child process with a time limit, under the device's lease) and
// record the measurement. The method is in docs/measurement.md.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/verbs.hpp"
#include "croq/build/triton_source.hpp"
#include "croq/gpu/contention.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/gpu/lease.hpp"
#include "croq/ledger/documents.hpp"
#include "croq/ledger/store.hpp"
#include "croq/measure/candidates.hpp"
#include "croq/measure/elf_scan.hpp"
#include "croq/measure/invoke.hpp"
#include "croq/measure/peak.hpp"
#include "croq/measure/problem.hpp"
#include "croq/measure/rules.hpp"
#include "croq/measure/store_measurement.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/protocol/provenance.hpp"
#include "croq/util/build_info.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/number.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/time.hpp"
#include "croq/util/units.hpp"
#include "croq/workspace/operators.hpp"

namespace croq::cli {

namespace {

// Options shared by measure and baseline: the runner's statistics and the run's limits.
struct RunOptions {
  std::string device;
  std::string seed_text;
  double timeout_s = 120;
  double lease_timeout_s = 1800;
  double idle_timeout_s = 60;
  std::string b_layout = "auto";
  int warmup = 10;
  double warmup_ms = 0;
  int min_reps = 20;
  int max_reps = 500;
  double cv_target = 0.01;
  double min_time_ms = 0;
  double time_budget_ms = 2000;
  std::string rest_ratio = "auto";  // 1 on a GPU, 0 on the CPU (runner_options)
  double rest_window_ms = 10;
  int processes = 3;
  double short_ms = 0.025;
  bool no_l2_flush = false;
};

void add_run_options(CLI::App& app, RunOptions& o, double default_timeout_s) {
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

RepeatPolicy repeat_policy(const RunOptions& o) { return {o.processes, o.short_ms}; }

std::optional<uint64_t> parse_seed(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return parse_unsigned_arg(text, "--seed");
}

double rest_ratio_of(const std::string& text, bool gpu) {
  if (text == "auto") return gpu ? 1.0 : 0.0;
  return parse_number_arg(text, "--rest-ratio (auto or a number)", 0, 100);
}

RunnerOptions runner_options(const RunOptions& o, const ShapeKey& shape, bool gpu) {
  RunnerOptions r;
  r.op = shape_operator(shape);
  r.m = shape.m();
  r.n = shape.n();
  r.k = shape.k();
  r.dtype = shape.dtype_token;
  r.b_layout = o.b_layout;
  r.seed = parse_seed(o.seed_text);
  r.warmup = o.warmup;
  r.warmup_ms = o.warmup_ms;
  r.min_time_ms = o.min_time_ms;
  r.rest_ratio = rest_ratio_of(o.rest_ratio, gpu);
  r.rest_window_ms = o.rest_window_ms;
  r.min_reps = std::min(o.min_reps, o.max_reps);
  r.max_reps = o.max_reps;
  r.cv_target = o.cv_target;
  r.time_budget_ms = o.time_budget_ms;
  r.l2_flush = !o.no_l2_flush;
  return r;
}


// The device the run will use, and its lease id.
struct DeviceChoice {
  std::string lease_id;
  // The runner sees only this device (CUDA_VISIBLE_DEVICES=<uuid>), so the candidate's own CUDA
  // runtime cannot pick another one.
  std::string visible;
  DeviceFacts facts;
};

DeviceChoice choose_device(const std::string& dsl, const std::string& device_flag, const DtypePair& dtype,
                           const std::string& op) {
  DeviceChoice d;
  if (dsl == "cpp") {
    // One CPU lease, or a lease slot cpu<i> (--device, else CROQ_DEVICE: croq sweep's workers on
    // fake devices each hold their own).
    std::string slot = device_flag;
    if (slot.empty()) {
      if (const char* e = std::getenv("CROQ_DEVICE"); e && *e) slot = e;
    }
    d.lease_id = "cpu";
    if (slot.size() > 3 && slot.size() <= 7 && slot.rfind("cpu", 0) == 0 &&
        slot.find_first_not_of("0123456789", 3) == std::string::npos) {
      d.lease_id = slot;
    }
    d.facts.key = cpu_device_key();
    d.facts.name = "host CPU";
    return d;
  }
  std::string error;
  auto gpus = query_gpus(&error);
  auto g = select_gpu(gpus, device_flag);
  if (!g) {
    throw Error(ExitCode::no_device,
                gpus.empty() ? "no GPU: " + error
                             : fmt::format("device '{}' is not among the {} GPUs", device_flag, gpus.size()),
                "check `croq gpu check`; the cpp dsl measures on the CPU");
  }
  d.lease_id = lease_id_of(*g);
  d.visible = g->uuid.empty() ? std::to_string(g->index) : g->uuid;
  d.facts.name = g->name;
  d.facts.uuid = g->uuid;
  d.facts.compute_cap = g->compute_cap;
  d.facts.key = make_gpu_key(g->name, g->compute_cap);
  d.facts.driver = g->driver;
  if (g->sm_clock_mhz > 0) d.facts.sm_clock_mhz = g->sm_clock_mhz;
  if (g->max_sm_clock_mhz > 0) d.facts.max_sm_clock_mhz = g->max_sm_clock_mhz;
  int major = 0, minor = 0;
  std::sscanf(g->compute_cap.c_str(), "%d.%d", &major, &minor);
  PeakFigure peak = peak_for_operator(gpu_peak_tflops(g->name, major, minor, 0, g->max_sm_clock_mhz, dtype), op);
  d.facts.peak_tflops = peak.tflops;
  d.facts.peak_source = peak.source;
  return d;
}

std::filesystem::path runner_program(const std::string& dsl) {
  const std::string name = dsl == "cpp" ? "croq-cpu-runner" : "croq-gpu-runner";
  auto p = find_tool(name);
  if (!p) {
    throw Error(ExitCode::not_found, fmt::format("{} is not built", name),
                dsl == "cpp" ? "rebuild croq (cmake --build build)"
                             : "croq-gpu-runner is built only where the CUDA toolkit is found; build croq there");
  }
  return *p;
}

Measurement skeleton_for(const ShapeKey& shape, const DeviceChoice& dev, const std::string& b_layout) {
  Measurement m;
  m.croq_version = build_info::k_version;
  m.croq_git = build_info::git_sha();
  m.created_at = now_iso8601();
  const std::string op = shape_operator(shape);
  ProblemSetup p = make_problem(op, shape.m(), shape.n(), shape.k(), shape.dtype_token,
                                b_layout == "col" || (b_layout == "auto" && is_blockscaled_operator(op)) ? "col" : "row");
  m.problem = p.desc;
  if (b_layout == "auto") m.problem.b_layout = "auto";
  m.device = dev.facts;
  m.verification.elements = shape.m() * shape.n();
  m.verification.tolerance.rule.clear();
  return m;
}

std::string summary_line(const Measurement& m, const std::string& name) {
  if (m.verdict == Verdict::PASS && m.timing) {
    // The robust spread is what the decisions use (docs/protocol.md); both are shown, since a
    // large gap between them means a few repetitions were far from the rest.
    const std::string robust =
        m.timing->robust_cv ? fmt::format(", robust cv {:.2f} %", *m.timing->robust_cv * 100) : std::string();
    return fmt::format("{}: PASS{} {} (median {}, cv {:.2f} %{}, {} reps, {}){}", name,
                       m.contended() ? " (CONTENDED)" : "",
                       format_rate(m.tflops.value_or(0)), format_ms(m.timing->median_ms), m.timing->cv * 100, robust,
                       m.timing->reps,
                       m.source, m.flags.empty() ? "" : " flags: " + fmt::format("{}", fmt::join(m.flags, ",")));
  }
  return fmt::format("{}: {} ({}) {}", name, verdict_name(m.verdict), m.reason, m.detail);
}

// Runs `measure` (the runner, under the lease) between two checks of the GPU for other work
// (gpu/contention.hpp): before, waiting up to --idle-timeout for the device to be idle; after, once.
// A device still shared before, shared after, or on which the runner's samples saw another process
// makes the measurement contended: the flag, a warning, and the `contention` record. The CPU is not
// checked.
Measurement measure_uncontended(Context& ctx, const DeviceChoice& dev, const RunOptions& o,
                                const std::function<Measurement()>& measure) {
  if (dev.lease_id == "cpu") return measure();
  double waited = 0;
  ContentionCheck before = wait_until_idle(
      dev.facts.uuid, std::chrono::milliseconds(static_cast<long long>(o.idle_timeout_s * 1000)),
      std::chrono::milliseconds(500),
      [&](const ContentionCheck& c) {
        std::string why;
        for (const auto& r : c.reasons) why += (why.empty() ? "" : "; ") + r;
        ctx.note(fmt::format("croq {}: the GPU {} is not idle ({}); waiting up to {:.0f} s", ctx.verb, dev.lease_id, why,
                             o.idle_timeout_s));
      },
      &waited);
  Measurement m = measure();
  ContentionCheck after = check_contention(dev.facts.uuid, false);
  m.contention = contention_record(before, after, waited, m.device.other_processes);
  if (m.contended()) {
    m.flags.push_back(k_contended_flag);
    m.warnings.push_back("contended: " + m.contention_reason() +
                         ". The figures may be shown but are not a decision's evidence; measure again when the GPU is "
                         "idle (`croq gpu check --wait`, `croq gpu contention`)");
  }
  return m;
}

DeviceLease take_lease(Context& ctx, const DeviceChoice& dev, const std::string& purpose, double timeout_s) {
  return DeviceLease::acquire(dev.lease_id, purpose, std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)),
                              [&](const std::string& holder) {
                                ctx.note(fmt::format("croq {}: waiting for device {} ({}): held by {}", ctx.verb,
                                                     dev.facts.name, dev.lease_id,
                                                     holder.empty() ? "another process" : holder));
                              });
}

}  // namespace

Measurement measure_on_cpu(Context& ctx, const TaskRef& t, const std::filesystem::path& candidate,
                           const std::string& library, uint64_t seed, const std::string& purpose) {
  const std::string op = check_measurable_shape(t.shape);
  const DtypePair dtype = parse_dtype_pair_or_throw(t.shape.dtype_token);
  DeviceChoice dev = choose_device("cpp", "", dtype, op);
  RunOptions ro;
  ro.seed_text = std::to_string(seed);
  ro.b_layout = is_blockscaled_operator(op) ? "col" : "row";  // the block-scaled operator's B is [N,K] only
  ro.warmup = 2;
  ro.min_reps = 5;
  ro.max_reps = 60;
  ro.cv_target = 0.02;
  ro.warmup_ms = 0;  // an estimate for the profile, not a recorded measurement
  ro.min_time_ms = 0;
  ro.time_budget_ms = 1500;
  Measurement skel = skeleton_for(t.shape, dev, ro.b_layout);
  skel.kind = library.empty() ? "candidate" : "baseline";
  skel.candidate_path = library.empty() ? candidate.string() : "library:" + library;
  if (library.empty()) skel.candidate_sha256 = sha256_file(candidate);
  skel.seed = seed;
  DeviceLease lease = take_lease(ctx, dev, purpose, 1800);
  MeasureJob job;
  job.options = runner_options(ro, t.shape, false);
  job.options.mode = RunMode::measure;
  if (library.empty()) job.options.candidate = candidate.string();
  else job.options.library = library;
  job.timeout = std::chrono::seconds(120);
  job.skeleton = skel;
  job.program = runner_program("cpp");
  Measurement m = run_measure_job(job, process_runner());
  m.process["lease_waited_ms"] = lease.waited().count();
  return m;
}

VerbRunner setup_measure(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    RunOptions run;
    std::string iter;
    std::string candidate;
    bool legacy = false;
    std::string out;
    std::string mode = "measure";
    bool pairs = false;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--iter", o->iter, "iter<NNN>[_tag]: the built candidate of that iteration");
  app.add_flag("--pairs", o->pairs,
               "measure what the decision needs, in one command: the candidate (if not measured yet), a back-to-back "
               "re-run of a suspicious change, the close call's pairs; then print croq decide's result");
  app.add_option("--candidate", o->candidate, "a candidate file (.so, or a program with --legacy)");
  app.add_flag("--legacy", o->legacy, "run a self-timed program and parse its output (source: reported)");
  app.add_option("--out", o->out, "measurement file (default: perf/<key>/<model>/measure_<kernel>.json)");
  app.add_option("--mode", o->mode, "measure (verify and time) or verify (correctness only)")
      ->default_val("measure")->check(CLI::IsMember({"measure", "verify"}));
  add_run_options(app, o->run, 120);
  return [o](Context& ctx) {
    if (o->iter.empty() == o->candidate.empty()) throw_usage("give exactly one of --iter and --candidate");
    require_buildable_dsl(o->task.dsl, "measure candidates of");
    TaskRef t = resolve_task(ctx, o->task);
    if (o->pairs) {
      if (o->iter.empty() || !o->out.empty() || o->legacy) {
        throw_usage("--pairs measures a built candidate by its --iter name (no --candidate, --out or --legacy)");
      }
      return run_measure_pairs(ctx, t, o->iter);
    }
    const std::string op = check_measurable_shape(t.shape);
    Workspace& ws = ctx.ws();
    CandidateRef c = resolve_candidate(ws, t, o->iter, o->candidate, o->legacy);
    guard_measure(ws, t, c.kernel);  // an enforced task measures its open, verified plan only
    const DtypePair dtype = parse_dtype_pair_or_throw(t.shape.dtype_token);
    DeviceChoice dev = choose_device(t.dsl, o->run.device, dtype, op);
    Measurement skel = skeleton_for(t.shape, dev, o->run.b_layout);
    skel.kind = c.kind == CandidateKind::legacy_program ? "legacy" : "candidate";
    skel.candidate_path = c.path.string();
    skel.candidate_sha256 = sha256_file(c.path);
    skel.seed = parse_seed(o->run.seed_text);
    const std::filesystem::path out = o->out.empty() ? measurement_path(ws, t, c.kernel) : std::filesystem::absolute(o->out);
    ctx.trace_extra["kernel"] = c.kernel;

    Measurement m;
    bool ran = false;
    // An enforced task refuses a candidate that synchronises or reads its output to the host inside
    // its launch: such a call lets it tell a checked launch from a timed one, or time itself.
    const auto protocol_cfg = read_protocol(ws, t);
    const bool strict = protocol_cfg && protocol_cfg->enforced;
    std::string synchronising;
    if (c.kind == CandidateKind::shared_object) {
      // Purity before anything runs.
      PurityReport purity = scan_candidate(c.path);
      synchronising = purity.synchronising_summary();
      if (!purity.clean()) {
        m = skel;
        m.verdict = purity.is_elf ? Verdict::LIBRARY_CALL_FORBIDDEN : Verdict::RUNTIME_FAIL;
        m.reason = purity.is_elf ? reason::library_call_forbidden : reason::load_failed;
        m.detail = purity.is_elf ? purity.summary() : "not a shared object: " + purity.error;
      } else if (!synchronising.empty() && strict) {
        m = skel;
        m.verdict = Verdict::LIBRARY_CALL_FORBIDDEN;
        m.reason = reason::synchronising_call;
        m.detail = "the candidate " + synchronising +
                   ": a call that waits for the device or copies device memory to the host; inside croq_matmul it "
                   "lets a candidate see its output or time itself, so an enforced task refuses it before it runs "
                   "(launches are asynchronous: enqueue the work on the given stream and return)";
        m.flags.push_back(k_synchronising_call_flag);
      }
    }
    if (c.kind == CandidateKind::python && c.iter_number) {
      // An iteration's module: @triton.autotune only in iter000 (the croq-tune skill's rule), refused
      // before anything runs.
      if (std::string refusal = triton_autotune_refusal(read_file_or_throw(c.path), c.kernel); !refusal.empty()) {
        m = skel;
        m.verdict = Verdict::UNSUPPORTED;
        m.reason = "autotune_outside_iter000";
        m.detail = refusal;
      }
    }
    if (m.reason.empty()) {
      ran = true;
      DeviceLease lease = take_lease(ctx, dev, fmt::format("croq measure {} {}", t.id(), c.kernel), o->run.lease_timeout_s);
      const auto timeout = std::chrono::milliseconds(static_cast<long long>(o->run.timeout_s * 1000));
      if (c.kind == CandidateKind::legacy_program) {
        m = measure_uncontended(ctx, dev, o->run, [&] { return run_legacy_program(c.path, skel, timeout, process_runner()); });
      } else {
        MeasureJob job;
        job.options = runner_options(o->run, t.shape, t.dsl != "cpp");
        job.options.mode = o->mode == "verify" ? RunMode::verify : RunMode::measure;
        if (!dev.visible.empty()) job.env["CUDA_VISIBLE_DEVICES"] = dev.visible;
        job.timeout = timeout;
        job.skeleton = skel;
        if (c.kind == CandidateKind::python) {
          std::filesystem::path script = find_project_dir("src/python") / "croq_runner.py";
          std::error_code ec;
          if (!std::filesystem::is_regular_file(script, ec)) {
            throw Error(ExitCode::not_found, fmt::format("the Python runner {} is not there", script.string()),
                        "the triton dsl needs src/python/croq_runner.py (part of the croq tree)");
          }
          job.program = "python3";
          // The measurement rules (dtypes, tolerances, timing defaults, peak table) come from
          // croq's own tables: the Python runner holds no copy of them (measure/rules.hpp).
          job.prefix = {script.string(), "--rules", dump_compact(measurement_rules())};
        } else {
          job.program = runner_program(t.dsl);
        }
        job.options.candidate = c.path.string();
        m = measure_uncontended(ctx, dev, o->run,
                                [&] { return run_measure_repeated(job, process_runner(), repeat_policy(o->run)); });
      }
      m.process["lease_waited_ms"] = lease.waited().count();
    }
    if (ran && !synchronising.empty()) {
      m.flags.push_back(k_synchronising_call_flag);
      m.warnings.push_back("the candidate " + synchronising +
                           " (a call that waits for the device or reads device memory to the host): an enforced task "
                           "refuses it");
    }
    const bool waited_for_stream =
        std::find(m.flags.begin(), m.flags.end(), k_launch_waits_flag) != m.flags.end();
    if (strict && waited_for_stream && m.verdict == Verdict::PASS) {
      // The launch waited for the stream the runner held: it synchronises inside croq_matmul, in a
      // way the static scan did not see (a driver entry point, a host spin on mapped memory).
      m.verdict = Verdict::LIBRARY_CALL_FORBIDDEN;
      m.reason = reason::synchronising_call;
      m.detail = "the launch waited for the stream the runner held: croq_matmul synchronises with the device inside "
                 "the launch; an enforced task refuses it (enqueue the work on the given stream and return)";
    }
    if (m.candidate_path.empty()) m.candidate_path = c.path.string();
    if (m.candidate_sha256.empty()) m.candidate_sha256 = skel.candidate_sha256;
    ensure_dir(out.parent_path());
    atomic_write(out, dump_pretty(m.to_json()) + "\n");
    json files = {{"measurement", ws.display(out)}};
    if (o->out.empty()) {
      const auto text_path = timing_text_path(ws, t, c);
      atomic_write(text_path, timing_text(m, c.kernel, ws.display(out)));
      files["timing"] = ws.display(text_path);
    }
    // Evidence for the protocol: this measurement of this kernel, by its file's hash.
    json summary = {{"verdict", verdict_name(m.verdict)}, {"reason", m.reason},
                    {"tflops", m.tflops ? json(*m.tflops) : json(nullptr)},
                    {"median_ms", m.timing ? json(m.timing->median_ms) : json(nullptr)},
                    {"cv", m.timing ? json(m.timing->cv) : json(nullptr)},
                    {"candidate_sha256", m.candidate_sha256}};
    if (m.contended()) summary["contended"] = true;
    record_evidence(ws, t, EvidenceKind::measure, c.kernel, out, summary);
    json doc = m.to_json();
    doc["files"] = files;
    doc["ran"] = ran;
    doc["contended"] = m.contended();
    ctx.emit(doc);
    ctx.note(summary_line(m, "croq measure " + c.kernel));
    if (!m.passed()) return ExitCode::candidate_failed;
    if (m.contended()) {
      ctx.note("croq measure: CONTENDED -- " + m.contention_reason() +
               "; not a decision's evidence: measure again when the GPU is idle");
      return ExitCode::busy;
    }
    return ExitCode::ok;
  };
}

VerbRunner setup_baseline(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    RunOptions run;
    std::string task_uid;
    bool force = false;
    int iters = 0;
    std::string dtype;
    int64_t m = 0, n = 0, k = 0;
    std::string library = "auto";
    std::string cusparselt;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--task-uid", o->task_uid,
                 "the task's uid, written to task_config.json first (default: the uid the task already has, else a new one)");
  app.add_option("--library", o->library,
                 "auto: the fastest library for the problem (GPU: cuBLAS and cuBLASLt; for gemm_sp also "
                 "cuSPARSELt, every library measured on the same pruned inputs; cpp: OpenBLAS), or one of "
                 "cublas, cublaslt, cusparselt, openblas")
      ->default_val("auto")->check(CLI::IsMember({"auto", "cublas", "cublaslt", "cusparselt", "openblas"}));
  app.add_option("--cusparselt", o->cusparselt,
                 "libcusparseLt.so.0 or the folder holding it (default: CROQ_CUSPARSELT, the loader's search "
                 "path, then the nvidia-cusparselt Python package)");
  app.add_flag("--force", o->force, "measure again even if a baseline exists");
  app.add_option("--iters", o->iters, "timed repetitions at least (the original skill's --iters; same as --min-reps)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--dtype", o->dtype, "the original skill's argument: checked against the shape key");
  app.add_option("--m", o->m, "checked against the shape key");
  app.add_option("--n", o->n, "checked against the shape key");
  app.add_option("--k", o->k, "checked against the shape key");
  add_run_options(app, o->run, 300);
  return [o](Context& ctx) {
    require_buildable_dsl(o->task.dsl, "measure a baseline for");
    TaskRef t = resolve_task(ctx, o->task);
    const std::string op = check_measurable_shape(t.shape);
    const DtypePair dtype = parse_dtype_pair_or_throw(t.shape.dtype_token);
    if (!o->dtype.empty() && parse_dtype_pair_or_throw(o->dtype).canonical != std::string(dtype.canonical)) {
      throw_usage(fmt::format("--dtype {} differs from the shape key's {}", o->dtype, t.shape.dtype_token),
                  "the shape key is used exactly as given; drop --dtype");
    }
    if ((o->m && o->m != t.shape.m()) || (o->n && o->n != t.shape.n()) || (o->k && o->k != t.shape.k())) {
      throw_usage(fmt::format("--m/--n/--k differ from the shape key {}", t.shape.text), "drop them: the shape key gives M, N, K");
    }
    Workspace& ws = ctx.ws();
    // The task's first artifact: task_config.json with the uid (the seeds' phantom-task guard).
    json config = ensure_task_config(ws, t, o->task_uid);
    const bool cpp = t.dsl == "cpp";
    const bool sparse = is_sparse_operator(op);
    if (cpp && o->library != "auto" && o->library != "openblas") {
      throw_usage(fmt::format("the cpp dsl's library baseline is openblas, not {}", o->library), "drop --library");
    }
    if (!cpp && o->library == "openblas") throw_usage("openblas is the cpp dsl's baseline", "use --library auto");
    if (!sparse && o->library == "cusparselt") {
      throw_usage(fmt::format("cuSPARSELt computes 2:4 sparse GEMM, and {} is dense", t.shape.text),
                  "use --library auto, cublas or cublaslt");
    }
    // The runner's library and the baseline's name (iter000_<tag>): for a sparse problem the
    // libraries are cuSPARSELt and the dense ones on the same pruned A, the faster one is iter000.
    const std::string runner_library = cpp ? "openblas" : o->library;
    const std::string lib_tag = cpp ? "openblas" : o->library != "auto" ? o->library : sparse ? "cusparselt" : "cublas";
    const std::filesystem::path result_path = ws.baseline_result(t);
    const std::filesystem::path measure_file = ws.kind_dir(t, ArtifactKind::baseline) / ("measure_" + lib_tag + ".json");
    Ledger ledger(ws, t);
    const bool stored = ledger.index().baseline.has_value();
    std::error_code ec;
    const bool have_result = std::filesystem::is_regular_file(result_path, ec);

    if (have_result && stored && !o->force) {
      json doc;
      doc["skipped"] = true;
      doc["reason"] = "a baseline exists (pass --force to measure again)";
      doc["task_uid"] = config.value("task_uid", "");
      if (auto text = read_file(result_path); text) {
        if (auto j = try_parse_json(*text)) doc["result"] = *j;
      }
      doc["files"] = {{"result", ws.display(result_path)}};
      ctx.emit(doc);
      ctx.note(fmt::format("croq baseline: {} exists; skipped", ws.display(result_path)));
      return ExitCode::ok;
    }

    MeasurementFile mf;
    bool measured_now = false;
    std::optional<MeasurementFile> earlier;
    if (have_result && !o->force && std::filesystem::is_regular_file(measure_file, ec)) {
      earlier = read_measurement_file(measure_file);
      if (!earlier->measurement.passed() || earlier->measurement.contended()) earlier.reset();  // measure again
    }
    if (earlier) {
      // Measured before, but iter000 was never stored (an interrupted run): store it now.
      mf = *earlier;
    } else {
      DeviceChoice dev = choose_device(t.dsl, o->run.device, dtype, op);
      Measurement skel = skeleton_for(t.shape, dev, o->run.b_layout);
      skel.kind = "baseline";
      skel.candidate_path = "library:" + runner_library;
      MeasureJob job;
      job.program = runner_program(t.dsl);
      job.options = runner_options(o->run, t.shape, t.dsl != "cpp");
      if (o->iters > 0) job.options.min_reps = std::min(o->iters, job.options.max_reps);
      job.options.library = runner_library;
      job.options.cusparselt = o->cusparselt;
      if (!dev.visible.empty()) job.env["CUDA_VISIBLE_DEVICES"] = dev.visible;
      job.timeout = std::chrono::milliseconds(static_cast<long long>(o->run.timeout_s * 1000));
      job.skeleton = skel;
      Measurement m;
      {
        DeviceLease lease = take_lease(ctx, dev, fmt::format("croq baseline {}", t.id()), o->run.lease_timeout_s);
        m = measure_uncontended(ctx, dev, o->run,
                                [&] { return run_measure_repeated(job, process_runner(), repeat_policy(o->run)); });
        m.process["lease_waited_ms"] = lease.waited().count();
      }
      ensure_dir(measure_file.parent_path());
      const std::string text = dump_pretty(m.to_json()) + "\n";
      atomic_write(measure_file, text);
      measured_now = true;
      // Evidence: croq wrote this document for this task (what store-round trusts).
      record_evidence(ws, t, EvidenceKind::measure, "iter000_" + lib_tag, measure_file,
                      {{"verdict", verdict_name(m.verdict)}, {"reason", m.reason},
                       {"tflops", m.tflops ? json(*m.tflops) : json(nullptr)}, {"kind", "baseline"}});
      if (!m.passed() || m.contended()) {
        // A failure, or a figure taken on a shared GPU: shown, neither stored nor written as the result.
        json doc = m.to_json();
        doc["files"] = {{"measurement", ws.display(measure_file)}};
        doc["contended"] = m.contended();
        ctx.emit(doc);
        ctx.note(summary_line(m, "croq baseline"));
        if (!m.passed()) return ExitCode::candidate_failed;
        ctx.note("croq baseline: CONTENDED -- " + m.contention_reason() +
                 "; not stored: measure the baseline again when the GPU is idle");
        return ExitCode::busy;
      }
      mf = {measure_file, sha256_hex(text), m};
    }
    const Measurement& m = mf.measurement;
    if (!m.passed() || !m.timing) {
      throw Error(ExitCode::candidate_failed,
                  fmt::format("{} is not a passed baseline measurement ({})", ws.display(mf.path), verdict_name(m.verdict)),
                  "measure again with `croq baseline --force`");
    }
    const Timing& tm = *m.timing;
    json lib = m.library.is_object() ? m.library : json::object();
    const std::string library = lib.value("name", lib_tag);

    // The record of iter000. A document found on disk (an interrupted run) counts only if croq
    // wrote it for this task: an enforced task refuses anything else before a file is written.
    StoreRequest req;
    req.iter = "iter000";
    req.kernel = "iter000_" + lib_tag;
    req.decision = "BASELINE";
    req.tflops = m.tflops;
    req.round = 0;
    req.bottleneck = k_no_bottleneck;
    req.idea = fmt::format("library baseline: {} ({}), {:.2f} TFLOPS, median {:.4f} ms", library,
                           lib.value("chosen", "default"), m.tflops.value_or(0), tm.median_ms);
    req.source = "measured";
    req.extra["measurement"] = measurement_provenance(mf, ws.display(mf.path));
    req.extra["task_uid"] = config.value("task_uid", "");
    const MeasurementProvenance provenance = vet_measurement(ws, t, req, mf, req.kernel);
    if (!provenance.trusted) ctx.note(fmt::format("croq baseline: source unverified: {}", provenance.problem));

    // The seeds' cublas_result.json fields, then croq's.
    json result;
    result["dtype"] = t.shape.dtype_token;
    result["m"] = t.shape.m();
    result["n"] = t.shape.n();
    result["k"] = t.shape.k();
    result["tflops"] = m.tflops.value_or(0);
    result["time_ms"] = tm.median_ms;
    result["library"] = library;
    result["schema"] = "croq-baseline-v1";
    result["dtype_canonical"] = m.problem.dtype;
    result["operator"] = m.problem.op;
    // Each library's fastest variant on these inputs (cuSPARSELt and the dense libraries for a
    // sparse problem), as the measurement records them.
    json libraries = json::object();
    if (lib.contains("libraries") && lib["libraries"].is_object()) {
      for (auto it = lib["libraries"].begin(); it != lib["libraries"].end(); ++it) {
        libraries[it.key()] = {{"tflops", it->value("tflops", 0.0)}, {"median_ms", it->value("median_ms", 0.0)},
                               {"algo", it->value("algo", json(nullptr))}};
      }
    }
    result["libraries"] = libraries;
    if (libraries.size() > 1) {
      std::vector<std::string> each;
      for (auto it = libraries.begin(); it != libraries.end(); ++it) {
        each.push_back(fmt::format("{} {:.2f}", it.key(), it->value("tflops", 0.0)));
      }
      req.idea += fmt::format(" (fastest of: {} TFLOPS)", fmt::join(each, ", "));
    }
    if (lib.contains("library_status")) result["library_status"] = lib["library_status"];
    result["c_type"] = m.problem.c_type;
    result["b_layout"] = m.problem.b_layout;
    result["algo"] = lib.contains("algo") ? lib["algo"] : json(nullptr);
    result["chosen"] = lib.value("chosen", "default");
    result["default"] = lib.contains("default") ? lib["default"] : json(nullptr);
    result["best_screened"] = lib.contains("best_screened") ? lib["best_screened"] : json(nullptr);
    result["note"] = lib.value("note", "");
    result["statistics"] = {{"median_ms", tm.median_ms}, {"mean_ms", tm.mean_ms}, {"min_ms", tm.min_ms},
                            {"p90_ms", tm.p90_ms},       {"max_ms", tm.max_ms},   {"cv", tm.cv},
                            {"reps", tm.reps},           {"warmup", tm.warmup},   {"stop_reason", tm.stop_reason},
                            {"l2_flush", tm.l2_flush},   {"method", tm.method}};
    result["device"] = {{"name", m.device.name}, {"uuid", m.device.uuid}, {"key", m.device.key},
                        {"sm_clock_mhz", m.device.sm_clock_mhz ? json(*m.device.sm_clock_mhz) : json(nullptr)},
                        {"driver", m.device.driver}, {"peak_tflops", m.device.peak_tflops}};
    result["seed"] = m.seed ? json(*m.seed) : json(nullptr);
    result["task_uid"] = config.value("task_uid", "");
    result["measurement"] = ws.display(mf.path);
    result["measurement_sha256"] = mf.sha256;
    result["source"] = req.source;
    result["created_at"] = m.created_at;
    atomic_write(result_path, dump_pretty(result) + "\n");

    json doc;
    doc["skipped"] = false;
    doc["measured_now"] = measured_now;
    doc["result"] = result;
    if (!stored) {
      StoreRoundResult r = store_round(ledger, req, lock_timeout(o->task));
      doc["record"] = r.outcome.record.to_json();
      ctx.note(r.line);
    } else {
      doc["record"] = nullptr;
      ctx.note("croq baseline: iter000 was already stored; the result file was refreshed, the ledger left as it was");
    }
    const std::filesystem::path timing = ws.kind_dir(t, ArtifactKind::perf) / "timing_iter000.txt";
    atomic_write(timing, timing_text(m, "iter000_" + lib_tag, ws.display(mf.path)));
    doc["files"] = {{"result", ws.display(result_path)}, {"measurement", ws.display(mf.path)}, {"timing", ws.display(timing)}};
    // A baseline every ratio is taken against: flag one that is noisy (its spread above the
    // measurement's CV target) or implausible (far below the device's peak).
    json warnings = json::array();
    if (tm.cv > o->run.cv_target) {
      warnings.push_back({{"flag", "noisy"},
                          {"message", fmt::format("the baseline's spread (CV {:.2f}%) is above the target {:.2f}%: ratios "
                                                  "against it move by as much; measure it again on a quieter machine "
                                                  "(croq baseline --force)",
                                                  tm.cv * 100, o->run.cv_target * 100)}});
    }
    if (m.device.peak_tflops > 0 && m.tflops && *m.tflops < 0.01 * m.device.peak_tflops) {
      warnings.push_back({{"flag", "implausible"},
                          {"message", fmt::format("the baseline reaches {} of the device's {} peak ({:.2f}%): a library "
                                                  "should do far better on this device; check the device is idle and "
                                                  "the shape is what you meant",
                                                  format_rate(*m.tflops), format_rate(m.device.peak_tflops),
                                                  *m.tflops / m.device.peak_tflops * 100)}});
    }
    doc["warnings"] = warnings;
    ctx.emit(doc);
    ctx.note(summary_line(m, "croq baseline " + library));
    for (const auto& w : warnings) ctx.note("croq baseline: WARNING " + w["flag"].get<std::string>() + ": " + w["message"].get<std::string>());
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
