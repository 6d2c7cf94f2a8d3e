// What a person chooses for one measurement run (croq measure, croq baseline): the runner's
// statistics and the run's limits, their translation into the runner's options, the document's
// skeleton before the run, and its one-line summary.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "croq/measure/invoke.hpp"
#include "croq/measure/measurement.hpp"
#include "croq/measure/runner_options.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct MeasureRunOptions {
  std::string device;     // GPU index or UUID, or a CPU lease slot cpu<i>; empty: the default
  std::string seed_text;  // decimal; empty: a fresh seed, recorded
  double timeout_s = 120;
  double lease_timeout_s = 1800;
  double idle_timeout_s = 60;
  std::string b_layout = "auto";
  int warmup = 10;
  double warmup_ms = 0;
  int min_reps = 20;
  int max_reps = 500;
  double cv_target = 0.01;
  double min_time_ms = 0;
  double time_budget_ms = 2000;
  std::string rest_ratio = "auto";  // 1 on a GPU, 0 on the CPU
  double rest_window_ms = 10;
  int processes = 3;
  double short_ms = 0.025;
  bool no_l2_flush = false;
};

RepeatPolicy repeat_policy(const MeasureRunOptions& o);
// The seed given (throws usage naming --seed if it is not a decimal whole number); nullopt if none.
std::optional<uint64_t> parse_seed(const std::string& text);
// The runner's options for `shape` (`gpu`: the rest ratio's auto is 1, else 0).
RunnerOptions runner_options(const MeasureRunOptions& o, const ShapeKey& shape, bool gpu);
// What croq knows of a measurement before the run: version, problem, device.
Measurement measurement_skeleton(const ShapeKey& shape, const DeviceFacts& device, const std::string& b_layout);
// "<name>: PASS 512.3 TFLOPS (median ..., cv ..., ...)" or "<name>: <VERDICT> (reason) detail".
std::string measurement_summary_line(const Measurement& m, const std::string& name);
// croq-gpu-runner (croq-cpu-runner for dsl cpp) beside croq; throws not_found if it is not built.
std::filesystem::path runner_program(const std::string& dsl);

}  // namespace croq
