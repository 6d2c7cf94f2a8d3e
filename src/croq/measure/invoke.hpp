// croq's side of a measurement: running a runner (or a legacy binary) as a child process with a
// time limit, through the ProcessRunner, and turning however it ended into a measurement.
//
//   runner exit 0 with a measurement   -> that measurement (its verdict)
//   killed at the time limit           -> HANG     (reason timed_out; the last "phase:" line says where)
//   killed by a signal                 -> SEGFAULT (reason crashed)
//   exit 0 without a measurement, or another exit code not listed below
//                                      -> RUNTIME_FAIL (reason no_measurement / crashed): the
//                                         candidate ended the process itself
//   exit 2 / 4 / 7 / 70                -> croq's own error (bad runner arguments, missing file, no
//                                         device, runner bug): thrown, never blamed on a candidate
// The candidate cannot take croq down with it: it only ever runs in the child.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "croq/measure/measurement.hpp"
#include "croq/measure/runner_options.hpp"
#include "croq/util/process.hpp"

namespace croq {

struct MeasureJob {
  std::filesystem::path program;        // croq-gpu-runner, croq-cpu-runner or python3
  std::vector<std::string> prefix;      // arguments before the runner flags (the .py of the Python runner)
  RunnerOptions options;                // options.out is set by run_measure_job
  std::chrono::milliseconds timeout{120000};
  Measurement skeleton;                 // what croq knows before the run (problem, device, candidate)
  std::map<std::string, std::string> env;
  // The Python runner's start outside the device's lease: with a gate, the runner gets
  // `--go-file F`; it imports torch and triton (seconds, no device work), creates F.ready and waits
  // for F. croq then calls `gate` (taking the lease, waiting for an idle device) and creates F, so
  // the device is held only from there on. `gate_timeout` is added to the process's time limit
  // (the gate may wait for the lease). A runner that passes without having waited at the gate is
  // croq's own error.
  std::function<void()> gate;
  std::chrono::milliseconds gate_timeout{0};
};

// The last "phase: <step>" line of a runner's stderr ("" if none).
std::string last_phase(const std::string& stderr_text);
// {exit_code, signal, timed_out, wall_ms, stderr_tail}
json process_summary(const ProcessResult& r);

// Pure: a finished runner process (and the text of its --out file, if any) as a measurement.
// Throws Error for croq's own failures (see the table above).
Measurement interpret_runner(const ProcessResult& r, const std::optional<std::string>& out_text,
                             const Measurement& skeleton);

Measurement run_measure_job(const MeasureJob& job, ProcessRunner& runner);

// A kernel whose call takes a few microseconds measures a few per cent apart from one runner
// process to the next (on the H200 one process in several timed every 768^3 library variant 3 %
// slower, whatever the power state or the input sets; docs/measurement.md, "Short kernels").
// So when the first process's median is under `short_ms`, `processes - 1` more processes measure
// the same target (each with its own fresh seed unless the job fixes one), and the result is
// the process with the median TFLOPS: a real measurement, with every process in `runs`.
struct RepeatPolicy {
  int processes = 3;
  double short_ms = 0.025;
};

// Pure: the measurement of several processes. A process that did not pass decides (the first
// one); otherwise the one with the median TFLOPS (the lower middle for an even count). Fills
// `runs` when there is more than one.
Measurement combine_runs(std::vector<Measurement> runs);

Measurement run_measure_repeated(const MeasureJob& job, ProcessRunner& runner, const RepeatPolicy& policy);

// Runs a legacy self-timed program (`python3 FILE` for a .py) and parses its output (legacy.hpp).
Measurement run_legacy_program(const std::filesystem::path& program, const Measurement& skeleton,
                               std::chrono::milliseconds timeout, ProcessRunner& runner);

}  // namespace croq
