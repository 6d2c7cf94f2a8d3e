// Legacy output parsing (legacy.hpp).
#include "croq/measure/legacy.hpp"

#include <regex>

#include <fmt/format.h>

#include "croq/util/number.hpp"
#include "croq/util/text.hpp"

namespace croq {

namespace {

std::optional<double> last_number(const std::string& text, const std::regex& re) {
  std::optional<double> v;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    if (auto x = parse_decimal_number((*it)[1].str())) v = *x;
  }
  return v;
}

}  // namespace

LegacyOutput parse_legacy_output(std::string_view view) {
  const std::string text(view);
  static const std::regex k_tflops(R"(TFLOPS:\s*([-+0-9.eE]+))");
  static const std::regex k_time(R"(time_ms:\s*([-+0-9.eE]+))");
  static const std::regex k_avg(R"(Timing avg ms:\s*([-+0-9.eE]+))");
  LegacyOutput o;
  o.tflops = last_number(text, k_tflops);
  o.time_ms = last_number(text, k_time);
  if (auto avg = last_number(text, k_avg)) o.time_ms = avg;
  for (const std::string& raw : split_lines(text)) {
    const std::string line = trim(raw);
    if (line.rfind("VERIFY:", 0) == 0) {
      o.verify_line = line;
      o.verify_passed = line.find("PASS") != std::string::npos && line.find("FAIL") == std::string::npos;
    } else if (line.find("Test Passed") != std::string::npos) {
      o.verify_line = line;
      if (line.find("skipped") != std::string::npos) {
        o.verify_skipped = true;
        o.verify_passed.reset();
      } else {
        o.verify_passed = true;
      }
    } else if (line.find("Test Failed") != std::string::npos || line.find("values are not equal") != std::string::npos) {
      o.verify_line = line;
      o.verify_passed = false;
    }
  }
  // A failure printed anywhere wins over a later pass line.
  if (text.find("VERIFY: FAIL") != std::string::npos || text.find("values are not equal") != std::string::npos ||
      text.find("Test Failed") != std::string::npos) {
    o.verify_passed = false;
  }
  return o;
}

void apply_legacy_result(Measurement& m, const LegacyOutput& out, const ProcessResult& run) {
  m.kind = "legacy";
  m.source = "reported";
  m.verification.passed = out.verify_passed;
  m.verification.reported = out.verify_skipped ? out.verify_line + " (verification skipped)" : out.verify_line;
  auto set = [&](Verdict v, const char* reason, std::string detail) {
    m.verdict = v;
    m.reason = reason;
    m.detail = std::move(detail);
  };
  std::optional<double> time_ms = out.time_ms;
  std::optional<double> tflops = out.tflops;
  if (!tflops && time_ms && *time_ms > 0) tflops = tflops_of(m.problem.flops(), *time_ms);
  if (!time_ms && tflops && *tflops > 0) time_ms = m.problem.flops() / (*tflops * 1e12) * 1e3;
  if (tflops) m.tflops = *tflops;
  if (time_ms) {
    Timing t;
    t.method = "reported";
    t.l2_flush = false;
    t.median_ms = t.mean_ms = t.min_ms = t.p90_ms = t.max_ms = *time_ms;
    t.stop_reason = "reported";
    m.timing = t;
  }
  if (run.timed_out) return set(Verdict::HANG, reason::timed_out, fmt::format("killed after {:.0f} ms", run.wall_ms));
  if (out.verify_passed == false) {
    return set(Verdict::VERIFY_FAIL, reason::legacy_verify_fail,
               "the program's own check failed: " + (out.verify_line.empty() ? std::string("(no line)") : out.verify_line));
  }
  if (run.term_signal != 0) return set(Verdict::SEGFAULT, reason::crashed, run.describe());
  if (run.exit_code != 0) return set(Verdict::RUNTIME_FAIL, reason::legacy_exit, run.describe());
  if (!tflops) return set(Verdict::RUNTIME_FAIL, reason::legacy_no_timing, "no TFLOPS, time_ms or Timing avg ms line in the output");
  if (!out.verify_passed) {
    return set(Verdict::VERIFY_FAIL, reason::legacy_verify_skipped,
               out.verify_skipped ? "the program skipped its own check" : "the program printed no check result (VERIFY: or Test Passed)");
  }
  if (m.device.peak_tflops > 0 && *tflops > m.device.peak_tflops) {
    return set(Verdict::IMPOSSIBLE, reason::above_peak,
               fmt::format("reported {:.1f} TFLOPS is above the device's peak of {:.1f} TFLOPS for {}", *tflops,
                           m.device.peak_tflops, m.problem.dtype));
  }
  if (m.device.peak_tflops > 0 && *tflops > 0.95 * m.device.peak_tflops) m.flags.push_back("near_peak");
  set(Verdict::PASS, reason::ok, "figures reported by the program itself (source: reported)");
}

}  // namespace croq
