// The measurement procedure: the one place that says what croq does to verify and time a
// candidate, in which order, and what each outcome means. It drives a MeasureBackend (the CUDA
// runner, the CPU runner, or a recording fake in the unit tests). docs/measurement.md explains
// each step.
//
// Candidate, mode measure:
//   1. inputs of set 0 from `seed`, f32 reference
//   2. check: C := NaN, launch, synchronise, compare (every element, guards, normwise)
//   3. probe: one untimed launch, then `probe_reps` timed ones; faster than the device's peak
//      allows -> IMPOSSIBLE, before anything else is concluded
//   4. a failed check -> VERIFY_FAIL
//   5. the other input sets (rotation), `warmup` launches, then more until `warmup_ms` has passed
//   6. repetitions, each: [flush L2] [hold stream] start timer, launch, stop timer, [release]
//      synchronise, read - until the stopping rule says so (statistics.hpp); with `rest_ratio`,
//      the GPU idles between repetitions once it has been busy for `rest_window_ms`
//   7. wall-clock check: back-to-back launches timed by the host clock, device synchronised
//   8. re-check on set 0 (output poisoned again) -> VERIFY_FAIL recheck_mismatch
//   9. second seed: set 0 refilled in place, new reference, check -> VERIFY_FAIL
//      second_seed_mismatch (catches results cached by pointer)
//  10. TFLOPS from the median; above peak -> IMPOSSIBLE; event time far below the host clock's
//      -> IMPOSSIBLE timing_escape; flags near_peak (>95 %) and wall_clock_disagrees
// Mode verify stops after the check and the second seed; mode profile fills set 0, runs `warmup`
// launches and exactly one launch inside the profiler range, with no reference at all.
//
// Library (baseline): the same input sets, rotated while timing; every variant the library offers
// is checked and screened with a few repetitions (fast-accumulation variants are reported but
// compete only when nothing else passes); the default and the `screen_finalists` fastest screened variants are then measured
// in full, and the fastest of them is the baseline (each is reported).
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "croq/measure/backend.hpp"
#include "croq/measure/statistics.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {

enum class RunMode { measure, verify, profile };
const char* run_mode_name(RunMode m);

struct ProcedureOptions {
  RunMode mode = RunMode::measure;
  uint64_t seed = 1;
  int warmup = 10;
  // The warm-up goes on, back to back, until it has lasted this long (0: `warmup` launches only).
  double warmup_ms = 0;
  // Duty cycle of the timing: once the GPU has been busy for `rest_window_ms` (warm-up, timed
  // repetitions, the wall-clock check) it idles `rest_ratio` times as long before going on, so
  // that the average power stays under the GPU's power cap and every target is timed at the same
  // clocks whatever ran before it (0: back to back; docs/measurement.md, "Rests").
  double rest_ratio = 0;
  double rest_window_ms = 10;
  StopRule stop;
  bool l2_flush = true;
  bool hold_stream = true;
  int rotation_sets = 2;
  int probe_reps = 3;
  bool library = false;
  int screen_reps = 5;
  int screen_finalists = 2;  // screened variants measured in full besides the default
  std::string profile_range = "croq_candidate";
  // Called at each step ("check", "probe", "timing", ...): the runner prints it on stderr.
  std::function<void(const std::string&)> on_phase;
};

// A failure of the harness itself (not of the candidate): inputs or reference could not be made
// before the candidate ever ran. The runner exits with an internal error instead of a verdict.
class HarnessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs the procedure. Fills verdict, reason, detail, device, problem, seeds, verification,
// timing, tflops, library, flags and warnings; the caller adds provenance (croq version,
// created_at, candidate, kind, argv).
Measurement run_procedure(MeasureBackend& backend, const ProblemDesc& problem, const DtypePair& dtype,
                          const ProcedureOptions& options);

// Name of a croq_status value ("CROQ_UNSUPPORTED").
const char* croq_status_name(int status);

}  // namespace croq
