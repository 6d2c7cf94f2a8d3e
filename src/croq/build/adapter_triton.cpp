// The triton adapter: srcs/.../iterNNN_tag.py is the candidate itself; croq's Python runner checks
// that it parses, is pure (AST) and imports, cached like a compile (builder.hpp).
#include "croq/build/job.hpp"

#include <fmt/format.h>

#include "croq/build/triton_source.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq::build_detail {

// croq_runner.py --check's exit code for a forbidden library call (its EXIT_FORBIDDEN_CHECK).
constexpr int k_runner_forbidden_exit = 3;

void build_triton(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
                  CompilerVersions& versions, BuildRecord& rec) {
  if (forbid_if_impure(ws, "triton", {t.source}, rec)) return;
  // The croq-tune skill's rule: @triton.autotune only in iter000; a later iteration pins its configuration.
  if (std::string refusal = triton_autotune_refusal(read_file_or_throw(t.source), t.kernel); !refusal.empty()) {
    rec.doc["verdict"] = "COMPILE_FAIL";
    rec.doc["rule"] = "autotune_only_in_iter000";
    rec.doc["errors"] = json::array({refusal});
    return;
  }
  fs::path runner = find_project_dir("src/python") / "croq_runner.py";
  std::string version = versions.version(tc.python, hint_for("triton"));
  // The check is cached like a compile: same source, runner and interpreter -> same answer.
  CacheKeyInputs key_in;
  key_in.source = t.source;
  key_in.args = {"--check", "runner:" + sha256_file(runner)};
  key_in.compiler_path = tc.python;
  key_in.compiler_version = version;
  key_in.extra = "triton-check";
  std::string key = build_cache_key(key_in);
  BuildCache cache(ws.tuning_dir() / ".cache" / "build");
  std::vector<std::string> argv{tc.python, runner.string(), "--check", t.source.string()};
  std::string command = shell_join(argv);
  rec.doc["command"] = command;
  rec.doc["compiler"] = {{"path", tc.python}, {"version", version}};
  rec.doc["cache_key"] = key;
  rec.doc["outputs"].push_back(ws.display(t.source));
  Stopwatch clock;
  if (o.use_cache) {
    if (auto entry = cache.lookup(key)) {
      rec.step("python check (cached)", command, entry->log);
      rec.doc["cached"] = true;
      rec.doc["compile_ms"] = clock.elapsed_ms();
      return;
    }
  }
  ProcessSpec spec;
  spec.argv = argv;
  spec.timeout = std::chrono::minutes(5);
  ProcessResult r = process_runner().run(spec);
  if (!r.started) throw Error(ExitCode::not_found, fmt::format("cannot start {}: {}", tc.python, r.spawn_error), hint_for("triton"));
  std::string log = r.err + r.out;
  rec.step("python check: parse, purity (AST), import", command, log);
  rec.doc["compile_ms"] = clock.elapsed_ms();
  auto report = try_parse_json(trim(r.out));
  if (report && report->is_object()) rec.doc["check"] = *report;
  if (r.ok()) {
    cache.store(key, {}, json{{"command", command}, {"compile_ms", clock.elapsed_ms()}}, log);
    return;
  }
  // EXIT_FORBIDDEN_CHECK: a forbidden call found by the AST check; anything else: it does not parse or import.
  if (r.exit_code == k_runner_forbidden_exit) {
    rec.doc["verdict"] = "LIBRARY_CALL_FORBIDDEN";
    if (report && report->contains("findings")) rec.doc["purity"] = (*report)["findings"];
  } else {
    rec.doc["verdict"] = "COMPILE_FAIL";
  }
  std::vector<std::string> errors;
  if (report && report->contains("errors") && (*report)["errors"].is_array()) {
    for (const auto& e : (*report)["errors"]) errors.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  }
  if (errors.empty()) errors = first_error_lines(log);
  if (r.timed_out) errors.insert(errors.begin(), "python check " + r.describe());
  rec.doc["errors"] = errors;
}

}  // namespace croq::build_detail
