// croq export: the best KEEP of one or many tasks as one library for users (src/croq/export).
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/export/export.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/util/error.hpp"

namespace croq::cli {

namespace {

// "<gpu>/<dsl>/<shape_key>/<model>", or a shape key matched against the workspace's tasks (narrowed
// by --gpu, --dsl, --model).
std::vector<TaskRef> select_export_tasks(Context& ctx, const std::vector<std::string>& names, bool all,
                                         const std::string& gpu, const std::string& dsl, const std::string& model) {
  std::vector<TaskRef> candidates;
  for (const TaskRef& t : ctx.ws().list_tasks(gpu, dsl)) {
    if (!model.empty() && t.model != model) continue;
    candidates.push_back(t);
  }
  std::vector<TaskRef> out;
  auto add = [&](const TaskRef& t) {
    for (const auto& o : out) {
      if (o.id() == t.id()) return;
    }
    out.push_back(t);
  };
  if (all) {
    for (const TaskRef& t : candidates) {
      if (t.dsl != "cuda" && t.dsl != "cpp") continue;
      if (!Ledger(ctx.ws(), t).index().best) {
        ctx.note(fmt::format("[export] {} has no KEEP yet: left out", t.id()));
        continue;
      }
      add(t);
    }
  }
  for (const std::string& name : names) {
    if (std::count(name.begin(), name.end(), '/') == 3) {
      const size_t a = name.find('/'), b = name.find('/', a + 1), c = name.find('/', b + 1);
      add(make_task(name.substr(0, a), name.substr(a + 1, b - a - 1), name.substr(b + 1, c - b - 1), name.substr(c + 1)));
      continue;
    }
    std::vector<TaskRef> match;
    for (const TaskRef& t : candidates) {
      if (t.shape.text == name) match.push_back(t);
    }
    if (match.empty()) {
      throw_not_found(fmt::format("no task with shape key {} in this workspace", name),
                      "name the task as <gpu>/<dsl>/<shape_key>/<model> (croq where lists them)");
    }
    if (match.size() > 1) {
      std::string ids;
      for (const auto& t : match) ids += (ids.empty() ? "" : ", ") + t.id();
      throw_usage(fmt::format("shape key {} names several tasks: {}", name, ids),
                  "narrow it with --gpu, --dsl or --model, or name the task as <gpu>/<dsl>/<shape_key>/<model>");
    }
    add(match.front());
  }
  if (out.empty()) throw_usage("no task to export", "name tasks, or use --all for every task with a KEEP");
  return out;
}

}  // namespace

VerbRunner setup_export(CLI::App& app) {
  struct Opts {
    std::vector<std::string> tasks;
    bool all = false;
    std::string gpu, dsl, model;
    std::string out, name = "croq", library = "both";
    bool sources_only = false, force = false;
    int jobs = 0;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("tasks", o->tasks, "tasks: <gpu>/<dsl>/<shape_key>/<model>, or shape keys (with --gpu/--dsl/--model)");
  app.add_flag("--all", o->all, "every cuda and cpp task of the workspace that has a KEEP");
  app.add_option("--gpu", o->gpu, "only tasks of this device key");
  app.add_option("--dsl", o->dsl, "only tasks of this dsl (cuda | cpp)");
  app.add_option("--model", o->model, "only tasks of this model");
  app.add_option("--out", o->out, "the export folder (created; an earlier export there is replaced)")->required();
  app.add_option("--name", o->name, "library name and entry prefix: lib<name>.so, <name>.h, <name>_matmul, "
                                    "torch.ops.<name>.matmul")->default_val("croq");
  app.add_option("--library", o->library, "shared | static | both")->default_val("both")
      ->check(CLI::IsMember({"shared", "static", "both"}));
  app.add_flag("--sources-only", o->sources_only, "write the sources, header, CMake files and build.sh; compile nothing");
  app.add_flag("--force", o->force, "export into a non-empty --out folder that holds no earlier export: its contents are set aside beside it "
               "(<out>.before-export-<time>), never deleted");
  app.add_option("--jobs", o->jobs, "compiles at once (default: one per CPU)")->check(CLI::Range(0, 256));
  return [o](Context& ctx) {
    ExportRequest req;
    req.tasks = select_export_tasks(ctx, o->tasks, o->all, o->gpu, o->dsl, o->model);
    req.out = o->out;
    req.name = o->name;
    req.shared = o->library != "static";
    req.static_lib = o->library != "shared";
    req.build = !o->sources_only;
    req.force = o->force;
    req.jobs = o->jobs;
    ctx.note(fmt::format("[export] exporting {} task(s) into {}", req.tasks.size(), req.out.string()));
    json doc = export_library(ctx.ws(), req);
    for (const auto& k : doc["kernels"]) {
      ctx.note(fmt::format("[export] {} {} (round {}) for {}x{}x{}", k.value("task", ""), k.value("kernel", ""),
                           k.value("round", 0), k["problem"].value("m", 0), k["problem"].value("n", 0),
                           k["problem"].value("k", 0)));
    }
    if (doc.contains("set_aside")) {
      ctx.note(fmt::format("[export] what {} held before (not an export) was set aside, unchanged: {}", req.out.string(),
                           doc["set_aside"].get<std::string>()));
    }
    ctx.emit(doc);
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
