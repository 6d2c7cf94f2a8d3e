// Which file `croq measure` measures, and where its results go, in the artifact tree:
//
//   dsl cuda, cpp      bin/<key>/<model>/<kernel>.so              (croq build's output)
//   dsl croqtile       bin/<key>/<model>/<kernel>.so when bound to the ABI, else the generated
//                      program bin/<key>/<model>/<kernel>, run as a legacy self-timed binary
//   dsl triton         srcs/<key>/<model>/<kernel>.py             (through src/python/croq_runner.py)
//   --legacy           bin/<key>/<model>/<kernel> (an executable), or srcs/.../<kernel>.py for triton
// `--iter iter012` without its tag finds the one iter012_<tag> candidate there.
//
// Results: perf/<key>/<model>/measure_<kernel>.json (the measurement) and
// perf/<key>/<model>/timing_iter<NNN>.txt (the seeds' human timing file, with the seeds'
// "TFLOPS: <v>   time_ms: <v>" and "VERIFY: PASS|FAIL" lines).
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "croq/measure/measurement.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

enum class CandidateKind { shared_object, legacy_program, python };

struct CandidateRef {
  CandidateKind kind = CandidateKind::shared_object;
  std::filesystem::path path;
  std::string kernel;               // "iter012_tag", or the file's stem
  std::optional<int> iter_number;
};

// Throws Error(not_found) naming the paths tried; Error(usage) for a bad --iter.
CandidateRef resolve_candidate(const Workspace& ws, const TaskRef& task, const std::string& iter_flag,
                               const std::string& candidate_flag, bool legacy);

std::filesystem::path measurement_path(const Workspace& ws, const TaskRef& task, const std::string& kernel);
std::filesystem::path timing_text_path(const Workspace& ws, const TaskRef& task, const CandidateRef& c);

// The human timing file (seeds' perf/timing_iter<NNN>.txt).
std::string timing_text(const Measurement& m, const std::string& kernel, const std::string& measurement_file);

}  // namespace croq
