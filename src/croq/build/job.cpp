// The build's shared ground (job.hpp): the job runner, the file layout, the build record.
#include "croq/build/job.hpp"

#include <fmt/format.h>

#include "croq/build/includes.hpp"
#include "croq/build/purity.hpp"
#include "croq/build/symbols.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq::build_detail {

namespace {

json resources_json(const std::vector<KernelResources>& rs) {
  json a = json::array();
  for (const auto& r : rs) a.push_back(r.to_json());
  return a;
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

}  // namespace

const char* hint_for(const std::string& dsl) {
  if (dsl == "cpp") return "install g++ or set CROQ_CXX; run `croq env validate --dsl cpp`";
  if (dsl == "triton") return "install python3 or set CROQ_PYTHON; run `croq env validate --dsl triton`";
  return "install the CUDA toolkit, or set CUDA_HOME / CROQ_NVCC; run `croq env validate --dsl cuda`";
}

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

void check_symbols(const JobOutcome& o, const CompileJob& job, BuildRecord& rec) {
  std::error_code ec;
  if (!o.ok || !fs::is_regular_file(job.dest, ec)) return;
  SymbolReport r = scan_symbols(job.dest);
  if (!r.is_elf) return;
  rec.doc["symbols"] = r.to_json();
  for (const auto& w : r.warnings()) rec.doc["warnings"].push_back(fs::path(job.dest).filename().string() + ": " + w);
}

void build_shared_object(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, CompilerVersions& versions,
                         const IterationFiles& f, BuildRecord& rec, const BuildCache& cache, CompileJob job) {
  job.inputs = {t.source};
  job.output_name = t.kernel + ".so";
  job.dest = f.bin / job.output_name;
  job.include_dirs = {croq_include_dir()};
  job.flags.insert(job.flags.end(), o.flags.begin(), o.flags.end());
  JobOutcome out = run_job(job, cache, versions, o.use_cache);
  apply_job(out, job, ws, rec, /*primary=*/true);
  check_symbols(out, job, rec);
  rec.doc["cached"] = out.cached;
}

}  // namespace croq::build_detail
