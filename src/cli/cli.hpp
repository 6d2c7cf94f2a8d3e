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

#include "croq/util/step.hpp"
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
  bool json_flag = false;       // --json
  bool text = false;            // a person at a terminal: emit() prints text (render_text)
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
// The text a terminal shows for a verb's JSON document (text_output.cpp).
std::string render_text(const std::string& verb, const json& doc);
// The shapes of a sweep as a table (shape, status, rounds, baseline, best, best/baseline), rates in a
// unit that fits.
std::string sweep_table(const json& shapes);
// Example command lines of a verb, for its help and docs/cli.md (a test parses each).
const std::vector<std::string>& verb_examples(const std::string& name);

// Entry point: parses, dispatches, maps errors to exit codes. Never exits the process itself.
int run(int argc, char** argv, std::ostream& out, std::ostream& err);

// The reference of every verb in Markdown (docs/cli.md).
std::string cli_reference_markdown();
// One verb's --help text ("store-round", "checkpoint write"); empty for an unknown verb.
std::string verb_help(const std::string& verb);

// ---- helpers shared by verb files ----

// The options that name one task: --gpu --dsl --shape-key --model.
// --dsl, --shape-key and --model may be left out inside a task context: the working directory in
// one of the task's folders (tuning/<gpu>/<dsl>/<kind>/<key>/<model>/...), else the task chosen
// with `croq use` (.croq/current-task.json). A task that does not exist yet whose shape key or
// model is a near miss of an existing task's (a typo) is refused unless --new.
struct TaskOptions {
  std::string gpu;
  std::string dsl;
  std::string shape_key;
  std::string model;
  int lock_timeout_ms = 30000;
  bool is_new = false;  // --new
};
void add_task_options(CLI::App& app, TaskOptions& o, bool gpu_required = false);
// Validates the options, resolves the gpu key (flag, CROQ_GPU, detection, or the CPU key for
// dsl cpp), records the task in the context for the trace, and returns it.
TaskRef resolve_task(Context& ctx, const TaskOptions& o);
// Refuses (not_found) a task that does not exist yet when an existing task's shape key or model is a
// typo away, or its key names the same problem spelt otherwise (matmul_F32_... of matmul_f32_...);
// `new_hint` ends the hint (", or pass --new to start this one").
void refuse_near_miss(Context& ctx, const TaskRef& t, const std::string& new_hint);
// The task context (see TaskOptions): the cwd's task, else `croq use`'s; nullopt without one.
struct TaskContext {
  std::string gpu, dsl, shape_key, model;
  std::string origin;  // "cwd" or "croq use"
};
std::optional<TaskContext> task_context(Context& ctx);
fs::path current_task_file(const Workspace& ws);
// A path given on the command line: as given when it exists (relative to the working directory),
// else relative to the workspace root (croq prints paths relative to the root).
fs::path input_path(Context& ctx, const std::string& path);
// The kernel a measurement document is of (its candidate file's stem); empty if unknown.
std::string kernel_of_measurement(const json& measurement);
// Edit distance (did-you-mean suggestions).
size_t edit_distance(const std::string& a, const std::string& b);
std::chrono::milliseconds lock_timeout(const TaskOptions& o);

// What a component's run_x function reaches of the command line: the process runner and the
// context's stderr (notes, unless --quiet).
StepDeps step_deps(Context& ctx);
// Prints a step's result: its document on stdout, then its notes; its trace fields go to the
// activity trace. Returns its exit code.
ExitCode print_step(Context& ctx, const StepResult& r);

// Splits "a,b, c" into items (empty items dropped).
std::vector<std::string> split_list(const std::string& text);
// Parses a JSON object given on the command line (--extra); throws usage if it is not one.
json parse_json_object_arg(const std::string& text, const char* flag);
// The text of a --*-file option: the file's content, or standard input for "-". At most
// `max_bytes` (throws usage beyond, naming the flag); throws not_found if the file is missing.
std::string read_text_arg(const std::string& path, const char* flag, size_t max_bytes);

}  // namespace croq::cli
