// The command line of the measurement runners (croq-gpu-runner, croq-cpu-runner; the Python
// runner accepts the same flags), parsed into one options struct and built back from it, so that
// croq's side and the runners' side can never disagree about a flag:
//
//   --candidate PATH.so | --library NAME      what to run (gpu: cublas, cublaslt, cusparselt, auto; cpu: openblas)
//   --op matmul|gemm_sp --m M --n N --k K --dtype TOKEN --b-layout row|col|auto
//   --seed S                                  (default: a fresh random seed, recorded)
//   --mode measure|verify|profile
//   --warmup N --warmup-ms MS --min-reps N --max-reps N --cv-target F --min-time-ms MS --time-budget-ms MS
//   --rest-ratio R --rest-window-ms MS
//   --no-l2-flush --no-hold --rotation-sets N
//   --device N|GPU-<uuid>  --cusparselt PATH  --out FILE  --help
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "croq/measure/procedure.hpp"

namespace croq {

struct RunnerOptions {
  std::string candidate;
  std::string library;
  std::string op = "matmul";
  int64_t m = 0, n = 0, k = 0;
  std::string dtype;
  std::string b_layout = "auto";
  std::optional<uint64_t> seed;
  RunMode mode = RunMode::measure;
  int warmup = 10;
  double warmup_ms = 0;
  int min_reps = 20;
  int max_reps = 500;
  double cv_target = 0.01;
  double time_budget_ms = 2000;
  double min_time_ms = 0;
  double rest_ratio = 1;  // docs/measurement.md, "Rests"
  double rest_window_ms = 10;
  bool l2_flush = true;
  bool hold = true;
  int rotation_sets = 2;
  std::string device;
  std::string cusparselt;  // libcusparseLt.so.0 or its folder (GPU runner, sparse baselines)
  std::string out;
  bool help = false;
};

// Throws Error(usage) naming the bad flag. Never exits.
RunnerOptions parse_runner_options(const std::vector<std::string>& args);
// The flags that reproduce `o` (without argv[0]).
std::vector<std::string> runner_arguments(const RunnerOptions& o);
std::string runner_usage(const std::string& program, const std::string& libraries);

}  // namespace croq
