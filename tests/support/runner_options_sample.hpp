// Runner options with every flag set away from its default: the tests of the runners' command
// line (croq-gpu-runner's parser, the Python runner's) start from the same set.
#pragma once
#include "croq/measure/runner_options.hpp"

namespace croq::test {

inline RunnerOptions every_runner_option_set() {
  RunnerOptions o;
  o.candidate = "/x/k.so";
  o.m = 768;
  o.n = 512;
  o.k = 256;
  o.dtype = "bf16f32";
  o.b_layout = "col";
  o.seed = 77;
  o.mode = RunMode::verify;
  o.warmup = 3;
  o.warmup_ms = 350;
  o.min_time_ms = 75;
  o.rest_ratio = 1.5;
  o.rest_window_ms = 25;
  o.min_reps = 7;
  o.max_reps = 9;
  o.cv_target = 0.02;
  o.time_budget_ms = 150;
  o.l2_flush = false;
  o.hold = false;
  o.rotation_sets = 3;
  o.device = "GPU-abc";
  o.cusparselt = "/opt/cusparselt/lib";
  o.out = "/tmp/m.json";
  return o;
}

}  // namespace croq::test
