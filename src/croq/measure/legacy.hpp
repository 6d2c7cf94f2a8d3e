// Legacy self-timed binaries: programs that carry their own harness (Choreo-generated programs,
// the seeds' Triton scripts) are run as they are and their printed figures parsed. Their numbers
// are stored with source "reported" and kind "legacy"; croq's own verification and timing did not
// happen, and the record says so.
//
// Recognised lines (the last occurrence wins):
//   TFLOPS: <v>   time_ms: <v>        the seeds' contract (Triton scripts)
//   Timing avg ms: <v>                 Choreo's choreo::timing
//   VERIFY: PASS | VERIFY: FAIL ...    the seeds' contract
//   Test Passed                        Choreo; "Test Passed (verify skipped)" is NOT a pass
//   Test Failed, "values are not equal" Choreo's failed check
// Verdict: killed at the limit -> HANG; a failed check -> VERIFY_FAIL; a signal -> SEGFAULT;
// another non-zero exit -> RUNTIME_FAIL; no check at all (or a skipped one) -> VERIFY_FAIL
// legacy_verify_skipped (a number without a check is never stored as a pass); no time and no
// TFLOPS -> RUNTIME_FAIL legacy_no_timing; above the device's peak -> IMPOSSIBLE; else PASS.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "croq/measure/measurement.hpp"
#include "croq/util/process.hpp"

namespace croq {

struct LegacyOutput {
  std::optional<double> tflops;
  std::optional<double> time_ms;
  std::optional<bool> verify_passed;
  bool verify_skipped = false;
  std::string verify_line;
};

LegacyOutput parse_legacy_output(std::string_view text);

// Fills verdict, reason, detail, verification, timing, tflops, source and kind of `m` (whose
// problem and device are already set) from a finished legacy run.
void apply_legacy_result(Measurement& m, const LegacyOutput& out, const ProcessResult& run);

}  // namespace croq
