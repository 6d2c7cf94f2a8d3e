// Running Nsight Compute on one launch of a candidate (the seeds' ncu_profile), through the
// process runner so tests replace ncu by a fake that replays recorded files.
//
// The capture: `ncu --nvtx --nvtx-include croq_candidate/ --clock-control none --set full
// [--kernel-name regex:R] [--launch-skip N] --launch-count 1 --target-processes all
// --export <tmp>.ncu-rep --force-overwrite <program...>`, then `ncu --import <tmp>.ncu-rep --page raw
// --csv`. The measurement runner opens the NVTX range `croq_candidate` around exactly one launch of
// the candidate after its warm-up, so neither the input initialisation, nor a reference, nor a
// warm-up launch, nor another process's kernel can be captured. The captured kernel's name is read
// back from the CSV and checked: a library or harness kernel where the candidate was expected is
// refused. Both files are written under temporary names and renamed into place, so a reader never
// sees a partial report.
//
// Failures map to one message and exit code each (docs/cli.md): ncu missing -> no_device (7);
// counters not permitted (ERR_NVGPUCTRPERM) -> failure (1) with the fix; no kernel matched ->
// not_found (4); ncu or the program exceeded the time limit -> failure (1); the profiled program
// itself failed -> candidate_failed (8); the captured kernel is not the candidate's -> refused (5).
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/process.hpp"

namespace croq::profile {

enum class NcuPreset { full, quick };
const char* ncu_preset_name(NcuPreset p);
NcuPreset parse_ncu_preset(const std::string& text);  // throws usage

struct NcuCapture {
  std::string ncu = "ncu";                      // executable (name on PATH or a path)
  std::vector<std::string> program;             // what ncu runs: the runner (or a legacy binary) and its args
  NcuPreset preset = NcuPreset::full;
  std::string nvtx_range = "croq_candidate";    // empty: no NVTX filter (legacy binaries)
  std::string kernel_regex;                     // --kernel-name regex:<...>; empty: none
  std::optional<int> launch_skip;               // --launch-skip
  int launch_count = 1;
  std::filesystem::path out_dir;                // perf/<key>/<model>
  std::string stem;                             // ncu_<kernel>_round<R>
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  bool expect_library = false;                  // profiling the library baseline: a library kernel is expected
  // The Python runner's gate (util/process_gate.hpp): set, the program gets `--go-file F` and ncu's
  // process starts before `gate` is called (croq takes the device's lease there), so the runner's
  // imports run outside the lease; `gate_timeout` is added to `timeout` for the wait at the gate.
  std::function<void()> gate;
  std::chrono::milliseconds gate_timeout{0};
};

struct NcuCaptureResult {
  std::filesystem::path report;   // <out_dir>/<stem>.ncu-rep
  std::filesystem::path csv;      // <out_dir>/<stem>.csv
  std::string kernel;             // the captured kernel's name (from the CSV)
  std::string kernel_origin;      // candidate | library | harness
  int kernels_captured = 0;
  std::vector<std::string> profile_argv;
  std::vector<std::string> export_argv;
  double profile_ms = 0;
  double export_ms = 0;
  bool replaced = false;          // an earlier report of the same name was replaced
  bool gated = false;             // NcuCapture::gate was set and opened
};

// The ncu command line of the capture (without running it), for display and tests.
std::vector<std::string> ncu_profile_argv(const NcuCapture& c, const std::filesystem::path& export_path);

// Runs the capture and the export. Throws croq::Error as described above; on any failure no file
// is left at the final paths (temporary files are removed).
NcuCaptureResult run_ncu_capture(const NcuCapture& c, ProcessRunner& runner);

}  // namespace croq::profile
