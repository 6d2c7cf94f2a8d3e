// `croq report --sweep`: one folder across the whole sweep (tuning/state.json and each shape's
// ledger), for papers and reviews:
//   index.html       the shapes x dtypes table (best / baseline, rounds), the full table, the figures
//   sweep.csv        key operator dtype shape status mode baseline_tflops best_tflops ratio rounds
//                    target_rounds gpu_hours memory_bound compute_bound latency_bound launch_bound
//                    mixed other
//   progress.csv     at hours rounds_stored shapes_done: the sweep's progress over time, one row per
//                    stored round (every shape's ledger, in time order)
//   progress.svg     rounds stored and shapes done against hours since the first record
//   bottlenecks.svg  each shape's bottleneck mix over its rounds (stacked bars)
// GPU hours are the device time of the shape's worker (the drivers' wall time, state.json's
// worker_seconds).
#pragma once
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::web {

struct SweepReportResult {
  fs::path out;
  std::vector<std::string> files;  // relative to out
  json rows = json::array();       // the sweep.csv rows as objects
};

// Throws Error(not_found) when the workspace has no tuning/state.json with shapes.
SweepReportResult write_sweep_report(const Workspace& ws, const fs::path& out);

}  // namespace croq::web
