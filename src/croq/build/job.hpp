// The build's shared ground (internal to src/croq/build): one compiler invocation through the
// cache (`run_job`), the per-iteration file layout, the build record (JSON summary and log) and the
// checks every adapter makes. The adapters, one file per DSL (adapter_<dsl>.cpp), build on it;
// builder.cpp dispatches to them and writes the scripts.
#pragma once
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "croq/build/builder.hpp"
#include "croq/build/cache.hpp"
#include "croq/build/resources.hpp"
#include "croq/build/toolchain.hpp"
#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::build_detail {

inline constexpr std::chrono::minutes k_compile_timeout{30};

// What to install or set when a DSL's compiler cannot start.
const char* hint_for(const std::string& dsl);

// ---- one compiler invocation, through the cache ----

struct CompileJob {
  std::string label;                     // "nvcc", "g++", "nvcc (harness)", "nvcc (abi)"
  std::string compiler;
  std::vector<std::string> flags;        // everything before the inputs
  std::vector<fs::path> inputs;
  std::string output_name;               // file name inside the cache entry
  fs::path dest;                         // where the output goes
  std::vector<fs::path> include_dirs;    // for the header part of the key
  std::string extra_key;
  std::string hint;

  std::vector<std::string> argv(const fs::path& out) const {
    std::vector<std::string> a{compiler};
    a.insert(a.end(), flags.begin(), flags.end());
    for (const auto& in : inputs) a.push_back(in.string());
    a.push_back("-o");
    a.push_back(out.string());
    return a;
  }
};

struct JobOutcome {
  bool ok = false;
  bool cached = false;
  double ms = 0;
  double original_ms = 0;
  std::string log;
  std::vector<KernelResources> resources;
  std::vector<std::string> errors;
  std::string command;  // as it would be typed, writing straight to dest
  std::string key;
  std::string version;
};

// Runs one job through the build cache (`use_cache`: look the key up first); a compiler that
// cannot start throws not_found with the job's hint, a failed compile is data (errors).
JobOutcome run_job(const CompileJob& job, const BuildCache& cache, CompilerVersions& versions, bool use_cache);

// ---- the per-iteration file layout ----

struct IterationFiles {
  fs::path srcs, bin, cmd, perf;
  fs::path log, json_path, build_sh, run_sh;
};
IterationFiles iteration_files(const Workspace& ws, const BuildTarget& t);
// --arch, else the task's device key's architecture; throws usage if neither says.
std::string resolve_arch(const BuildTarget& t, const BuildOptions& o);
fs::path croq_include_dir();
// The files of the candidate itself: its source and the local headers it includes from its own
// folder (library and runtime headers are not the candidate's).
std::vector<fs::path> candidate_files(const fs::path& source);
// This CPU's model and flags (the cache key of -march=native outputs).
std::string cpu_identity();

// ---- the JSON summary and the log ----

struct BuildRecord {
  json doc;
  std::string log;  // the build log (every step)

  void step(const std::string& title, const std::string& command, const std::string& output) {
    log += fmt::format("# {}\n$ {}\n", title, command);
    log += output;
    if (!output.empty() && output.back() != '\n') log += '\n';
  }
};

json base_doc(const Workspace& ws, const BuildTarget& t, const IterationFiles& f);
// Writes the log and the JSON summary.
void finish(const Workspace& ws, const IterationFiles& f, BuildRecord& rec, double total_ms);
// The purity check before anything is compiled: true (and the record says LIBRARY_CALL_FORBIDDEN)
// when a file uses a forbidden library.
bool forbid_if_impure(const Workspace& ws, const std::string& dsl, const std::vector<fs::path>& files, BuildRecord& rec);
// A job's outcome into the record (`primary`: its command, flags and verdict are the build's).
void apply_job(const JobOutcome& o, const CompileJob& job, const Workspace& ws, BuildRecord& rec, bool primary);
// The symbol check of a built shared object: warnings (never a failure) for exported symbols
// beyond the ABI and for unique symbols.
void check_symbols(const JobOutcome& o, const CompileJob& job, BuildRecord& rec);
// The one-.so build shared by the cuda and cpp adapters: `job` carries the compiler and its flags;
// the source, output and --flag extras are filled here, then it runs and is recorded.
void build_shared_object(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, CompilerVersions& versions,
                         const IterationFiles& f, BuildRecord& rec, const BuildCache& cache, CompileJob job);

// ---- the adapters (adapter_<dsl>.cpp) ----

void build_cuda(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
                CompilerVersions& versions, const IterationFiles& f, BuildRecord& rec, const BuildCache& cache);
void build_cpp(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
               CompilerVersions& versions, const IterationFiles& f, BuildRecord& rec, const BuildCache& cache);
void build_triton(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
                  CompilerVersions& versions, BuildRecord& rec);
void build_croqtile(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
                    CompilerVersions& versions, const IterationFiles& f, BuildRecord& rec, const BuildCache& cache);

}  // namespace croq::build_detail
