// The croq command line: one table of verbs (verbs.cpp) drives parsing, --help, "did you mean"
// and the reference in docs/cli.md. Each verb's file registers its options on a CLI11 subcommand
// and returns the function that runs it. Machine output is one JSON document on stdout; messages
// go to stderr; failures throw croq::Error, caught once in run().
#pragma once
#include <CLI/CLI.hpp>

#include <chrono>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/error.hpp"
#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq::cli {

// What every verb can reach: the streams, global flags, and the task it acted on (for the trace).
struct Context {
  std::ostream& out;
  std::ostream& err;
  std::string root_flag;        // --root
  bool pretty = false;          // --pretty
  bool quiet = false;           // --quiet
  std::vector<std::string> argv;
  std::string verb;

  // Set by verbs that act on one task: the activity trace is appended there (and to the tasks
  // in `also_traced`, for verbs that act on several).
  std::optional<Workspace> workspace;
  std::optional<TaskRef> task;
  std::vector<TaskRef> also_traced;
  json trace_extra = json::object();

  Workspace& ws();              // resolves the root on first use (throws usage if none)
  void emit(const json& doc);   // the verb's JSON document on stdout
  void note(const std::string& line);  // a human line on stderr (unless --quiet)
};

using VerbRunner = std::function<ExitCode(Context&)>;

struct VerbSpec {
  const char* name;       // "store-round", "checkpoint write", ...
  const char* summary;    // one line for the verb list
  const char* details;    // paragraphs for --help and docs/cli.md: JSON fields, exit codes
  std::function<VerbRunner(CLI::App&)> setup;
};

const std::vector<VerbSpec>& verbs();

// Entry point: parses, dispatches, maps errors to exit codes. Never exits the process itself.
int run(int argc, char** argv, std::ostream& out, std::ostream& err);

// The reference of every verb in Markdown (docs/cli.md).
std::string cli_reference_markdown();

// ---- helpers shared by verb files ----

// The options that name one task: --gpu --dsl --shape-key --model.
struct TaskOptions {
  std::string gpu;
  std::string dsl;
  std::string shape_key;
  std::string model;
  int lock_timeout_ms = 30000;
};
void add_task_options(CLI::App& app, TaskOptions& o, bool gpu_required = false);
// Validates the options, resolves the gpu key (flag, CROQ_GPU, detection, or the CPU key for
// dsl cpp), records the task in the context for the trace, and returns it.
TaskRef resolve_task(Context& ctx, const TaskOptions& o);
std::chrono::milliseconds lock_timeout(const TaskOptions& o);

// Splits "a,b, c" into items (empty items dropped).
std::vector<std::string> split_list(const std::string& text);
// Parses a JSON object given on the command line (--extra); throws usage if it is not one.
json parse_json_object_arg(const std::string& text, const char* flag);
// The text of a --*-file option: the file's content, or standard input for "-". At most
// `max_bytes` (throws usage beyond, naming the flag); throws not_found if the file is missing.
std::string read_text_arg(const std::string& path, const char* flag, size_t max_bytes);

}  // namespace croq::cli
