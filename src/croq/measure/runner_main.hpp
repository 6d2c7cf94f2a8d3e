// The common main() of the measurement runners. A runner is a separate executable (croq never
// loads a candidate into its own process): it parses the flags (runner_options.hpp), refuses an
// impure candidate, loads it, opens a backend through its Platform (CUDA or CPU), runs the
// procedure (procedure.hpp) and writes the measurement: to --out atomically, and to stdout.
// Progress goes to stderr as "phase: <step>" lines, so that croq can say where a candidate that
// crashed the runner was at.
#pragma once
#include <memory>
#include <string>

#include "croq/measure/backend.hpp"
#include "croq/measure/candidate_loader.hpp"
#include "croq/measure/problem.hpp"
#include "croq/measure/runner_options.hpp"

namespace croq {

class RunnerPlatform {
 public:
  virtual ~RunnerPlatform() = default;
  virtual std::string program() const = 0;      // "croq-gpu-runner"
  virtual std::string libraries() const = 0;    // "cublas|cublaslt|auto"
  // Opens the device for one problem and target (candidate, or library when it is null).
  // Returns nullptr with `error`; `no_device` says the failure is the absence of a device.
  virtual std::unique_ptr<MeasureBackend> open(const RunnerOptions& options, const ProblemSetup& problem,
                                               CandidateLibrary* candidate, std::string& error,
                                               bool& no_device) = 0;
  // The device facts to record when the procedure could not run (load failure, refusal).
  virtual DeviceFacts describe_device(const RunnerOptions& options, const ProblemSetup& problem) = 0;
  // Called once, right before the candidate's code is loaded (its constructors run then): what the
  // platform forbids the candidate from there on. Returns "" or why it could not be set up.
  virtual std::string confine_before_loading() { return {}; }
};

int runner_main(int argc, char** argv, RunnerPlatform& platform);

}  // namespace croq
