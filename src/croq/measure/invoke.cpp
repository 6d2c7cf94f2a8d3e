// Running runners and legacy programs (invoke.hpp).
#include "croq/measure/invoke.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "croq/measure/legacy.hpp"
#include "croq/measure/verdict.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/process_gate.hpp"
#include "croq/util/text.hpp"

namespace croq {

std::string last_phase(const std::string& err) {
  std::string phase;
  for (const std::string& line : split_lines(err)) {
    if (starts_with(line, "phase: ")) phase = trim(line.substr(7));
  }
  return phase;
}

json process_summary(const ProcessResult& r) {
  std::string tail = r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err;
  if (!is_valid_utf8(tail)) tail = preview(tail, 2000);
  return {{"exit_code", r.started && !r.timed_out && r.term_signal == 0 ? json(r.exit_code) : json(nullptr)},
          {"signal", r.term_signal ? json(r.term_signal) : json(nullptr)},
          {"timed_out", r.timed_out},
          {"wall_ms", std::round(r.wall_ms * 10) / 10},
          {"stderr_tail", tail}};
}

Measurement interpret_runner(const ProcessResult& r, const std::optional<std::string>& out_text,
                             const Measurement& skeleton) {
  const std::string phase = last_phase(r.err);
  const std::string where = phase.empty() ? "" : " during " + phase;
  Measurement m = skeleton;
  m.process = process_summary(r);
  auto verdict = [&](Verdict v, const char* reason, std::string detail) {
    m.verdict = v;
    m.reason = reason;
    m.detail = std::move(detail);
    m.timing.reset();
    m.tflops.reset();
    return m;
  };
  if (!r.started) {
    throw Error(ExitCode::internal, fmt::format("the measurement runner could not be started: {}", r.spawn_error),
                "rebuild croq (the runners sit next to the croq executable in build/bin)");
  }
  if (r.timed_out) {
    return verdict(Verdict::HANG, reason::timed_out, fmt::format("killed at the time limit after {:.1f} s{}", r.wall_ms / 1000, where));
  }
  if (r.term_signal != 0) return verdict(Verdict::SEGFAULT, reason::crashed, r.describe() + where);
  switch (r.exit_code) {
    case 0: break;
    case 2: throw Error(ExitCode::internal, "the measurement runner refused its arguments: " + trim(r.err), "this is a bug in croq");
    case 4: throw Error(ExitCode::not_found, "the measurement runner did not find the candidate: " + trim(r.err));
    case 7:
      throw Error(ExitCode::no_device, "the measurement runner found no device or library it needs: " + trim(r.err),
                  "run on a machine with a GPU (`croq gpu check`), or use the cpp dsl; a 2:4 sparse baseline also "
                  "needs cuSPARSELt (the message above says where croq looked and how to point it at the library)");
    case 70: throw Error(ExitCode::internal, "the measurement runner failed: " + trim(r.err), "this is a bug in croq; please report it");
    default:
      return verdict(Verdict::RUNTIME_FAIL, reason::crashed,
                     fmt::format("the runner exited with status {}{} (the candidate ended the process)", r.exit_code, where));
  }
  std::string text = out_text.value_or(std::string());
  if (trim(text).empty()) text = r.out;
  std::string why;
  auto doc = try_parse_json(text, &why);
  std::optional<Measurement> parsed;
  if (doc) parsed = Measurement::from_json(*doc, &why);
  if (!parsed) {
    return verdict(Verdict::RUNTIME_FAIL, reason::no_measurement,
                   fmt::format("the runner exited 0 without a measurement ({}){}: did the candidate call exit()?", why, where));
  }
  // The child's own facts (the Python runner's process.first_call_ms, autotune, cubins) beside croq's.
  const json reported = parsed->process;
  parsed->process = m.process;
  if (reported.is_object()) {
    for (auto it = reported.begin(); it != reported.end(); ++it) {
      if (!parsed->process.contains(it.key())) parsed->process[it.key()] = it.value();
    }
  }
  return *parsed;
}


Measurement run_measure_job(const MeasureJob& job, ProcessRunner& runner) {
  // A private temporary file for the runner's --out (removed afterwards).
  std::string tmpl = (std::filesystem::temp_directory_path() / "croq-measure-XXXXXX").string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw Error(ExitCode::failure, "cannot create a temporary file for the measurement");
  ::close(fd);
  struct Remove {
    std::string path;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } cleanup{tmpl};

  RunnerOptions o = job.options;
  o.out = tmpl;
  ProcessSpec spec;
  spec.argv.push_back(job.program.string());
  spec.argv.insert(spec.argv.end(), job.prefix.begin(), job.prefix.end());
  for (const auto& a : runner_arguments(o)) spec.argv.push_back(a);
  spec.timeout = job.timeout;
  spec.env_set = job.env;
  spec.max_capture_bytes = 8u << 20;
  // The runner dies with croq: killed croq releases the device lease, and a runner left behind
  // would go on using the device under no lease (found by an attack: kill -9 of croq measure).
  spec.parent_death_signal = SIGKILL;
  bool opened = false;
  ProcessResult r = job.gate ? run_at_gate(spec, tmpl + ".go", job.gate, job.gate_timeout, runner, opened) : runner.run(spec);
  std::optional<std::string> text = read_file(tmpl);
  Measurement m = interpret_runner(r, text, job.skeleton);
  if (m.argv.empty()) m.argv = spec.argv;
  if (!job.gate) return m;
  if (!opened && (m.timing || m.verification.elements > 0)) {  // it ran the candidate
    throw Error(ExitCode::internal, "the runner measured without waiting at croq's gate (--go-file): the device's lease was "
                                    "not held", "this is a bug in croq; please report it");
  }
  m.process["gated"] = opened;
  return m;
}

Measurement combine_runs(std::vector<Measurement> runs) {
  if (runs.empty()) throw Error(ExitCode::internal, "combine_runs: no measurement");
  if (runs.size() == 1) return runs.front();
  json rows = json::array();
  for (const Measurement& m : runs) {
    json row = {{"verdict", verdict_name(m.verdict)},
                {"tflops", m.tflops ? json(*m.tflops) : json(nullptr)},
                {"median_ms", m.timing ? json(m.timing->median_ms) : json(nullptr)},
                {"cv", m.timing ? json(m.timing->cv) : json(nullptr)},
                {"reps", m.timing ? json(m.timing->reps) : json(nullptr)},
                {"seed", m.seed ? json(*m.seed) : json(nullptr)},
                {"sm_clock_mhz", m.device.sm_clock_mhz ? json(*m.device.sm_clock_mhz) : json(nullptr)}};
    if (m.library.is_object() && m.library.contains("algo")) row["chosen"] = m.library["algo"];
    rows.push_back(row);
  }
  size_t pick = 0;
  bool failed = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].passed() || !runs[i].tflops) {
      pick = i;
      failed = true;
      break;
    }
  }
  if (!failed) {
    std::vector<size_t> order(runs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return *runs[a].tflops < *runs[b].tflops; });
    pick = order[(order.size() - 1) / 2];
  }
  Measurement m = runs[pick];
  rows[pick]["chosen_run"] = true;
  m.runs = rows;
  return m;
}

Measurement run_measure_repeated(const MeasureJob& job, ProcessRunner& runner, const RepeatPolicy& policy) {
  std::vector<Measurement> runs;
  runs.push_back(run_measure_job(job, runner));
  const Measurement& first = runs.front();
  const bool is_short = first.passed() && first.timing && first.timing->median_ms > 0 &&
                        first.timing->median_ms < policy.short_ms;
  if (!is_short || job.options.mode != RunMode::measure) return runs.front();
  for (int i = 1; i < policy.processes; ++i) {
    runs.push_back(run_measure_job(job, runner));
    if (!runs.back().passed()) break;  // a failure decides; no more processes
  }
  return combine_runs(std::move(runs));
}

Measurement run_legacy_program(const std::filesystem::path& program, const Measurement& skeleton,
                               std::chrono::milliseconds timeout, ProcessRunner& runner) {
  ProcessSpec spec;
  if (program.extension() == ".py") spec.argv = {"python3", program.string()};
  else spec.argv = {program.string()};
  spec.timeout = timeout;
  // The seeds' defaults; a leftover skip switch in the environment must not disable the check.
  spec.env_set = {{"CHOREO_TIMING_WARMUP", "10"}, {"CHOREO_TIMING_REPEAT", "50"}};
  spec.env_unset = {"CHOREO_SKIP_VERIFY", "CHOREO_DISABLE_TIMING"};
  spec.max_capture_bytes = 8u << 20;
  ProcessResult r = runner.run(spec);
  if (!r.started) throw Error(ExitCode::not_found, "cannot run the legacy program: " + r.spawn_error);
  Measurement m = skeleton;
  m.argv = spec.argv;
  m.process = process_summary(r);
  m.process["stdout_tail"] = r.out.size() > 4000 ? r.out.substr(r.out.size() - 4000) : r.out;
  if (!is_valid_utf8(m.process["stdout_tail"].get<std::string>())) m.process["stdout_tail"] = preview(r.out, 4000);
  apply_legacy_result(m, parse_legacy_output(r.out + "\n" + r.err), r);
  return m;
}

}  // namespace croq
