// The verdict of one measurement: what croq concluded about a candidate (or a library baseline).
// A candidate's failure is data, never an exception: every way a candidate can fail has a verdict
// and a reason code, and the loop goes on.
//
//   PASS                    verified on two seeds, re-checked after timing, timed
//   VERIFY_FAIL             wrong values, unwritten output (NaN left), writes outside C, a normwise
//                           error above the limit, or a stale result on the second seed
//   RUNTIME_FAIL            a CUDA error, a launch status other than CROQ_OK, a load failure
//   SEGFAULT                the runner died on a signal (the candidate crashed it)
//   HANG                    the runner was killed at the time limit
//   IMPOSSIBLE              a time faster than the device's peak allows, or event time that the
//                           host clock contradicts (work hidden from the timer)
//   LIBRARY_CALL_FORBIDDEN  the candidate links or names cuBLAS/cuBLASLt/cuDNN/CUTLASS device GEMMs
//   UNSUPPORTED             the candidate returned CROQ_UNSUPPORTED for this problem
#pragma once
#include <optional>
#include <string>

#include "croq/ledger/records.hpp"

namespace croq {

enum class Verdict { PASS, VERIFY_FAIL, RUNTIME_FAIL, SEGFAULT, HANG, IMPOSSIBLE, LIBRARY_CALL_FORBIDDEN, UNSUPPORTED };

const char* verdict_name(Verdict v);
std::optional<Verdict> parse_verdict(const std::string& text);

// The ledger decision a failed measurement is stored as (one of the seeds' four run failures):
//   VERIFY_FAIL, IMPOSSIBLE, UNSUPPORTED, LIBRARY_CALL_FORBIDDEN -> VERIFY_FAIL (the result cannot
//   be accepted as a correct computation of this problem); RUNTIME_FAIL -> RUNTIME_FAIL;
//   SEGFAULT -> SEGFAULT; HANG -> HANG. The verdict and reason stay in the record's measurement
//   provenance. nullopt for PASS (KEEP/DISCARD is the driver's decision, BASELINE for a library
//   baseline).
std::optional<Decision> failure_decision(Verdict v);

// Reason codes (the `reason` field); `detail` carries the human sentence.
namespace reason {
inline constexpr const char* ok = "ok";
inline constexpr const char* library_call_forbidden = "library_call_forbidden";
// The candidate synchronises with the device or copies device memory to the host inside its launch
// (a call of cudaDeviceSynchronize, cudaMemcpy, ... found by the purity scan, or a launch that waited
// for the stream the runner held): refused in an enforced task, verdict LIBRARY_CALL_FORBIDDEN.
inline constexpr const char* synchronising_call = "synchronising_call";
inline constexpr const char* mismatch = "mismatch";
inline constexpr const char* unwritten_output = "unwritten_output";
inline constexpr const char* out_of_bounds_write = "out_of_bounds_write";
inline constexpr const char* normwise_error = "normwise_error";
inline constexpr const char* recheck_mismatch = "recheck_mismatch";
inline constexpr const char* second_seed_mismatch = "second_seed_mismatch";
// A timed launch's output, verified after it ran (chosen at random), was wrong.
inline constexpr const char* timed_mismatch = "timed_mismatch";
// The target wrote into an input (A, B, the metadata, the scales): the ABI passes them as const, and
// croq's reference is made from them.
inline constexpr const char* input_modified = "input_modified";
inline constexpr const char* above_peak = "above_peak";
inline constexpr const char* timing_escape = "timing_escape";
inline constexpr const char* cuda_error = "cuda_error";
inline constexpr const char* launch_status = "launch_status";
inline constexpr const char* candidate_unsupported = "candidate_unsupported";
inline constexpr const char* load_failed = "load_failed";
inline constexpr const char* missing_symbol = "missing_symbol";
inline constexpr const char* crashed = "crashed";
inline constexpr const char* timed_out = "timed_out";
inline constexpr const char* no_measurement = "no_measurement";
inline constexpr const char* legacy_verify_fail = "legacy_verify_fail";
inline constexpr const char* legacy_verify_skipped = "legacy_verify_skipped";
inline constexpr const char* legacy_no_timing = "legacy_no_timing";
inline constexpr const char* legacy_exit = "legacy_exit";
}  // namespace reason

}  // namespace croq
