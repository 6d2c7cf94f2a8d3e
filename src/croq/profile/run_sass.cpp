// croq sass dump | compare as functions (run_sass.hpp).
#include "croq/profile/run_sass.hpp"

#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/build/triton_source.hpp"
#include "croq/measure/candidates.hpp"
#include "croq/measure/rules.hpp"
#include "croq/profile/sass.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/json.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"

namespace croq::profile {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// A Triton candidate's SASS comes from the cubin Triton compiled for it: croq's Python runner
// verifies the module once with Triton's kernel cache pointed at perf/<key>/<model>/cubin_<kernel>/
// (that run's kernels only, --dump-cubins), and the cubin of the module's first @triton.jit kernel
// found there is disassembled like any binary. A cubin already there is reused.
std::string triton_cubin(const Workspace& ws, const TaskRef& task, const std::string& iter, const StepDeps& deps) {
  CandidateRef c = resolve_candidate(ws, task, iter, "", false);
  const auto kernels = triton_jit_kernels(read_file_or_throw(c.path));
  if (kernels.empty()) {
    throw Error(ExitCode::not_found, fmt::format("{} defines no @triton.jit kernel", ws.display(c.path)),
                "a Triton candidate launches at least one @triton.jit function");
  }
  const fs::path dir = ws.kind_dir(task, ArtifactKind::perf) / ("cubin_" + c.kernel);
  auto find = [&]() -> std::optional<fs::path> {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return std::nullopt;
    for (const auto& k : kernels) {
      for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec)) {
        if (it->path().filename() == k + ".cubin") return it->path();
      }
    }
    return std::nullopt;
  };
  if (auto found = find()) return found->string();
  const ShapeKey& key = task.shape;
  ProcessSpec spec;
  spec.argv = {env_or("CROQ_PYTHON", "python3"), (find_project_dir("src/python") / "croq_runner.py").string(),
               "--rules", dump_compact(measurement_rules()), "--candidate", c.path.string(), "--m",
               std::to_string(key.m()), "--n", std::to_string(key.n()), "--k", std::to_string(key.k()), "--dtype",
               parse_dtype_pair_or_throw(key.dtype_token).canonical, "--mode", "verify", "--dump-cubins", dir.string(),
               "--no-isolate"};
  spec.timeout = std::chrono::minutes(10);
  if (deps.note) deps.note(fmt::format("[sass] compiling {} with Triton's cache at {}", c.kernel, ws.display(dir)));
  ProcessResult r = deps.runner.run(spec);
  if (auto found = find()) return found->string();
  auto doc = try_parse_json(trim(r.out));
  std::string why = doc && doc->is_object() ? fmt::format("{}: {}", doc->value("verdict", std::string("?")),
                                                          doc->value("reason", std::string()))
                                            : r.describe() + " " + preview(trim(r.err), 300);
  throw Error(ExitCode::candidate_failed,
              fmt::format("no cubin of {} in {} after the runner compiled {} ({})", fmt::join(kernels, ", "),
                          ws.display(dir), c.kernel, why),
              "the module must run on this GPU: croq measure --iter " + c.kernel + " shows why it does not");
}

struct LoadedSass {
  std::string origin;   // what was read, for the output
  std::string text;     // the SASS text as read
  std::vector<SassFunction> functions;
};

std::string run_tool(ProcessRunner& runner, const std::vector<std::string>& argv, const char* what,
                     const char* install_hint) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.timeout = std::chrono::minutes(10);
  spec.env_set = {{"LC_ALL", "C"}};
  ProcessResult r = runner.run(spec);
  if (!r.started) {
    throw Error(ExitCode::no_device, fmt::format("{} could not be started: {}", what, r.spawn_error), install_hint);
  }
  if (!r.ok()) {
    throw Error(ExitCode::failure,
                fmt::format("{} failed ({}): {}", shell_join(argv), r.describe(), preview(trim(r.err + r.out), 400)));
  }
  return r.out;
}

LoadedSass load_sass(ProcessRunner& runner, const SassSource& s, const std::string& cuobjdump, const std::string& ncu) {
  LoadedSass out;
  int given = !s.so.empty() + !s.report.empty() + !s.file.empty();
  if (given != 1) throw_usage("give exactly one SASS source for each side: a binary, an .ncu-rep report, or a .sass file");
  if (!s.file.empty()) {
    out.text = read_file_or_throw(s.file);
    out.origin = "file " + s.file;
    out.functions = parse_sass(out.text, s.file);
  } else if (!s.so.empty()) {
    std::error_code ec;
    if (!fs::exists(s.so, ec)) throw_not_found(fmt::format("no binary at {}", s.so));
    const char* hint = "install the CUDA toolkit's cuobjdump, or give its path with --cuobjdump (or CROQ_CUOBJDUMP)";
    out.text = run_tool(runner, {cuobjdump, "-sass", s.so}, "cuobjdump", hint);
    out.origin = "cuobjdump -sass " + s.so;
    out.functions = parse_sass(out.text, s.so);
    std::string res = run_tool(runner, {cuobjdump, "-res-usage", s.so}, "cuobjdump", hint);
    apply_resource_usage(out.functions, res);
  } else {
    std::error_code ec;
    if (!fs::exists(s.report, ec)) throw_not_found(fmt::format("no report at {}", s.report));
    out.text = run_tool(runner, {ncu, "--import", s.report, "--page", "source", "--print-source", "sass", "--csv"}, "ncu",
                        "install Nsight Compute, or give its path with --ncu (or CROQ_NCU)");
    out.origin = "ncu source page of " + s.report;
    out.functions = parse_sass(out.text, s.report);
  }
  return out;
}

json side_json(const LoadedSass& l, const SassFunction& f, const InstructionMix& mix) {
  json names = json::array();
  for (const auto& fn : l.functions) names.push_back(fn.name);
  return {{"origin", l.origin}, {"kernel", f.name}, {"functions", names}, {"mix", mix_json(mix)}};
}

}  // namespace

StepResult run_sass_dump(const Workspace* ws, const std::optional<TaskRef>& task, const SassDumpOptions& o,
                         const StepDeps& deps) {
  SassSource src = o.src;
  std::string name;
  if (!o.iter.empty()) {
    if (!task || !ws) throw_usage("--iter needs the task options --dsl --shape-key --model");
    IterId id = parse_iter_id(o.iter);
    fs::path so = ws->kind_dir(*task, ArtifactKind::bin) / (id.name() + ".so");
    src.so = task->dsl == "triton" ? triton_cubin(*ws, *task, o.iter, deps) : so.string();
    name = id.name();
  }
  if (o.baseline) name = "baseline";
  if (!o.out.empty() && ws) {
    if (std::string why = ws->user_output_refusal(o.out, task ? &*task : nullptr); !why.empty()) {
      throw_usage("--out " + why, "leave --out out (the SASS goes to the task's perf/ folder) or name a file elsewhere");
    }
  }
  auto loaded = load_sass(deps.runner, src, o.cuobjdump.empty() ? env_or("CROQ_CUOBJDUMP", "cuobjdump") : o.cuobjdump,
                          o.ncu.empty() ? env_or("CROQ_NCU", "ncu") : o.ncu);
  const auto& f = select_function(loaded.functions, src.kernel);
  auto mix = instruction_mix(f);
  StepResult res;
  res.doc = side_json(loaded, f, mix);
  fs::path out = o.out;
  if (out.empty() && task && ws) {
    if (name.empty()) throw_usage("with the task options, say which side this is: --iter ITER or --baseline");
    out = ws->kind_dir(*task, ArtifactKind::perf) / ("sass_" + name + ".sass");
  }
  if (!out.empty()) {
    ensure_dir(out.parent_path().empty() ? fs::path(".") : out.parent_path());
    atomic_write(out, loaded.text);
    res.doc["sass_file"] = task && ws ? ws->display(out) : out.string();
  }
  if (deps.note) {
    deps.note(fmt::format("[sass] {}: {} instructions, tensor family {}", f.name, mix.total,
                          mix.tensor_family().empty() ? "none" : mix.tensor_family()));
  }
  return res;
}

StepResult run_sass_compare(const Workspace* ws, const std::optional<TaskRef>& task, const SassCompareOptions& o,
                            const StepDeps& deps) {
  SassSource cand = o.cand, base = o.base;
  std::string kernel_name;
  if (task && ws) {
    if (o.iter.empty()) throw_usage("with the task options, name the candidate with --iter");
    IterId id = parse_iter_id(o.iter);
    kernel_name = id.name();
    fs::path perf = ws->kind_dir(*task, ArtifactKind::perf);
    fs::path cached = perf / ("sass_" + id.name() + ".sass");
    std::error_code ec;
    if (cand.so.empty() && cand.file.empty()) {
      if (fs::exists(cached, ec)) cand.file = cached.string();
      else if (task->dsl == "triton") cand.so = triton_cubin(*ws, *task, o.iter, deps);
      else cand.so = (ws->kind_dir(*task, ArtifactKind::bin) / (id.name() + ".so")).string();
    }
    if (base.report.empty() && base.file.empty()) {
      fs::path b = perf / "sass_baseline.sass";
      if (!fs::exists(b, ec)) {
        throw Error(ExitCode::not_found, fmt::format("no baseline SASS at {}", ws->display(b)),
                    "dump it once: croq sass dump --baseline --report <baseline .ncu-rep> --dsl ... --shape-key ... --model ...");
      }
      base.file = b.string();
    }
  }
  std::string cuobjdump = o.cuobjdump.empty() ? env_or("CROQ_CUOBJDUMP", "cuobjdump") : o.cuobjdump;
  std::string ncu = o.ncu.empty() ? env_or("CROQ_NCU", "ncu") : o.ncu;
  auto lc = load_sass(deps.runner, cand, cuobjdump, ncu);
  auto lb = load_sass(deps.runner, base, cuobjdump, ncu);
  const auto& fc = select_function(lc.functions, cand.kernel);
  const auto& fb = select_function(lb.functions, base.kernel);
  auto mc = instruction_mix(fc);
  auto mb = instruction_mix(fb);
  auto div = compare_mix(mc, mb);
  StepResult res;
  json& doc = res.doc;
  doc["candidate"] = side_json(lc, fc, mc);
  doc["baseline"] = side_json(lb, fb, mb);
  doc["divergences"] = divergences_json(div);
  doc["top"] = div.empty() ? json(nullptr) : doc["divergences"][0];
  if (task && ws) {
    // Kept beside the profiles and recorded as evidence (the protocol asks for a SASS comparison
    // after 7 consecutive discards on a base).
    fs::path file = ws->kind_dir(*task, ArtifactKind::perf) / ("sass_compare_" + kernel_name + ".json");
    atomic_write(file, dump_pretty(doc));
    doc["file"] = ws->display(file);
    json summary = {{"divergences", div.size()},
                    {"top_category", div.empty() ? json(nullptr) : json(div.front().category)},
                    {"top_severity", div.empty() ? json(nullptr) : json(div.front().severity)}};
    record_evidence(*ws, *task, EvidenceKind::sass_compare, kernel_name, file, summary);
  }
  if (deps.note) {
    deps.note(div.empty() ? std::string("[sass] no notable divergence")
                          : fmt::format("[sass] top divergence ({}): {}", div.front().severity, div.front().reason));
  }
  return res;
}

}  // namespace croq::profile
