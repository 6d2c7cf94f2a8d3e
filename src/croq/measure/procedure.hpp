// The measurement procedure: the one place that says what croq does to verify and time a
// candidate, in which order, and what each outcome means. It drives a MeasureBackend (the CUDA
// runner, the CPU runner, or a recording fake in the unit tests). docs/measurement.md explains
// each step.
//
// Every launch in modes measure and verify, whether it will be checked or only timed, is made the
// same way (a "shot"): B gets fresh values, C is poisoned (NaN), [the L2 is
// flushed], [the stream is held], start event, launch, stop event, [release], the device is
// synchronised and the events read. Whether a timed launch's output is then compared with the
// reference is drawn after it ran. So a candidate cannot tell a checked launch from a timed one:
// the buffers, C's contents before the launch and everything around it are the same.
//
// Candidate, mode measure:
//   1. inputs of set 0 from `seed`, f32 reference
//   2. check: a shot on set 0, its output compared (every element, guards, normwise)
//   3. probe: `probe_reps` shots; faster than the device's peak allows -> IMPOSSIBLE, before
//      anything else is concluded
//   4. a failed check -> VERIFY_FAIL; a probe launch verified at random that failed ->
//      VERIFY_FAIL timed_mismatch
//   5. the other input sets (rotation), `warmup` launches, then more until `warmup_ms` has passed
//   6. repetitions, each a shot on the next set, until the stopping rule says so (statistics.hpp);
//      each verified with probability `verify_fraction` (the last one when no draw chose any)
//      -> VERIFY_FAIL timed_mismatch; with `rest_ratio`, the GPU idles between repetitions once
//      it has been busy for `rest_window_ms`
//   7. re-check: a shot on set 0, compared -> VERIFY_FAIL recheck_mismatch
//   8. second seed: set 0 refilled in place, a shot, compared with the new reference ->
//      VERIFY_FAIL second_seed_mismatch (catches results cached by pointer)
//   9. TFLOPS from the median; above peak -> IMPOSSIBLE; the host clock of a repetition (release
//      to the end of the synchronisation, median) far above its events -> IMPOSSIBLE
//      timing_escape; flags near_peak (>95 %) and wall_clock_disagrees
// Mode verify stops after the check and the second seed; mode profile fills set 0, runs `warmup`
// launches and exactly one launch inside the profiler range (C poisoned before each), with no
// reference at all.
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
  // Each timed launch's output is compared with the reference with this probability, drawn after
  // the launch ran; when no draw chose one, the last repetition is compared.
  double verify_fraction = 0.25;
  int min_verified = 1;
  // B gets fresh values before every launch (a result cached by the contents of the inputs is
  // then stale); off only in tests of the order.
  bool perturb = true;
  // The draws (uniform in [0, 1)): system entropy unless a test gives a sequence.
  std::function<double()> draw;
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
