// `croq build`: turns an iteration's source in srcs/ into what the measurement runner loads, with
// one adapter per DSL, and leaves everything needed to reproduce it by hand.
//
//   dsl       source                      output(s)                                   compiler
//   cuda      srcs/.../iterNNN_tag.cu     bin/.../iterNNN_tag.so                       nvcc --shared
//   cpp       srcs/.../iterNNN_tag.cpp    bin/.../iterNNN_tag.so                       g++ -shared
//   triton    srcs/.../iterNNN_tag.py     (none: the .py is the candidate)             python3: parse, purity, import
//   croqtile  srcs/.../iterNNN_tag.co     phase 1: srcs/.../iterNNN_tag.cu,            choreo -gs -t cute
//                                                  cmd/.../iterNNN_tag.cute.result
//                                         phase 2: bin/.../iterNNN_tag (own harness),  nvcc (the script's CFLAGS)
//                                                  bin/.../iterNNN_tag.so (ABI wrapper, when the .co is a plain matmul)
//
// Every build writes cmd/.../build_iterNNN.sh and run_iterNNN.sh, the log perf/.../build_iterNNN.txt
// and its JSON summary perf/.../build_<kernel>.json:
//   {verdict: OK|COMPILE_FAIL|LIBRARY_CALL_FORBIDDEN, dsl, kernel, iter, source, outputs, command,
//    flags, compiler, compile_ms, cached, cache_key, resources:[{kernel, registers, shared_bytes,
//    stack_bytes, spill_stores, spill_loads, ...}], errors, purity, log, scripts, json,
//    phase1 (croqtile: {co, cu, result, nvcc_flags, headers_dir, ran, reason, choreo_ms})}
// Sources are checked for forbidden library use (purity.hpp) before anything is compiled.
// Compiles go through the build cache (cache.hpp) and only ever through the process runner.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "croq/build/toolchain.hpp"
#include "croq/util/json.hpp"
#include "croq/workspace/sources.hpp"  // source_extensions
#include "croq/workspace/workspace.hpp"

namespace croq {

inline constexpr const char* k_build_schema = "croq-build-v1";

struct BuildOptions {
  std::string arch;                       // normalised ("sm_90a"); empty: from the task's device key
  std::vector<std::string> flags;         // extra compiler flags, appended to croq's
  std::vector<std::string> choreo_flags;  // croqtile phase 1 flags (e.g. --use-warpspec)
  bool use_cache = true;
  std::string phase = "auto";             // croqtile: auto | 1 | 2 | all
  bool force = false;                     // croqtile: let phase 1 replace a hand-edited .cu
  bool abi = true;                        // croqtile: also build the ABI-bound .so when possible
  std::string croq_exe;                   // the croq executable named in run scripts
  std::string gpu_for_scripts;            // --gpu for run scripts (the task's key)
};

// The iteration (or attempt) a build is for.
struct BuildTarget {
  TaskRef task;
  std::string id;       // "iter007" or "attemptAAAB"
  std::string kernel;   // "iter007_tag"
  std::filesystem::path source;  // the primary source (.cu / .cpp / .py / .co)
};


// Finds the source of `iter` ("7", "iter007", "iter007_tag", "attemptAAAB[_tag]") in the task's
// srcs/ folder. Throws not_found (no such source) or usage (several tags, bad id).
BuildTarget locate_build_target(const Workspace& ws, const TaskRef& task, const std::string& iter);

// Builds one target. Candidate failures are data (verdict); misuse and missing tools throw.
json build_target(const Workspace& ws, const BuildTarget& target, const BuildOptions& options,
                  const Toolchain& toolchain, CompilerVersions& versions);

// Writes cmd/.../build_<id>.sh and run_<id>.sh for a target without building it (croq prepare).
// Returns {build, run} as displayed paths.
json write_iteration_scripts(const Workspace& ws, const BuildTarget& target, const BuildOptions& options,
                             const Toolchain& toolchain);

}  // namespace croq
