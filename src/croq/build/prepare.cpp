// croq prepare as a function (prepare.hpp).
#include "croq/build/prepare.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/build/builder.hpp"
#include "croq/build/discover.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"
#include "croq/workspace/sources.hpp"

namespace croq {

StepResult run_prepare(Workspace& ws, const TaskRef& task, const PrepareOptions& o, const StepDeps& deps) {
  if (!o.from.empty() && o.pick > 0) throw_usage("--from and --pick exclude each other");
  const auto& exts = source_extensions(task.dsl);

  // The kernel to start from.
  fs::path source;
  std::vector<fs::path> companions;
  json origin;
  if (!o.from.empty()) {
    source = fs::absolute(o.from);
    std::error_code ec;
    if (!fs::is_regular_file(source, ec)) throw_not_found("--from " + o.from + " is not a file");
    if (std::find(exts.begin(), exts.end(), source.extension().string()) == exts.end()) {
      throw_usage(fmt::format("--from {}: a {} source ends in {}", o.from, task.dsl, fmt::join(exts, " or ")));
    }
    for (const auto& ext : exts) {
      fs::path c = fs::path(source).replace_extension(ext);
      if (c != source && fs::is_regular_file(c, ec) && task.dsl == "croqtile") companions.push_back(c);
    }
    origin = {{"tier", "given"}, {"path", source.string()}};
  } else {
    DiscoverRequest req;
    req.dsl = task.dsl;
    req.op = operator_name(task.shape);
    req.dtype = task.shape.dtype_token;
    req.gpu = task.gpu;
    req.exclude = task;
    Discovery d = discover_starting_kernels(&ws, req);
    std::optional<size_t> chosen;
    if (o.pick > 0) {
      if (size_t(o.pick) > d.candidates.size()) {
        throw_usage(fmt::format("--pick {}: discovery found {} kernel(s)", o.pick, d.candidates.size()),
                    "see `croq discover --dsl " + task.dsl + " --operator " + req.op + "`");
      }
      chosen = size_t(o.pick - 1);
    } else {
      chosen = d.recommended;
    }
    if (!chosen) {
      throw Error(ExitCode::not_found,
                  fmt::format("no starting kernel for {} {} (tier C): write one from scratch", task.dsl, req.op),
                  "read the references of `croq discover --dsl " + task.dsl + " --operator " + req.op +
                      "`, write the kernel, then `croq prepare ... --from FILE`");
    }
    const StartingKernel& k = d.candidates[*chosen];
    source = k.path;
    companions = k.companions;
    origin = {{"tier", k.tier}, {"index", k.index}, {"name", k.name}, {"path", ws.display(k.path)}, {"meta", k.meta}};
  }
  std::string tag = o.tag.empty() ? tag_from_stem(source.stem().string()) : o.tag;
  validate_tag(tag);

  // iter001: refused when it exists, unless --force and not stored yet.
  Ledger ledger(ws, task);
  fs::path srcs = ws.kind_dir(task, ArtifactKind::srcs);
  std::error_code ec;
  std::vector<fs::path> existing;
  if (fs::is_directory(srcs, ec)) {
    for (const auto& e : fs::directory_iterator(srcs, ec)) {
      if (starts_with(e.path().filename().string(), "iter001_")) existing.push_back(e.path());
    }
  }
  if (ledger.index().iters.contains(1)) {
    throw Error(ExitCode::conflict, "iter001 of " + task.id() + " is already stored", "prepare is for a task's first kernel");
  }
  if (!existing.empty() && !o.force) {
    throw Error(ExitCode::conflict, "iter001 already has a source: " + ws.display(existing.front()),
                "add --force to replace it (it is not stored yet)");
  }
  if (existing.empty()) {
    int n = ledger.reserve_iter(std::chrono::milliseconds(o.lock_timeout_ms));
    if (n != 1) {
      ledger.release_iter(n, std::chrono::milliseconds(o.lock_timeout_ms));
      throw Error(ExitCode::conflict, fmt::format("the next iteration of {} is iter{:03d}, not iter001", task.id(), n),
                  "prepare is for a task's first kernel; use croq next-iter for later ones");
    }
  } else {
    for (const auto& p : existing) fs::remove(p, ec);
  }

  ensure_dir(srcs);
  IterId id{1, tag};
  fs::path dest = srcs / (id.name() + source.extension().string());
  atomic_write(dest, read_file_or_throw(source), /*durable=*/true);
  json copied = json::array({ws.display(dest)});
  for (const auto& c : companions) {
    fs::path d = srcs / (id.name() + c.extension().string());
    atomic_write(d, read_file_or_throw(c), /*durable=*/true);
    copied.push_back(ws.display(d));
  }
  BuildTarget target{task, id.number_name(), id.name(), dest};
  BuildOptions options;
  options.croq_exe = o.croq_exe;
  json scripts = write_iteration_scripts(ws, target, options, Toolchain::from_env());
  StepResult res;
  res.doc = json{{"iter", id.number_name()},
           {"kernel", id.name()},
           {"source", ws.display(dest)},
           {"files", copied},
           {"from", origin},
           {"scripts", scripts},
           {"next", fmt::format("croq build --gpu {} --dsl {} --shape-key {} --model {} --iter {}", task.gpu, task.dsl,
                                task.shape.text, task.model, id.name())}};
  if (deps.note) deps.note(fmt::format("[prepare] {} <- {}", ws.display(dest), origin.value("path", "")));
  return res;
}

}  // namespace croq
