// What every step function (run_measure, run_baseline, run_profile, ...) takes and returns, so that
// src/cli only parses options and prints, and tests call the steps without the command line.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "croq/util/error.hpp"
#include "croq/util/json.hpp"
#include "croq/util/process.hpp"

namespace croq {

// A line for a person while a step runs (waiting for the lease, for the GPU to be idle, ...).
using WaitNote = std::function<void(const std::string& line)>;

// What a step reaches outside itself: the child processes (runners, compilers) and a person.
struct StepDeps {
  ProcessRunner& runner;
  WaitNote note;  // a line for a person while the step runs (waiting for the lease, the GPU)
};

// A step's answer: its exit code, the verb's JSON document, and the lines a person reads after it.
struct StepResult {
  ExitCode code = ExitCode::ok;
  json doc;
  std::vector<std::string> notes;
  json trace = json::object();  // fields for the activity trace (the kernel acted on, ...)
};

}  // namespace croq
