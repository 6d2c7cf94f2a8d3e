// croq discover and croq prepare: the starting kernel of a task (src/croq/build/discover.hpp),
// copied to iter001 with its build and run scripts.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/build/builder.hpp"
#include "croq/build/discover.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

namespace croq::cli {

namespace {

// The workspace if one can be found; discovery works without (tiers A and C).
Workspace* optional_workspace(Context& ctx) {
  try {
    return &ctx.ws();
  } catch (const Error&) {
    return nullptr;
  }
}

}  // namespace

VerbRunner setup_discover(CLI::App& app) {
  struct Opts {
    std::string dsl;
    std::string op;
    std::string dtype;
    std::string gpu;
    std::string shape_key;
    std::string model;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--dsl", o->dsl, "cuda | croqtile | triton | cpp")->required();
  app.add_option("--operator", o->op, "operator family, e.g. matmul")->required();
  app.add_option("--dtype", o->dtype, "only kernels for this dtype (f16f32, bf16f32, ...)");
  app.add_option("--gpu", o->gpu, "the device key the kernel is for (default: CROQ_GPU, else detected; may be absent)");
  app.add_option("--shape-key", o->shape_key, "with --model: the task being prepared (left out of tier B)");
  app.add_option("--model", o->model, "with --shape-key: the task being prepared");
  return [o](Context& ctx) {
    require_buildable_dsl(o->dsl, "discover kernels of");
    validate_path_component(o->op, "operator");
    if (!o->dtype.empty()) parse_dtype_pair_or_throw(o->dtype);
    DiscoverRequest req;
    req.dsl = o->dsl;
    req.op = o->op;
    req.dtype = o->dtype;
    try {
      req.gpu = resolve_device_key(o->gpu, o->dsl);
    } catch (const Error&) {
      req.gpu.clear();  // no GPU here and none named: tier B is not ordered by GPU
    }
    if (!o->shape_key.empty() && !o->model.empty() && !req.gpu.empty()) {
      req.exclude = make_task(req.gpu, o->dsl, o->shape_key, o->model);
    }
    Workspace* ws = optional_workspace(ctx);
    Discovery d = discover_starting_kernels(ws, req);
    json out{{"dsl", o->dsl}, {"operator", o->op}, {"dtype", o->dtype}, {"gpu", req.gpu}};
    out.update(d.to_json(ws));
    ctx.note(fmt::format("[discover] tier {}: {} candidate(s)", out.value("tier", ""), d.candidates.size()));
    ctx.emit(out);
    return ExitCode::ok;
  };
}

VerbRunner setup_prepare(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string from;
    int pick = 0;
    std::string tag;
    bool force = false;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--from", o->from, "copy this file as iter001 (instead of a discovered kernel)");
  app.add_option("--pick", o->pick, "the discovered kernel to use (its `index` in croq discover)")->check(CLI::PositiveNumber);
  app.add_option("--tag", o->tag, "tag of iter001 (default: from the kernel's name)");
  app.add_flag("--force", o->force, "replace an iter001 source that is not stored yet");
  return [o](Context& ctx) {
    if (!o->from.empty() && o->pick > 0) throw_usage("--from and --pick exclude each other");
    require_buildable_dsl(o->task.dsl, "prepare a starting kernel of");
    TaskRef task = resolve_task(ctx, o->task);
    Workspace& ws = ctx.ws();
    const auto& exts = source_extensions(task.dsl);

    // The kernel to start from.
    fs::path source;
    std::vector<fs::path> companions;
    json origin;
    if (!o->from.empty()) {
      source = fs::absolute(o->from);
      std::error_code ec;
      if (!fs::is_regular_file(source, ec)) throw_not_found("--from " + o->from + " is not a file");
      if (std::find(exts.begin(), exts.end(), source.extension().string()) == exts.end()) {
        throw_usage(fmt::format("--from {}: a {} source ends in {}", o->from, task.dsl, fmt::join(exts, " or ")));
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
      if (o->pick > 0) {
        if (size_t(o->pick) > d.candidates.size()) {
          throw_usage(fmt::format("--pick {}: discovery found {} kernel(s)", o->pick, d.candidates.size()),
                      "see `croq discover --dsl " + task.dsl + " --operator " + req.op + "`");
        }
        chosen = size_t(o->pick - 1);
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
    std::string tag = o->tag.empty() ? tag_from_stem(source.stem().string()) : o->tag;
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
    if (!existing.empty() && !o->force) {
      throw Error(ExitCode::conflict, "iter001 already has a source: " + ws.display(existing.front()),
                  "add --force to replace it (it is not stored yet)");
    }
    if (existing.empty()) {
      int n = ledger.reserve_iter(lock_timeout(o->task));
      if (n != 1) {
        ledger.release_iter(n, lock_timeout(o->task));
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
    options.croq_exe = (self_exe_dir() / "croq").string();
    json scripts = write_iteration_scripts(ws, target, options, Toolchain::from_env());
    json doc{{"iter", id.number_name()},
             {"kernel", id.name()},
             {"source", ws.display(dest)},
             {"files", copied},
             {"from", origin},
             {"scripts", scripts},
             {"next", fmt::format("croq build --gpu {} --dsl {} --shape-key {} --model {} --iter {}", task.gpu, task.dsl,
                                  task.shape.text, task.model, id.name())}};
    ctx.note(fmt::format("[prepare] {} <- {}", ws.display(dest), origin.value("path", "")));
    ctx.emit(doc);
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
