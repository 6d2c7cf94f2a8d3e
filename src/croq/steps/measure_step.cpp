// croq measure and croq baseline as functions (measure_step.hpp). The method is in
// docs/measurement.md.
#include "croq/steps/measure_step.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "croq/build/triton_source.hpp"
#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/ledger/store.hpp"
#include "croq/measure/baseline.hpp"
#include "croq/measure/candidates.hpp"
#include "croq/measure/elf_scan.hpp"
#include "croq/measure/invoke.hpp"
#include "croq/measure/rules.hpp"
#include "croq/measure/store_measurement.hpp"
#include "croq/protocol/command.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/protocol/provenance.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/paths.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/operators.hpp"

namespace croq {

namespace {

std::chrono::milliseconds seconds_ms(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

// The checks before anything runs: a shared object's purity (an enforced task also refuses one
// that synchronises), a Triton iteration's autotune. Fills `m` (from `skel`) when the candidate is
// refused; returns the synchronising calls found (a warning when the candidate runs).
std::string refuse_before_running(const CandidateRef& c, const Measurement& skel, bool strict, Measurement& m) {
  std::string synchronising;
  if (c.kind == CandidateKind::shared_object) {
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
    // An iteration's module: @triton.autotune only in iter000 (the croq-tune skill's rule).
    if (std::string refusal = triton_autotune_refusal(read_file_or_throw(c.path), c.kernel); !refusal.empty()) {
      m = skel;
      m.verdict = Verdict::UNSUPPORTED;
      m.reason = "autotune_outside_iter000";
      m.detail = refusal;
    }
  }
  return synchronising;
}

// The runner job of a candidate: the Python runner for a Triton module, else the dsl's runner.
MeasureJob candidate_job(const TaskRef& t, const CandidateRef& c, const MeasureOptions& o, const DeviceChoice& dev,
                         const Measurement& skel) {
  MeasureJob job;
  job.options = runner_options(o.run, t.shape, t.dsl != "cpp");
  job.options.mode = o.mode == "verify" ? RunMode::verify : RunMode::measure;
  if (!dev.visible.empty()) job.env["CUDA_VISIBLE_DEVICES"] = dev.visible;
  job.timeout = seconds_ms(o.run.timeout_s);
  job.skeleton = skel;
  if (c.kind == CandidateKind::python) {
    std::filesystem::path script = find_project_dir("src/python") / "croq_runner.py";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(script, ec)) {
      throw Error(ExitCode::not_found, fmt::format("the Python runner {} is not there", script.string()),
                  "the triton dsl needs src/python/croq_runner.py (part of the croq tree)");
    }
    job.program = "python3";
    // The measurement rules (dtypes, tolerances, timing defaults, peak table) come from croq's own
    // tables: the Python runner holds no copy of them (measure/rules.hpp).
    job.prefix = {script.string(), "--rules", dump_compact(measurement_rules())};
  } else {
    job.program = runner_program(t.dsl);
  }
  job.options.candidate = c.path.string();
  return job;
}

// A measurement file at a path the user gave replaces nothing but an earlier croq measurement
// outside the workspace, and never lands among the records: inside tuning/ it is a new file in the
// measuring task's own perf/ folder. (Before, --out over idea-log.jsonl replaced the ledger, and
// --out from another task replaced the measurement file a stored KEEP names.)
void check_measurement_out(const Workspace& ws, const TaskRef& t, const std::filesystem::path& out) {
  const std::string hint = "leave --out out (the measurement goes to the task's perf/ folder) or name a new file";
  if (std::string why = ws.user_output_refusal(out, &t); !why.empty()) throw_usage("--out " + why, hint);
  std::error_code ec;
  if (!std::filesystem::exists(out, ec)) return;
  const std::filesystem::path in_tuning = std::filesystem::weakly_canonical(std::filesystem::absolute(out), ec)
                                             .lexically_relative(std::filesystem::weakly_canonical(ws.tuning_dir(), ec));
  if (!in_tuning.empty() && *in_tuning.begin() != "..") {
    throw_usage(fmt::format("--out {} exists: inside tuning/ croq writes an --out file only where none is (the "
                            "task's own measurement files are croq's to replace, and stored records name them)",
                            ws.display(out)),
                hint);
  }
  std::optional<json> doc;
  if (std::filesystem::is_regular_file(out, ec)) {
    if (auto text = read_file(out)) doc = try_parse_json(*text);
  }
  if (!doc || !doc->is_object() || doc->value("schema", "") != k_measurement_schema) {
    throw_usage(fmt::format("--out {} exists and is not a croq measurement: croq measure replaces only its own "
                            "measurement files",
                            ws.display(out)),
                hint);
  }
}

// The file a measurement of `kernel` goes to: its own (measure_<kernel>.json), unless a stored
// record names that file (the kernel measured again: the best in a re-run, a careless measurement
// of a stored kernel, a round racing another); then the next free measure_<kernel>.<n>.json. No
// stored record's evidence is written over (before, a re-run of the best replaced the file its
// KEEP names, and the task's best could no longer be exported). Decisions find a kernel's newest
// measurement in the evidence log, whatever its file's name.
std::filesystem::path fresh_measurement_path(const Workspace& ws, const TaskRef& t, const std::string& kernel) {
  const std::filesystem::path own = measurement_path(ws, t, kernel);
  std::error_code ec;
  if (!std::filesystem::exists(own, ec)) return own;
  bool named = false;
  const std::string shown = ws.display(own);
  for (const auto& r : Ledger(ws, t).read_all().records) {
    if (!r.extra.contains("measurement") || !r.extra["measurement"].is_object()) continue;
    const std::string file = get_string(r.extra["measurement"], "file").value_or("");
    if (file == shown || file == own.string()) named = true;
  }
  if (!named) return own;
  for (int n = 2;; ++n) {
    std::filesystem::path next = own.parent_path() / fmt::format("measure_{}.{}.json", kernel, n);
    if (!std::filesystem::exists(next, ec)) return next;
  }
}

// A task's perf/ folder reached through a link inside tuning/ leads elsewhere (another task's
// evidence): croq writes no measurement through it. (tuning/ itself may be a link, to another disk.)
void refuse_linked_folder(const Workspace& ws, const std::filesystem::path& dir) {
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::absolute(ws.tuning_dir()).lexically_normal();
  const std::filesystem::path lexical = std::filesystem::absolute(dir).lexically_normal();
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(dir, ec);
  const std::filesystem::path expected = std::filesystem::weakly_canonical(root, ec) / lexical.lexically_relative(root);
  if (!ec && resolved != expected.lexically_normal()) {
    throw_usage(fmt::format("{} is a link (it leads to {}): croq writes a task's measurements into its own folder only",
                            ws.display(dir), resolved.string()),
                fmt::format("remove the link (a task's folders are croq's to make): rm {}", dir.string()));
  }
}

}  // namespace

StepResult run_measure(Workspace& ws, const TaskRef& t, const MeasureOptions& o, const StepDeps& deps) {
  if (o.iter.empty() == o.candidate.empty()) throw_usage("give exactly one of --iter and --candidate");
  const std::string op = check_measurable_shape(t.shape);
  CandidateRef c = resolve_candidate(ws, t, o.iter, o.candidate, o.legacy);
  guard_measure(ws, t, c.kernel);  // an enforced task measures its open, verified plan only
  const DtypePair dtype = parse_dtype_pair_or_throw(t.shape.dtype_token);
  DeviceChoice dev = choose_device(t.dsl, o.run.device, dtype, op);
  Measurement skel = measurement_skeleton(t.shape, dev.facts, o.run.b_layout);
  skel.kind = c.kind == CandidateKind::legacy_program ? "legacy" : "candidate";
  skel.candidate_path = c.path.string();
  skel.candidate_sha256 = sha256_file(c.path);
  skel.seed = parse_seed(o.run.seed_text);
  refuse_linked_folder(ws, ws.kind_dir(t, ArtifactKind::perf));
  const std::filesystem::path out =
      o.out.empty() ? fresh_measurement_path(ws, t, c.kernel) : std::filesystem::absolute(o.out);
  if (!o.out.empty()) check_measurement_out(ws, t, out);
  StepResult res;
  res.trace["kernel"] = c.kernel;

  // An enforced task refuses a candidate that synchronises or reads its output to the host inside
  // its launch: such a call lets it tell a checked launch from a timed one, or time itself.
  const auto protocol_cfg = read_protocol(ws, t);
  const bool strict = protocol_cfg && protocol_cfg->enforced;
  // An enforced task's inputs come from a fresh seed croq draws: with a seed chosen in advance, a
  // candidate could carry a table of the inputs' products and look them up (found by an attack).
  if (strict && !o.run.seed_text.empty()) {
    refuse({Step::MEASURE, "fresh_inputs",
            "this task is enforced: a measurement draws its inputs from a fresh seed croq chooses, not one given "
            "with --seed (inputs known in advance can be looked up instead of computed)",
            CroqCommand("measure").task(t).opt("--iter", c.kernel).text()});
  }
  Measurement m;
  const std::string synchronising = refuse_before_running(c, skel, strict, m);
  bool ran = false;
  if (m.reason.empty()) {
    ran = true;
    std::optional<DeviceLease> lease;
    auto take_lease = [&] {
      lease.emplace(take_device_lease(dev, fmt::format("croq measure {} {}", t.id(), c.kernel), o.run.lease_timeout_s,
                                      deps.note, "croq measure"));
    };
    // The device is taken at a gate: before the runner starts, except for the Python runner, which
    // imports torch and triton (seconds, no device work) first and waits at the gate for croq to
    // take the lease (MeasureJob::gate).
    m = measure_uncontended_gated(dev, o.run.idle_timeout_s, deps.note, "croq measure", take_lease,
                                  [&](const std::function<void()>& gate) {
                                    if (c.kind == CandidateKind::legacy_program) {
                                      gate();
                                      return run_legacy_program(c.path, skel, seconds_ms(o.run.timeout_s), deps.runner);
                                    }
                                    MeasureJob job = candidate_job(t, c, o, dev, skel);
                                    if (job.prefix.empty() || dev.lease_id == "cpu") {
                                      gate();
                                    } else {
                                      job.gate = gate;
                                      job.gate_timeout = seconds_ms(o.run.lease_timeout_s + o.run.idle_timeout_s);
                                    }
                                    return run_measure_repeated(job, deps.runner, repeat_policy(o.run));
                                  });
    m.process["lease_waited_ms"] = lease ? lease->waited().count() : 0;
  }
  if (ran && !synchronising.empty()) {
    m.flags.push_back(k_synchronising_call_flag);
    m.warnings.push_back("the candidate " + synchronising +
                         " (a call that waits for the device or reads device memory to the host): an enforced task "
                         "refuses it");
  }
  const bool waited_for_stream = std::find(m.flags.begin(), m.flags.end(), k_launch_waits_flag) != m.flags.end();
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
  if (o.out.empty()) {
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
  res.doc = m.to_json();
  res.doc["files"] = files;
  res.doc["ran"] = ran;
  res.doc["contended"] = m.contended();
  res.notes.push_back(measurement_summary_line(m, "croq measure " + c.kernel));
  if (!m.passed()) {
    res.code = ExitCode::candidate_failed;
  } else if (m.contended()) {
    res.notes.push_back("croq measure: CONTENDED -- " + m.contention_reason() +
                        "; not a decision's evidence: measure again when the GPU is idle");
    res.code = ExitCode::busy;
  }
  return res;
}

StepResult run_baseline(Workspace& ws, const TaskRef& t, const BaselineOptions& o, const StepDeps& deps) {
  const std::string op = check_measurable_shape(t.shape);
  const DtypePair dtype = parse_dtype_pair_or_throw(t.shape.dtype_token);
  if (!o.dtype.empty() && parse_dtype_pair_or_throw(o.dtype).canonical != std::string(dtype.canonical)) {
    throw_usage(fmt::format("--dtype {} differs from the shape key's {}", o.dtype, t.shape.dtype_token),
                "the shape key is used exactly as given; drop --dtype");
  }
  if ((o.m && o.m != t.shape.m()) || (o.n && o.n != t.shape.n()) || (o.k && o.k != t.shape.k())) {
    throw_usage(fmt::format("--m/--n/--k differ from the shape key {}", t.shape.text), "drop them: the shape key gives M, N, K");
  }
  // The task's first artifact: task_config.json with the uid (the seeds' phantom-task guard).
  json config = ensure_task_config(ws, t, o.task_uid);
  const BaselineLibrary lib = baseline_library(t.dsl, t.shape, o.library);
  const std::string task_uid = config.value("task_uid", "");
  const std::filesystem::path result_path = ws.baseline_result(t);
  const std::filesystem::path measure_file = ws.kind_dir(t, ArtifactKind::baseline) / ("measure_" + lib.tag + ".json");
  Ledger ledger(ws, t);
  const bool stored = ledger.index().baseline.has_value();
  std::error_code ec;
  const bool have_result = std::filesystem::is_regular_file(result_path, ec);
  StepResult res;

  if (have_result && stored && !o.force) {
    res.doc["skipped"] = true;
    res.doc["reason"] = "a baseline exists (pass --force to measure again)";
    res.doc["task_uid"] = task_uid;
    if (auto text = read_file(result_path); text) {
      if (auto j = try_parse_json(*text)) res.doc["result"] = *j;
    }
    res.doc["files"] = {{"result", ws.display(result_path)}};
    res.notes.push_back(fmt::format("croq baseline: {} exists; skipped", ws.display(result_path)));
    return res;
  }

  MeasurementFile mf;
  bool measured_now = false;
  std::optional<MeasurementFile> earlier;
  if (have_result && !o.force && std::filesystem::is_regular_file(measure_file, ec)) {
    earlier = read_measurement_file(measure_file);
    if (!earlier->measurement.passed() || earlier->measurement.contended()) earlier.reset();  // measure again
  }
  if (earlier) {
    // Measured before, but iter000 was never stored (an interrupted run): store it now.
    mf = *earlier;
  } else {
    DeviceChoice dev = choose_device(t.dsl, o.run.device, dtype, op);
    Measurement skel = measurement_skeleton(t.shape, dev.facts, o.run.b_layout);
    skel.kind = "baseline";
    skel.candidate_path = "library:" + lib.runner_library;
    MeasureJob job;
    job.program = runner_program(t.dsl);
    job.options = runner_options(o.run, t.shape, t.dsl != "cpp");
    if (o.iters > 0) job.options.min_reps = std::min(o.iters, job.options.max_reps);
    job.options.library = lib.runner_library;
    job.options.cusparselt = o.cusparselt;
    if (!dev.visible.empty()) job.env["CUDA_VISIBLE_DEVICES"] = dev.visible;
    job.timeout = seconds_ms(o.run.timeout_s);
    job.skeleton = skel;
    Measurement m;
    {
      DeviceLease lease = take_device_lease(dev, fmt::format("croq baseline {}", t.id()), o.run.lease_timeout_s,
                                            deps.note, "croq baseline");
      m = measure_uncontended(dev, o.run.idle_timeout_s, deps.note, "croq baseline",
                              [&] { return run_measure_repeated(job, deps.runner, repeat_policy(o.run)); });
      m.process["lease_waited_ms"] = lease.waited().count();
    }
    ensure_dir(measure_file.parent_path());
    const std::string text = dump_pretty(m.to_json()) + "\n";
    atomic_write(measure_file, text);
    measured_now = true;
    // Evidence: croq wrote this document for this task (what store-round trusts).
    record_evidence(ws, t, EvidenceKind::measure, "iter000_" + lib.tag, measure_file,
                    {{"verdict", verdict_name(m.verdict)}, {"reason", m.reason},
                     {"tflops", m.tflops ? json(*m.tflops) : json(nullptr)}, {"kind", "baseline"}});
    if (!m.passed() || m.contended()) {
      // A failure, or a figure taken on a shared GPU: shown, neither stored nor written as the result.
      res.doc = m.to_json();
      res.doc["files"] = {{"measurement", ws.display(measure_file)}};
      res.doc["contended"] = m.contended();
      res.notes.push_back(measurement_summary_line(m, "croq baseline"));
      if (!m.passed()) {
        res.code = ExitCode::candidate_failed;
        return res;
      }
      res.notes.push_back("croq baseline: CONTENDED -- " + m.contention_reason() +
                          "; not stored: measure the baseline again when the GPU is idle");
      res.code = ExitCode::busy;
      return res;
    }
    mf = {measure_file, sha256_hex(text), m};
  }
  const Measurement& m = mf.measurement;
  if (!m.passed() || !m.timing) {
    throw Error(ExitCode::candidate_failed,
                fmt::format("{} is not a passed baseline measurement ({})", ws.display(mf.path), verdict_name(m.verdict)),
                "measure again with `croq baseline --force`");
  }
  const std::string shown = ws.display(mf.path);
  // The record of iter000. A document found on disk (an interrupted run) counts only if croq wrote
  // it for this task: an enforced task refuses anything else before a file is written.
  StoreRequest req = baseline_store_request(mf, lib.tag, task_uid, shown);
  const MeasurementProvenance provenance = vet_measurement(ws, t, req, mf, req.kernel);
  if (!provenance.trusted && deps.note) deps.note(fmt::format("croq baseline: source unverified: {}", provenance.problem));
  const json result = baseline_result_document(mf, t.shape, lib.tag, task_uid, shown);
  atomic_write(result_path, dump_pretty(result) + "\n");

  res.doc["skipped"] = false;
  res.doc["measured_now"] = measured_now;
  res.doc["result"] = result;
  std::vector<std::string> notes;
  if (!stored) {
    mark_enforced(ws, t, req.extra);
    StoreRoundResult r = store_round(ledger, req, std::chrono::milliseconds(o.lock_timeout_ms));
    res.doc["record"] = r.outcome.record.to_json();
    if (deps.note) deps.note(r.line);
  } else {
    res.doc["record"] = nullptr;
    if (deps.note) {
      deps.note("croq baseline: iter000 was already stored; the result file was refreshed, the ledger left as it was");
    }
  }
  const std::filesystem::path timing = ws.kind_dir(t, ArtifactKind::perf) / "timing_iter000.txt";
  atomic_write(timing, timing_text(m, "iter000_" + lib.tag, shown));
  res.doc["files"] = {{"result", ws.display(result_path)}, {"measurement", shown}, {"timing", ws.display(timing)}};
  // A baseline every ratio is taken against: flag one that is noisy or implausible.
  const json warnings = baseline_warnings(m, o.run.cv_target);
  res.doc["warnings"] = warnings;
  res.notes.push_back(measurement_summary_line(m, "croq baseline " + result.value("library", lib.tag)));
  for (const auto& w : warnings) {
    res.notes.push_back("croq baseline: WARNING " + w["flag"].get<std::string>() + ": " + w["message"].get<std::string>());
  }
  return res;
}

Measurement measure_on_cpu(const TaskRef& t, const std::filesystem::path& candidate, const std::string& library,
                           uint64_t seed, const std::string& purpose, const StepDeps& deps) {
  const std::string op = check_measurable_shape(t.shape);
  const DtypePair dtype = parse_dtype_pair_or_throw(t.shape.dtype_token);
  DeviceChoice dev = choose_device("cpp", "", dtype, op);
  MeasureRunOptions ro;
  ro.seed_text = std::to_string(seed);
  ro.b_layout = is_blockscaled_operator(op) ? "col" : "row";  // the block-scaled operator's B is [N,K] only
  ro.warmup = 2;
  ro.min_reps = 5;
  ro.max_reps = 60;
  ro.cv_target = 0.02;
  ro.warmup_ms = 0;  // an estimate for the profile, not a recorded measurement
  ro.min_time_ms = 0;
  ro.time_budget_ms = 1500;
  Measurement skel = measurement_skeleton(t.shape, dev.facts, ro.b_layout);
  skel.kind = library.empty() ? "candidate" : "baseline";
  skel.candidate_path = library.empty() ? candidate.string() : "library:" + library;
  if (library.empty()) skel.candidate_sha256 = sha256_file(candidate);
  skel.seed = seed;
  DeviceLease lease = take_device_lease(dev, purpose, 1800, deps.note, "croq profile");
  MeasureJob job;
  job.options = runner_options(ro, t.shape, false);
  job.options.mode = RunMode::measure;
  if (library.empty()) job.options.candidate = candidate.string();
  else job.options.library = library;
  job.timeout = std::chrono::seconds(120);
  job.skeleton = skel;
  job.program = runner_program("cpp");
  Measurement m = run_measure_job(job, deps.runner);
  m.process["lease_waited_ms"] = lease.waited().count();
  return m;
}

}  // namespace croq
