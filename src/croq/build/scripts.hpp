// The per-iteration scripts of the seeds, written by `croq build` and `croq prepare`:
//   cmd/<key>/<model>/build_<id>.sh  rebuilds the candidate by hand with the same compiler command
//                                    croq runs (croq adds only its cache), logging to
//                                    perf/<key>/<model>/build_<id>.txt;
//   cmd/<key>/<model>/run_<id>.sh    measures it: `croq measure` for candidates bound to the
//                                    kernel ABI (cuda, cpp, triton, croqtile with its wrapper),
//                                    `croq measure --legacy` for a choreo program with its own harness.
// Both change to the workspace root first, so they work from any folder. Extra arguments of
// run_<id>.sh are passed on to croq measure.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "croq/build/toolchain.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct ScriptInputs {
  std::filesystem::path root;
  std::string dsl;
  TaskRef task;
  std::string kernel;  // iter007_tag
  std::string id;      // iter007
  std::filesystem::path source;
  std::filesystem::path bin_dir, cmd_dir, perf_dir, log;
  std::filesystem::path include_dir;     // croq's include/
  std::filesystem::path python_runner;   // src/python/croq_runner.py (triton)
  std::string arch;                      // sm_90a (cuda, croqtile)
  std::string croq_exe;                  // the croq binary (default: `croq` on PATH)
  std::vector<std::string> extra_flags;
  std::vector<std::string> choreo_flags;
  Toolchain toolchain;
};

std::string build_script_text(const ScriptInputs& in);
std::string run_script_text(const ScriptInputs& in);

}  // namespace croq
