// The build pipeline of every DSL (builder.hpp): finds an iteration's source, dispatches to its
// DSL's adapter (adapter_<dsl>.cpp, on the shared job runner and build record of job.hpp), and
// writes the iteration's build and run scripts.
#include "croq/build/builder.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/build/cache.hpp"
#include "croq/build/job.hpp"
#include "croq/build/scripts.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

using namespace build_detail;

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
  if (dsl == "cuda") {
    build_cuda(ws, t, o, tc, versions, f, rec, cache);
  } else if (dsl == "cpp") {
    build_cpp(ws, t, o, tc, versions, f, rec, cache);
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

