// croq tune --jobs N over several shapes: each shape tuned by its own `croq tune <shape>` child
// process, N at a time. Their builds run side by side on the CPU while each device's lease lets one
// measurement or profile at a time use the GPU, so a sweep takes about as long as its GPU work
// instead of the sum of its builds. Also the one-line text of a tune's progress events.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "croq/util/step.hpp"
#include "croq/util/json.hpp"

namespace croq {

struct ParallelTuneOptions {
  std::filesystem::path croq_exe;  // the croq each child runs
  std::filesystem::path root;      // the workspace
  std::vector<std::string> shape_keys;
  std::string gpu;                 // the tasks' device key
  std::string dsl, model = "croq-search", family;
  int rounds = 50;
  uint64_t seed = 0;
  double explore = 0.15;
  int step_timeout_s = 900;
  std::string profile_preset = "full";
  int jobs = 2;
  bool quiet = false;  // the children's progress is not passed on
  bool tty = false;    // a person at a terminal: one text line per event, else the children's JSON lines
};

// Runs the shapes, `jobs` at a time. Each progress line of a child goes to `progress` (whole lines,
// one at a time); the summaries come back in the order of the shape keys:
// {shapes: [summary or {shape_key, exit_code, status, error}], jobs, failed, stopped}. A shape
// whose child fails is reported and the others go on (exit code failure if any failed). SIGINT or
// SIGTERM, while this runs, stops every child (each resumes where it stopped) and starts no other.
StepResult tune_in_parallel(const ParallelTuneOptions& o, const StepDeps& deps,
                            const std::function<void(const std::string& line)>& progress);

// One line of a tune's progress event (round, done, close_call, paired, or its name), for a terminal.
std::string tune_progress_line(const json& event, const std::string& shape, int rounds);

}  // namespace croq
