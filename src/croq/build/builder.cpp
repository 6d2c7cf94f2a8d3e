// The build pipeline of every DSL (builder.hpp).
#include "croq/build/builder.hpp"
#include "croq/build/triton_source.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <future>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "croq/build/cache.hpp"
#include "croq/build/choreo.hpp"
#include "croq/build/includes.hpp"
#include "croq/build/purity.hpp"
#include "croq/build/resources.hpp"
#include "croq/build/scripts.hpp"
#include "croq/build/symbols.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

namespace {

constexpr std::chrono::minutes k_compile_timeout{30};
constexpr size_t k_max_message_bytes = 64 * 1024;

const char* hint_for(const std::string& dsl) {
  if (dsl == "cpp") return "install g++ or set CROQ_CXX; run `croq env validate --dsl cpp`";
  if (dsl == "triton") return "install python3 or set CROQ_PYTHON; run `croq env validate --dsl triton`";
  return "install the CUDA toolkit, or set CUDA_HOME / CROQ_NVCC; run `croq env validate --dsl cuda`";
}

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

JobOutcome run_job(const CompileJob& job, const BuildCache& cache, CompilerVersions& versions, bool use_cache) {
  Stopwatch clock;
  JobOutcome o;
  o.command = shell_join(job.argv(job.dest));
  o.version = versions.version(job.compiler, job.hint);
  CacheKeyInputs key_in;
  key_in.source = job.inputs.front();
  for (const auto& inc : resolve_includes(job.inputs.front(), job.include_dirs)) key_in.headers.push_back(inc.path);
  key_in.args = job.flags;
  for (size_t i = 1; i < job.inputs.size(); ++i) key_in.args.push_back("input:" + sha256_file(job.inputs[i]));
  key_in.compiler_path = job.compiler;
  key_in.compiler_version = o.version;
  key_in.extra = job.extra_key + "|" + job.output_name;
  o.key = build_cache_key(key_in);

  if (use_cache) {
    if (auto entry = cache.lookup(o.key)) {
      for (const auto& f : entry->files) {
        if (f == job.output_name) cache.restore(*entry, f, job.dest);
      }
      o.ok = true;
      o.cached = true;
      o.log = entry->log;
      o.resources = parse_ptxas_resources(o.log);
      o.original_ms = entry->meta.value("compile_ms", 0.0);
      o.ms = clock.elapsed_ms();
      return o;
    }
  }

  fs::path tmp = cache.make_temp_dir();
  fs::path out = tmp / job.output_name;
  ProcessSpec spec;
  spec.argv = job.argv(out);
  spec.timeout = k_compile_timeout;
  Stopwatch compile_clock;
  ProcessResult r = process_runner().run(spec);
  std::error_code ec;
  if (!r.started) {
    fs::remove_all(tmp, ec);
    throw Error(ExitCode::not_found, fmt::format("cannot start {}: {}", job.compiler, r.spawn_error), job.hint);
  }
  o.log = r.err;
  if (!r.out.empty()) o.log += (o.log.empty() || o.log.back() == '\n' ? "" : "\n") + r.out;
  o.original_ms = compile_clock.elapsed_ms();
  o.resources = parse_ptxas_resources(o.log);
  if (!r.ok()) {
    o.errors = first_error_lines(o.log);
    if (r.timed_out || r.term_signal != 0) o.errors.insert(o.errors.begin(), fmt::format("{} {}", job.label, r.describe()));
    fs::remove_all(tmp, ec);
    o.ms = clock.elapsed_ms();
    return o;
  }
  if (!fs::is_regular_file(out, ec)) {
    o.errors = {fmt::format("{} exited 0 but wrote no {}", job.label, job.output_name)};
    fs::remove_all(tmp, ec);
    o.ms = clock.elapsed_ms();
    return o;
  }
  copy_file_atomic(out, job.dest);
  json meta{{"command", o.command}, {"flags", job.flags}, {"compiler", job.compiler},
            {"compiler_version", o.version}, {"compile_ms", o.original_ms}, {"created_at", now_iso8601()}};
  cache.store(o.key, {{job.output_name, out}}, meta, o.log);
  fs::remove_all(tmp, ec);
  o.ok = true;
  o.ms = clock.elapsed_ms();
  return o;
}

json resources_json(const std::vector<KernelResources>& rs) {
  json a = json::array();
  for (const auto& r : rs) a.push_back(r.to_json());
  return a;
}

// ---- the per-iteration file layout ----

struct IterationFiles {
  fs::path srcs, bin, cmd, perf;
  fs::path log, json_path, build_sh, run_sh;
};

IterationFiles iteration_files(const Workspace& ws, const BuildTarget& t) {
  IterationFiles f;
  f.srcs = ws.kind_dir(t.task, ArtifactKind::srcs);
  f.bin = ws.kind_dir(t.task, ArtifactKind::bin);
  f.cmd = ws.kind_dir(t.task, ArtifactKind::cmd);
  f.perf = ws.kind_dir(t.task, ArtifactKind::perf);
  f.log = f.perf / ("build_" + t.id + ".txt");
  f.json_path = f.perf / ("build_" + t.kernel + ".json");
  f.build_sh = f.cmd / ("build_" + t.id + ".sh");
  f.run_sh = f.cmd / ("run_" + t.id + ".sh");
  return f;
}

std::string resolve_arch(const BuildTarget& t, const BuildOptions& o) {
  if (!o.arch.empty()) return normalize_arch(o.arch);
  if (auto a = arch_from_device_key(t.task.gpu)) return *a;
  throw_usage(fmt::format("cannot tell the CUDA architecture from the device key {}", t.task.gpu),
              "pass --arch (e.g. --arch sm_90a)");
}

fs::path croq_include_dir() { return find_project_dir("include"); }

// The files of the candidate itself: its source and the local headers it includes from its own
// folder (library and runtime headers are not the candidate's).
std::vector<fs::path> candidate_files(const fs::path& source) {
  std::vector<fs::path> files{source};
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(source.parent_path(), ec);
  for (const auto& inc : resolve_includes(source, {})) {
    auto rel = inc.path.lexically_relative(dir);
    if (!rel.empty() && *rel.begin() != "..") files.push_back(inc.path);
  }
  return files;
}

std::vector<PurityFinding> check_files(const std::string& dsl, const std::vector<fs::path>& files, const Workspace& ws) {
  std::vector<PurityFinding> all;
  for (const auto& f : files) {
    auto text = read_file(f);
    if (!text) continue;
    auto found = check_source_purity(dsl, *text, ws.display(f));
    all.insert(all.end(), found.begin(), found.end());
  }
  return all;
}

json purity_json(const std::vector<PurityFinding>& findings) {
  json a = json::array();
  for (const auto& p : findings) a.push_back(p.to_json());
  return a;
}

std::vector<std::string> purity_errors(const std::vector<PurityFinding>& findings) {
  std::vector<std::string> out;
  for (const auto& p : findings) out.push_back(fmt::format("{}:{}: {} `{}`", p.file, p.line, p.rule, p.what));
  return out;
}

std::string cpu_identity() {
  auto text = read_file("/proc/cpuinfo").value_or("");
  std::string model, flags;
  for (const auto& line : split_lines(text)) {
    if (model.empty() && starts_with(line, "model name")) model = line;
    if (flags.empty() && starts_with(line, "flags")) flags = line;
    if (!model.empty() && !flags.empty()) break;
  }
  return model + "|" + sha256_hex(flags);
}

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

json base_doc(const Workspace& ws, const BuildTarget& t, const IterationFiles& f) {
  json d;
  d["schema"] = k_build_schema;
  d["verdict"] = "OK";
  d["dsl"] = t.task.dsl;
  d["task"] = t.task.id();
  d["kernel"] = t.kernel;
  d["iter"] = t.id;
  d["source"] = ws.display(t.source);
  d["outputs"] = json::array();
  d["command"] = "";
  d["flags"] = json::array();
  d["compile_ms"] = 0.0;
  d["cached"] = false;
  d["resources"] = json::array();
  d["errors"] = json::array();
  d["purity"] = json::array();
  d["log"] = ws.display(f.log);
  d["json"] = ws.display(f.json_path);
  d["created_at"] = now_iso8601();
  return d;
}

void finish(const Workspace& ws, const IterationFiles& f, BuildRecord& rec, double total_ms) {
  rec.doc["total_ms"] = total_ms;
  ensure_dir(f.perf);
  std::string header = fmt::format("# croq build {} ({}) at {}: {}\n", rec.doc.value("kernel", ""),
                                   rec.doc.value("dsl", ""), rec.doc.value("created_at", ""),
                                   rec.doc.value("verdict", ""));
  atomic_write(f.log, header + rec.log, /*durable=*/false);
  atomic_write(f.json_path, dump_pretty(rec.doc), /*durable=*/false);
  (void)ws;
}

bool forbid_if_impure(const Workspace& ws, const std::string& dsl, const std::vector<fs::path>& files, BuildRecord& rec) {
  auto findings = check_files(dsl, files, ws);
  if (findings.empty()) return false;
  rec.doc["verdict"] = "LIBRARY_CALL_FORBIDDEN";
  rec.doc["purity"] = purity_json(findings);
  rec.doc["errors"] = purity_errors(findings);
  std::string lines;
  for (const auto& e : purity_errors(findings)) lines += e + "\n";
  rec.step("purity check (nothing compiled)", "croq purity " + ws.display(files.front()), lines);
  return true;
}

void apply_job(const JobOutcome& o, const CompileJob& job, const Workspace& ws, BuildRecord& rec, bool primary) {
  rec.step(job.label + (o.cached ? " (cached)" : ""), o.command, o.log);
  if (primary) {
    rec.doc["command"] = o.command;
    rec.doc["flags"] = job.flags;
    rec.doc["compiler"] = {{"path", job.compiler}, {"version", o.version}};
    rec.doc["cache_key"] = o.key;
    rec.doc["resources"] = resources_json(o.resources);
  }
  rec.doc["compile_ms"] = rec.doc.value("compile_ms", 0.0) + o.ms;
  json step{{"label", job.label}, {"command", o.command}, {"ok", o.ok}, {"cached", o.cached},
            {"ms", o.ms}, {"compile_ms_uncached", o.original_ms}, {"cache_key", o.key}};
  rec.doc["steps"].push_back(step);
  if (o.ok) rec.doc["outputs"].push_back(ws.display(job.dest));
  if (!o.ok && primary) {
    rec.doc["verdict"] = "COMPILE_FAIL";
    rec.doc["errors"] = o.errors;
  }
}

// The symbol check of a built shared object: warnings (never a failure) for exported symbols
// beyond the ABI and for unique symbols.
void check_symbols(const JobOutcome& o, const CompileJob& job, BuildRecord& rec) {
  std::error_code ec;
  if (!o.ok || !fs::is_regular_file(job.dest, ec)) return;
  SymbolReport r = scan_symbols(job.dest);
  if (!r.is_elf) return;
  rec.doc["symbols"] = r.to_json();
  for (const auto& w : r.warnings()) rec.doc["warnings"].push_back(fs::path(job.dest).filename().string() + ": " + w);
}

// ---- adapters ----

json build_cuda_or_cpp(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
                       CompilerVersions& versions, const IterationFiles& f, BuildRecord& rec, const BuildCache& cache) {
  if (forbid_if_impure(ws, t.task.dsl, candidate_files(t.source), rec)) return rec.doc;
  CompileJob job;
  job.inputs = {t.source};
  job.output_name = t.kernel + ".so";
  job.dest = f.bin / job.output_name;
  fs::path inc = croq_include_dir();
  job.include_dirs = {inc};
  job.hint = hint_for(t.task.dsl);
  if (t.task.dsl == "cuda") {
    std::string arch = resolve_arch(t, o);
    rec.doc["arch"] = arch;
    job.label = "nvcc";
    job.compiler = tc.nvcc;
    job.flags = {"-O3", "-std=c++17", "--shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-I" + inc.string(),
                 gencode_flag(arch)};
    const auto& c = composable_nvcc_flags();
    job.flags.insert(job.flags.end(), c.begin(), c.end());
  } else {
    job.label = "g++";
    job.compiler = tc.cxx;
    job.flags = {"-O3", "-march=native", "-std=c++20", "-shared", "-fPIC", "-I" + inc.string()};
    const auto c = composable_cxx_flags(tc.cxx + " " + versions.version(tc.cxx, job.hint));
    job.flags.insert(job.flags.end(), c.begin(), c.end());
    job.extra_key = cpu_identity();  // -march=native: the output belongs to this CPU
  }
  job.flags.insert(job.flags.end(), o.flags.begin(), o.flags.end());
  JobOutcome out = run_job(job, cache, versions, o.use_cache);
  apply_job(out, job, ws, rec, /*primary=*/true);
  check_symbols(out, job, rec);
  rec.doc["cached"] = out.cached;
  return rec.doc;
}

json build_triton(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
                  CompilerVersions& versions, BuildRecord& rec) {
  if (forbid_if_impure(ws, "triton", {t.source}, rec)) return rec.doc;
  // The croq-tune skill's rule: @triton.autotune only in iter000; a later iteration pins its configuration.
  if (std::string refusal = triton_autotune_refusal(read_file_or_throw(t.source), t.kernel); !refusal.empty()) {
    rec.doc["verdict"] = "COMPILE_FAIL";
    rec.doc["rule"] = "autotune_only_in_iter000";
    rec.doc["errors"] = json::array({refusal});
    return rec.doc;
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
      return rec.doc;
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
    return rec.doc;
  }
  // Exit 3: a forbidden call found by the AST check; anything else: it does not parse or import.
  if (r.exit_code == 3) {
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
  return rec.doc;
}

// Content-addressed folder of the runtime headers embedded in a .cute.result.
fs::path store_choreo_headers(const Workspace& ws, const ChoreoScript& script) {
  Sha256 h;
  auto headers = script.headers();
  for (const Heredoc* hd : headers) {
    h.field(fs::path(hd->path).filename().string());
    h.field(hd->content);
  }
  fs::path base = ws.tuning_dir() / ".cache" / "choreo" / "headers";
  fs::path dir = base / h.hex().substr(0, 16);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return dir;
  fs::path tmp = base / fmt::format(".tmp-{}-{}", ::getpid(), h.hex().substr(0, 8) + std::to_string(std::rand()));
  ensure_dir(tmp);
  for (const Heredoc* hd : headers) atomic_write(tmp / fs::path(hd->path).filename(), hd->content, false);
  if (::rename(tmp.c_str(), dir.c_str()) != 0) fs::remove_all(tmp, ec);  // someone else stored it
  return dir;
}

struct Co2CuRecord {
  std::string co_sha256;
  std::string cu_sha256;   // the .cu as extracted (an edited .cu differs)
  std::string result;
  std::string headers_dir;
  std::string cflags;      // raw, variables not expanded
  std::string nv_arch;
};

std::optional<Co2CuRecord> read_co2cu(const fs::path& p) {
  auto text = read_file(p);
  if (!text) return std::nullopt;
  auto j = try_parse_json(*text);
  if (!j || !j->is_object()) return std::nullopt;
  Co2CuRecord r;
  r.co_sha256 = j->value("co_sha256", "");
  r.cu_sha256 = j->value("cu_sha256", "");
  r.result = j->value("result", "");
  r.headers_dir = j->value("headers_dir", "");
  r.cflags = j->value("cflags", "");
  r.nv_arch = j->value("nv_arch", "");
  return r;
}

json build_croqtile(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
                    CompilerVersions& versions, const IterationFiles& f, BuildRecord& rec, const BuildCache& cache) {
  std::error_code ec;
  const std::string arch = resolve_arch(t, o);
  rec.doc["arch"] = arch;
  fs::path co = t.source.extension() == ".co" ? t.source : fs::path(t.source).replace_extension(".co");
  fs::path cu = fs::path(co).replace_extension(".cu");
  fs::path result = f.cmd / (t.kernel + ".cute.result");
  fs::path record_path = f.cmd / (t.kernel + ".co2cu.json");
  bool have_co = fs::is_regular_file(co, ec), have_cu = fs::is_regular_file(cu, ec);
  auto record = read_co2cu(record_path);

  // Which phases run.
  bool phase1 = false, keep_cu = false;
  std::string reason;
  const std::string& phase = o.phase;
  if (phase == "1" || phase == "all") {
    phase1 = true;
    reason = "asked for (--phase " + phase + ")";
    if (have_cu && !o.force && (!record || sha256_file(cu) != record->cu_sha256)) {
      throw Error(ExitCode::conflict,
                  fmt::format("{} has been edited since choreo generated it; phase 1 would overwrite it", ws.display(cu)),
                  "add --force to regenerate it from the .co (the edits are lost), or build it as it is with --phase 2");
    }
  } else if (phase == "2") {
    reason = "skipped (--phase 2)";
  } else if (!have_co) {
    reason = "skipped: no .co (the .cu is built as it is; keep the .co for reproducibility)";
    rec.doc["warnings"].push_back("no .co beside " + ws.display(cu) + ": the seeds require the .co to be kept");
  } else if (!have_cu) {
    phase1 = true;
    reason = "no .cu yet";
  } else if (!record) {
    phase1 = true;
    keep_cu = true;
    reason = "the .cu was not generated by croq: choreo runs for the flags and headers, the .cu is kept";
  } else if (sha256_file(co) != record->co_sha256) {
    if (sha256_file(cu) == record->cu_sha256) {
      phase1 = true;
      reason = "the .co changed since the .cu was generated";
    } else {
      throw Error(ExitCode::conflict,
                  fmt::format("{} changed after {} was generated from it, and the .cu has been edited since",
                              ws.display(co), ws.display(cu)),
                  "regenerate with --phase 1 --force (the .cu edits are lost), or build the edited .cu as it is with --phase 2");
    }
  } else {
    reason = "up to date (the .cu was generated from this .co)";
  }
  if (!phase1 && !have_cu) {
    throw Error(ExitCode::not_found, fmt::format("{} does not exist and phase 1 is not run", ws.display(cu)),
                "run phase 1 first: croq build ... --phase 1");
  }

  json p1{{"co", have_co ? ws.display(co) : ""}, {"cu", ws.display(cu)}, {"result", ws.display(result)},
          {"ran", phase1}, {"reason", reason}};
  ChoreoScript script;
  fs::path headers_dir;
  if (phase1) {
    if (forbid_if_impure(ws, "croqtile", {co}, rec)) {
      rec.doc["phase1"] = p1;
      return rec.doc;
    }
    if (tc.choreo.empty()) {
      throw Error(ExitCode::not_found,
                  "croq cannot find the choreo compiler: it is not installed and CHOREO_HOME is not set",
                  "install it: scripts/setup.sh --with-choreo (the pinned commit, where croq finds it), or export "
                  "CHOREO_HOME=<CroqTile toolchain or checkout with build/choreo> (or CROQ_CHOREO=<path to choreo>); "
                  "check with `croq env validate --dsl croqtile`");
    }
    if (!fs::is_regular_file(tc.choreo, ec)) {
      throw Error(ExitCode::not_found, fmt::format("the choreo compiler {} does not exist", tc.choreo),
                  "install it (scripts/setup.sh --with-choreo) or fix CHOREO_HOME / CROQ_CHOREO");
    }
    ensure_dir(f.cmd);
    fs::path tmp_result = f.cmd / (".croq-tmp-" + t.kernel + ".cute.result");
    std::vector<std::string> argv{tc.choreo, "-gs", "-t", "cute", "-arch=" + arch};
    argv.insert(argv.end(), o.choreo_flags.begin(), o.choreo_flags.end());
    argv.push_back(co.string());
    argv.push_back("-o");
    argv.push_back(tmp_result.string());
    std::vector<std::string> shown = argv;
    shown.back() = result.string();
    ProcessSpec spec;
    spec.argv = argv;
    spec.timeout = std::chrono::minutes(5);
    Stopwatch clock;
    ProcessResult r = process_runner().run(spec);
    p1["choreo_ms"] = clock.elapsed_ms();
    p1["command"] = shell_join(shown);
    if (!r.started) {
      throw Error(ExitCode::not_found, fmt::format("cannot start {}: {}", tc.choreo, r.spawn_error),
                  "check CHOREO_HOME; `croq env validate --dsl croqtile`");
    }
    std::string out = r.err + r.out;
    rec.step("phase 1: choreo (.co -> .cute.result)", shell_join(shown), out);
    // The exit code decides, not the output file: choreo can write it before failing.
    if (!r.ok()) {
      fs::remove(tmp_result, ec);
      rec.doc["verdict"] = "COMPILE_FAIL";
      rec.doc["errors"] = first_error_lines(out);
      rec.doc["choreo_message"] = out.size() > k_max_message_bytes ? out.substr(0, k_max_message_bytes) : out;
      rec.doc["phase1"] = p1;
      return rec.doc;
    }
    auto text = read_file(tmp_result);
    if (text) script = parse_cute_result(*text);
    if (!text || script.kernel() == nullptr) {
      fs::remove(tmp_result, ec);
      rec.doc["verdict"] = "COMPILE_FAIL";
      rec.doc["errors"] = {fmt::format("choreo exited 0 but {} holds no __choreo_cute_*.cu heredoc",
                                       text ? "its output" : "wrote no output: it")};
      rec.doc["phase1"] = p1;
      return rec.doc;
    }
    fs::rename(tmp_result, result);
    headers_dir = store_choreo_headers(ws, script);
    const std::string& kernel_text = script.kernel()->content;
    if (!keep_cu) atomic_write(cu, kernel_text, /*durable=*/true);
    json rec_json{{"schema", "croq-co2cu-v1"},
                  {"co", ws.display(co)},
                  {"co_sha256", sha256_file(co)},
                  {"cu", ws.display(cu)},
                  {"cu_sha256", keep_cu ? (record ? record->cu_sha256 : std::string()) : sha256_hex(kernel_text)},
                  {"result", ws.display(result)},
                  {"headers_dir", headers_dir.string()},
                  {"cflags", script.cflags},
                  {"nv_arch", script.nv_arch},
                  {"choreo", tc.choreo},
                  {"choreo_flags", o.choreo_flags},
                  {"created_at", now_iso8601()}};
    atomic_write(record_path, dump_pretty(rec_json), /*durable=*/false);
    record = read_co2cu(record_path);
    p1["cu_written"] = !keep_cu;
  } else {
    // Phase 2 alone: the flags and headers come from the last phase 1 (its record or its script).
    if (record && fs::is_directory(record->headers_dir, ec)) {
      script.cflags = record->cflags;
      script.nv_arch = record->nv_arch;
      headers_dir = record->headers_dir;
    } else if (auto text = read_file(result)) {
      script = parse_cute_result(*text);
      headers_dir = store_choreo_headers(ws, script);
    } else {
      throw Error(ExitCode::not_found,
                  fmt::format("no phase-1 output for {} ({} is missing)", t.kernel, ws.display(result)),
                  "run phase 1 (croq build ... --phase 1) so the nvcc flags and runtime headers are known");
    }
  }
  p1["headers_dir"] = headers_dir.string();
  std::vector<std::string> unknown;
  if (tc.cute_home.empty()) {
    throw Error(ExitCode::not_found, "CUTE_HOME is not set (and CHOREO_HOME does not provide extern/cutlass)",
                "export CUTE_HOME=<CUTLASS 4.2.1 checkout> (the folder holding include/cute); "
                "check with `croq env validate --dsl croqtile`");
  }
  if (!fs::is_directory(fs::path(tc.cute_home) / "include" / "cute", ec)) {
    throw Error(ExitCode::not_found, fmt::format("CUTE_HOME={} has no include/cute", tc.cute_home),
                "point CUTE_HOME at a CUTLASS 4.2.1 checkout (the folder holding include/cute and include/cutlass)");
  }
  std::map<std::string, std::string> vars{{"nv_arch", script.nv_arch.empty() ? arch : script.nv_arch},
                                          {"CUTE_HOME", tc.cute_home},
                                          {"CUDA_HOME", tc.cuda_home},
                                          {"CUDA_LIB", tc.cuda_home + "/lib64"},
                                          {"EXTRA_TARGET_CFLAGS", ""}};
  std::string expanded = expand_shell_vars(script.cflags, vars, &unknown);
  std::vector<std::string> nvcc_flags = split_shell_words(expanded);
  p1["nvcc_flags"] = nvcc_flags;
  if (!unknown.empty()) rec.doc["warnings"].push_back("unknown variables in the script's CFLAGS: " + fmt::format("{}", fmt::join(unknown, ", ")));
  rec.doc["phase1"] = p1;
  if (phase == "1") {
    // The seeds' co2cu: phase 1 alone, so the .cu can be fine-tuned before phase 2.
    for (const char* k : {"co", "cu", "result", "nvcc_flags", "headers_dir"}) rec.doc[k] = p1[k];
    return rec.doc;
  }

  if (forbid_if_impure(ws, "croqtile", candidate_files(cu), rec)) return rec.doc;
  // Whether the .cu is choreo's output for this .co or was fine-tuned by hand (phase 2 work the
  // round records as cu_finetuned / co_bypassed).
  const std::string cu_text = read_file(cu).value_or("");
  rec.doc["cu_finetuned"] = record && !record->cu_sha256.empty() && sha256_hex(cu_text) != record->cu_sha256;
  // choreo applies -D macros to the tileflow code only; the host code must see the same values.
  const std::vector<std::string> macros = choreo_macro_flags(o.choreo_flags);
  nvcc_flags.insert(nvcc_flags.end(), macros.begin(), macros.end());
  static const std::regex main_re(R"(\bint\s+main\s*\()");
  const bool has_main = std::regex_search(strip_comments_c(cu_text), main_re);

  // Phase 2a: the program with choreo's own harness (run through `croq measure --legacy`), when the
  // .co has a main.
  CompileJob exe;
  exe.label = "phase 2: nvcc (program with choreo's harness)";
  exe.compiler = tc.nvcc;
  exe.flags = nvcc_flags;
  for (const std::string& extra : {std::string("-Xptxas"), std::string("-v"), "-I" + headers_dir.string()}) exe.flags.push_back(extra);
  exe.flags.insert(exe.flags.end(), o.flags.begin(), o.flags.end());
  exe.inputs = {cu};
  exe.output_name = t.kernel;
  exe.dest = f.bin / t.kernel;
  exe.include_dirs = {headers_dir, fs::path(tc.cute_home) / "include"};
  exe.hint = hint_for("croqtile");

  // Phase 2b: the same kernel bound to croq's ABI, when the .co is a plain matmul.
  std::optional<CompileJob> abi;
  json abi_doc{{"built", false}};
  if (o.abi && have_co) {
    std::string why;
    auto co_text = read_file(co).value_or("");
    if (auto sig = find_matmul_signature(co_text, &why)) {
      fs::path wrapper = f.cmd / (t.kernel + ".abi.cu");
      atomic_write(wrapper, abi_wrapper_source(*sig, fs::absolute(cu).string()), /*durable=*/false);
      CompileJob j;
      j.label = "phase 2: nvcc (kernel bound to the croq ABI)";
      j.compiler = tc.nvcc;
      for (size_t i = 0; i < nvcc_flags.size(); ++i) {
        if (nvcc_flags[i] == "-Xcompiler" && i + 1 < nvcc_flags.size() && nvcc_flags[i + 1] == "-static-libstdc++") {
          ++i;
          continue;
        }
        j.flags.push_back(nvcc_flags[i]);
      }
      fs::path inc = croq_include_dir();
      for (const std::string& extra : {std::string("--shared"), std::string("-Xcompiler"), std::string("-fPIC"),
                                       std::string("-Xptxas"), std::string("-v"), "-I" + headers_dir.string(),
                                       "-I" + inc.string()}) {
        j.flags.push_back(extra);
      }
      for (const auto& c : composable_nvcc_flags()) j.flags.push_back(c);
      j.flags.insert(j.flags.end(), o.flags.begin(), o.flags.end());
      j.inputs = {wrapper};
      j.output_name = t.kernel + ".so";
      j.dest = f.bin / j.output_name;
      j.include_dirs = {headers_dir, fs::path(tc.cute_home) / "include", inc};
      j.hint = hint_for("croqtile");
      abi = j;
      abi_doc["wrapper"] = ws.display(wrapper);
      abi_doc["function"] = sig->function;
      abi_doc["a_type"] = sig->a_type;
      abi_doc["c_type"] = sig->c_type;
      abi_doc["b_layout"] = sig->b_col_major ? "col" : "row";
    } else {
      abi_doc["reason"] = why;
    }
  } else if (!o.abi) {
    abi_doc["reason"] = "not asked for (--no-abi)";
  }

  // No main: the kernel is a library for croq's harness; only the ABI object is built (a .co that
  // is neither gets the program build, whose link error says what is missing).
  const bool program = has_main || !abi;
  rec.doc["program"] = program ? json(ws.display(exe.dest)) : json(nullptr);
  if (!program) rec.doc["program_reason"] = "the .co has no main(): its kernel is measured through the ABI only";
  // Both nvcc runs at once: each takes tens of seconds on a generated CuTe kernel.
  std::future<JobOutcome> exe_future;
  if (program) exe_future = std::async(std::launch::async, [&] { return run_job(exe, cache, versions, o.use_cache); });
  std::optional<JobOutcome> abi_out;
  if (abi) abi_out = run_job(*abi, cache, versions, o.use_cache);
  std::optional<JobOutcome> exe_out;
  if (program) {
    exe_out = exe_future.get();
    apply_job(*exe_out, exe, ws, rec, /*primary=*/true);
  }
  rec.doc["cached"] = (!exe_out || exe_out->cached) && (!abi_out || abi_out->cached);
  if (abi_out) {
    apply_job(*abi_out, *abi, ws, rec, /*primary=*/!program);
    abi_doc["built"] = abi_out->ok;
    check_symbols(*abi_out, *abi, rec);
    if (abi_out->ok) abi_doc["output"] = ws.display(abi->dest);
    else abi_doc["errors"] = abi_out->errors;
  }
  rec.doc["abi"] = abi_doc;
  return rec.doc;
}

}  // namespace

BuildTarget locate_build_target(const Workspace& ws, const TaskRef& task, const std::string& iter) {
  std::string id, tag;
  if (auto a = try_parse_attempt_id(iter)) {
    id = "attempt" + a->letters();
    tag = a->tag;
  } else if (starts_with(iter, "attempt")) {
    auto idx = parse_attempt_letters(iter.substr(7));
    if (!idx) throw_usage(fmt::format("--iter {} is not an iteration or attempt id", iter), "e.g. --iter 7, iter007, attemptAAAB");
    id = "attempt" + attempt_letters(*idx);
  } else if (auto it = try_parse_iter_id(iter)) {
    id = it->number_name();
    tag = it->tag;
  } else {
    id = iter_number_name(parse_iter_number(iter));
  }
  fs::path dir = ws.kind_dir(task, ArtifactKind::srcs);
  const auto& exts = source_extensions(task.dsl);
  std::error_code ec;
  // kernel name -> best source (the primary extension wins: .co before .cu for croqtile)
  std::map<std::string, std::pair<size_t, fs::path>> found;
  if (fs::is_directory(dir, ec)) {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (!entry.is_regular_file()) continue;
      std::string name = entry.path().filename().string();
      std::string ext = entry.path().extension().string();
      auto pos = std::find(exts.begin(), exts.end(), ext);
      if (pos == exts.end()) continue;
      std::string stem = entry.path().stem().string();
      if (!starts_with(stem, id + "_")) continue;
      if (!tag.empty() && stem != id + "_" + tag) continue;
      size_t rank = size_t(pos - exts.begin());
      auto cur = found.find(stem);
      if (cur == found.end() || rank < cur->second.first) found[stem] = {rank, entry.path()};
    }
  }
  if (found.empty()) {
    throw Error(ExitCode::not_found,
                fmt::format("no source for {} in {} (looked for {}_<tag>{})", tag.empty() ? id : id + "_" + tag,
                            ws.display(dir), id, fmt::format("{}", fmt::join(exts, "|"))),
                "write the source there first (croq next-iter gives the name), or check --dsl/--shape-key/--model");
  }
  if (found.size() > 1) {
    std::vector<std::string> names;
    for (const auto& [k, v] : found) names.push_back(k);
    throw_usage(fmt::format("{} has several sources: {}", id, fmt::join(names, ", ")),
                "name one with its tag, e.g. --iter " + names.front());
  }
  BuildTarget t;
  t.task = task;
  t.id = id;
  t.kernel = found.begin()->first;
  t.source = found.begin()->second.second;
  return t;
}

json build_target(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
                  CompilerVersions& versions) {
  Stopwatch clock;
  IterationFiles f = iteration_files(ws, t);
  ensure_dir(f.bin);
  ensure_dir(f.cmd);
  ensure_dir(f.perf);
  BuildCache cache(ws.tuning_dir() / ".cache" / "build");
  BuildRecord rec;
  rec.doc = base_doc(ws, t, f);
  rec.doc["steps"] = json::array();
  rec.doc["warnings"] = json::array();
  const std::string& dsl = t.task.dsl;
  if (dsl == "cuda" || dsl == "cpp") {
    build_cuda_or_cpp(ws, t, o, tc, versions, f, rec, cache);
  } else if (dsl == "triton") {
    build_triton(ws, t, o, tc, versions, rec);
  } else if (dsl == "croqtile") {
    build_croqtile(ws, t, o, tc, versions, f, rec, cache);
  } else {
    require_buildable_dsl(dsl, "build");
  }
  rec.doc["scripts"] = write_iteration_scripts(ws, t, o, tc);
  finish(ws, f, rec, clock.elapsed_ms());
  return rec.doc;
}

json write_iteration_scripts(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc) {
  IterationFiles f = iteration_files(ws, t);
  ScriptInputs in;
  in.root = ws.root();
  in.dsl = t.task.dsl;
  in.task = t.task;
  in.kernel = t.kernel;
  in.id = t.id;
  in.source = t.source;
  in.bin_dir = f.bin;
  in.cmd_dir = f.cmd;
  in.perf_dir = f.perf;
  in.log = f.log;
  in.croq_exe = o.croq_exe;
  in.extra_flags = o.flags;
  in.choreo_flags = o.choreo_flags;
  in.toolchain = tc;
  fs::path inc = croq_include_dir();
  in.include_dir = inc;
  if (t.task.dsl == "cuda" || t.task.dsl == "croqtile") {
    std::string arch;
    try {
      arch = resolve_arch(t, o);
    } catch (const Error&) {
      arch = "sm_90a";  // a script for a task without a GPU key still needs one; the build would have failed
    }
    in.arch = arch;
  }
  if (t.task.dsl == "triton") in.python_runner = find_project_dir("src/python") / "croq_runner.py";
  ensure_dir(f.cmd);
  atomic_write(f.build_sh, build_script_text(in), /*durable=*/false);
  atomic_write(f.run_sh, run_script_text(in), /*durable=*/false);
  fs::permissions(f.build_sh, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
  fs::permissions(f.run_sh, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
  return json{{"build", ws.display(f.build_sh)}, {"run", ws.display(f.run_sh)}};
}

}  // namespace croq
