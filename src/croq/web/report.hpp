// `croq report`: a static folder for papers and reviews, read straight from the ledgers (no
// server, no database needed), with the same SVG figures as the dashboard:
//   index.html                 one page: summary table, overlay figure, per-task figures
//   summary.csv                task_uid gpu dsl shape_key model mode baseline_tflops best_tflops
//                              best_kernel ratio rounds records keep discard failed
//                              median_seconds_per_round first_timestamp last_timestamp
//   convergence_all.svg        best-so-far / baseline for every task
//   <task>/convergence.svg     TFLOPS per round: every round, best so far, baseline
//   <task>/progression.svg     idea categories and bottlenecks at each round
//   <task>/bottlenecks.svg     bottleneck distribution over windows of the run
//   <task>/rounds.csv          every record: seq round iter kernel tflops decision bottleneck
//                              category expected_gain timestamp source idea
//   <task>/progression.csv     round iter kernel decision category bottleneck tflops best_so_far idea
//   <task>/bottlenecks.csv     window_first window_last memory_bound compute_bound latency_bound
//                              launch_bound mixed other
// where <task> is <shape_key>__<model>__<dsl>__<gpu>. CSV follows RFC 4180 (quoted when needed).
#pragma once
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::web {

struct ReportOptions {
  std::vector<std::string> selectors;  // task_uid, "<gpu>/<dsl>/<shape_key>/<model>", or a shape key
  bool all = false;
  fs::path out;
  int bottleneck_window = 0;           // rounds per bar (0: automatic)
};

struct ReportResult {
  fs::path out;
  std::vector<std::string> files;      // relative to out
  json summary = json::array();        // one object per task (the summary.csv rows)
  // Files that could not be read, each "<path>: <what is wrong>" (also listed in index.html): a
  // damaged file is reported, never silently left out.
  std::vector<std::string> problems;
};

// Throws Error(usage) without a selection, Error(not_found) for a selector that matches nothing.
ReportResult write_report(const Workspace& ws, const ReportOptions& options);

// One CSV cell: quoted when needed; a cell a spreadsheet would run as a formula (it starts with
// = + - @, tab or CR and is not a plain number) is neutralised with a leading '.
std::string csv_field(const std::string& text);
std::string csv_row(const std::vector<std::string>& fields);

}  // namespace croq::web
