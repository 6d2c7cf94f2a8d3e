// One measurement run's options, skeleton and summary (run_options.hpp).
#include "croq/measure/run_options.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/measure/problem.hpp"
#include "croq/util/build_info.hpp"
#include "croq/util/error.hpp"
#include "croq/util/number.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/time.hpp"
#include "croq/util/units.hpp"
#include "croq/workspace/operators.hpp"

namespace croq {

namespace {

double rest_ratio_of(const std::string& text, bool gpu) {
  if (text == "auto") return gpu ? 1.0 : 0.0;
  return parse_number_arg(text, "--rest-ratio (auto or a number)", 0, 100);
}

}  // namespace

RepeatPolicy repeat_policy(const MeasureRunOptions& o) { return {o.processes, o.short_ms}; }

std::optional<uint64_t> parse_seed(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return parse_unsigned_arg(text, "--seed");
}

RunnerOptions runner_options(const MeasureRunOptions& o, const ShapeKey& shape, bool gpu) {
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

Measurement measurement_skeleton(const ShapeKey& shape, const DeviceFacts& device, const std::string& b_layout) {
  Measurement m;
  m.croq_version = build_info::k_version;
  m.croq_git = build_info::git_sha();
  m.created_at = now_iso8601();
  const std::string op = shape_operator(shape);
  ProblemSetup p = make_problem(op, shape.m(), shape.n(), shape.k(), shape.dtype_token,
                                b_layout == "col" || (b_layout == "auto" && is_blockscaled_operator(op)) ? "col" : "row");
  m.problem = p.desc;
  if (b_layout == "auto") m.problem.b_layout = "auto";
  m.device = device;
  m.verification.elements = shape.m() * shape.n();
  m.verification.tolerance.rule.clear();
  return m;
}

std::string measurement_summary_line(const Measurement& m, const std::string& name) {
  if (m.verdict == Verdict::PASS && m.timing) {
    // The robust spread is what the decisions use (docs/protocol.md); both are shown, since a
    // large gap between them means a few repetitions were far from the rest.
    const std::string robust =
        m.timing->robust_cv ? fmt::format(", robust cv {:.2f} %", *m.timing->robust_cv * 100) : std::string();
    return fmt::format("{}: PASS{} {} (median {}, cv {:.2f} %{}, {} reps, {}){}", name,
                       m.contended() ? " (CONTENDED)" : "",
                       format_rate(m.tflops.value_or(0)), format_ms(m.timing->median_ms), m.timing->cv * 100, robust,
                       m.timing->reps,
                       m.source, m.flags.empty() ? "" : " flags: " + fmt::format("{}", fmt::join(m.flags, ",")))
        + (m.cpu_shared() ? " (" + cpu_shared_warning(*m.device.cpu_wait_share) + ")" : std::string());
  }
  return fmt::format("{}: {} ({}) {}", name, verdict_name(m.verdict), m.reason, m.detail);
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

}  // namespace croq
