// croq sass dump | compare as functions. SASS comes from one of three places: a compiled
// candidate (`cuobjdump -sass` and `-res-usage` on the .so or executable; a Triton candidate's
// cubin, compiled once by croq's Python runner with Triton's cache in perf/<key>/<model>/cubin_<kernel>/),
// an Nsight Compute report (`ncu --import R --page source --print-source sass --csv`: the library
// kernel that was actually launched, e.g. the cuBLAS baseline's), or a text file already holding
// either output. With a task, dumps are kept as perf/<key>/<model>/sass_<kernel>.sass (the
// baseline's as sass_baseline.sass), compare finds them there, and a comparison is kept as
// sass_compare_<kernel>.json and recorded as the protocol's evidence.
#pragma once
#include <optional>
#include <string>

#include "croq/util/step.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::profile {

// Where one side's SASS comes from: exactly one of so, report, file.
struct SassSource {
  std::string so;       // a binary to disassemble with cuobjdump
  std::string report;   // an .ncu-rep to read the source page of
  std::string file;     // a text file with SASS
  std::string kernel;   // regex choosing the function
};

struct SassDumpOptions {
  std::string iter;       // the task's built candidate (needs the task)
  bool baseline = false;  // this dump is the baseline's (sass_baseline.sass)
  SassSource src;
  std::string out;        // where the SASS text goes (default with a task: perf/.../sass_<side>.sass)
  std::string cuobjdump;  // default: CROQ_CUOBJDUMP, else cuobjdump
  std::string ncu;        // default: CROQ_NCU, else ncu
};

// `ws` and `task` are given together (the task options) or not at all.
StepResult run_sass_dump(const Workspace* ws, const std::optional<TaskRef>& task, const SassDumpOptions& o,
                         const StepDeps& deps);

struct SassCompareOptions {
  std::string iter;  // with a task: the candidate's dump (or binary) and the task's sass_baseline.sass
  SassSource cand, base;
  std::string cuobjdump, ncu;
};

StepResult run_sass_compare(const Workspace* ws, const std::optional<TaskRef>& task, const SassCompareOptions& o,
                            const StepDeps& deps);

}  // namespace croq::profile
