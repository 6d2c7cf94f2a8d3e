// croq measure and croq baseline as functions: the measuring steps of the loop, which combine the
// components under the protocol (the device chosen and leased, the contention checks around a
// timing, the runner, the measurement file, the protocol's evidence, iter000's record). src/cli
// parses the options into these structs and prints the result; tests call them directly.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "croq/gpu/device_choice.hpp"
#include "croq/util/step.hpp"
#include "croq/measure/measurement.hpp"
#include "croq/measure/run_options.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct MeasureOptions {
  MeasureRunOptions run;   // run.timeout_s defaults to 120 for a candidate
  std::string iter;        // iter<NNN>[_tag]: the built candidate of that iteration
  std::string candidate;   // or a candidate file (.so, or a program with `legacy`)
  bool legacy = false;     // a self-timed program whose output is parsed (source: reported)
  std::string out;         // the measurement file (default: perf/<key>/<model>/measure_<kernel>.json)
  std::string mode = "measure";  // measure | verify
};

// croq measure (without --pairs): verify and time one candidate of `task` and record the
// measurement and its evidence. A failed candidate is data (candidate_failed), a contended timing
// busy; misuse and missing tools throw.
StepResult run_measure(Workspace& ws, const TaskRef& task, const MeasureOptions& o, const StepDeps& deps);

struct BaselineOptions {
  MeasureRunOptions run = [] {
    MeasureRunOptions r;
    r.timeout_s = 300;
    return r;
  }();
  std::string task_uid;          // written to task_config.json first (default: the task's, else new)
  bool force = false;            // measure again even if a baseline exists
  int iters = 0;                 // the original skill's --iters (timed repetitions at least)
  std::string dtype;             // the original skill's arguments, checked against the shape key
  int64_t m = 0, n = 0, k = 0;
  std::string library = "auto";  // auto | cublas | cublaslt | cusparselt | openblas
  std::string cusparselt;        // libcusparseLt.so.0 or its folder
  int lock_timeout_ms = 30000;   // the task lock, to store iter000
};

// croq baseline: the task's library baseline measured (or one measured by an interrupted run),
// written as the result file and stored as iter000. Skipped (ok) when one exists and !force.
StepResult run_baseline(Workspace& ws, const TaskRef& task, const BaselineOptions& o, const StepDeps& deps);

// The CPU runner's verified timing of a cpp candidate (or, with `library`, of the OpenBLAS
// baseline) under the CPU lease: what croq profile classifies for the cpp dsl.
Measurement measure_on_cpu(const TaskRef& task, const std::filesystem::path& candidate, const std::string& library,
                           uint64_t seed, const std::string& purpose, const StepDeps& deps);

}  // namespace croq
