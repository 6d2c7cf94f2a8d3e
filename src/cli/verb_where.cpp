// croq where / croq help / croq task init: small verbs about the workspace itself.
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/ledger/documents.hpp"

namespace croq::cli {

VerbRunner setup_where(CLI::App&) {
  return [](Context& ctx) {
    RootChoice choice = resolve_root(ctx.root_flag);
    Workspace ws(choice.root);
    json tasks = json::array();
    for (const auto& t : ws.list_tasks()) tasks.push_back(t.id());
    ctx.emit({{"root", choice.root.string()},
              {"origin", choice.origin},
              {"tuning_dir", ws.tuning_dir().string()},
              {"tasks", tasks}});
    return ExitCode::ok;
  };
}

VerbRunner setup_help(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  auto as_json = std::make_shared<bool>(false);
  auto* md = app.add_flag("--markdown", *markdown, "print the whole reference as Markdown (docs/cli.md)");
  app.add_flag("--json", *as_json, "print the verb table as JSON: [{name, summary, details}]")->excludes(md);
  return [markdown, as_json](Context& ctx) {
    if (*markdown) {
      ctx.out << cli_reference_markdown();
      return ExitCode::ok;
    }
    if (*as_json) {
      json table = json::array();
      for (const auto& v : verbs()) table.push_back({{"name", v.name}, {"summary", v.summary}, {"details", v.details}});
      ctx.emit(table);
      return ExitCode::ok;
    }
    ctx.out << "croq verbs:\n";
    for (const auto& v : verbs()) ctx.out << fmt::format("  {:<22} {}\n", v.name, v.summary);
    return ExitCode::ok;
  };
}

VerbRunner setup_task_init(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string task_uid;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--task-uid", o->task_uid, "the monitor's task id (letters, digits, '-', '_'); new if omitted");
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);
    if (!o->task_uid.empty()) validate_path_component(o->task_uid, "task uid");
    json cfg = ensure_task_config(ctx.ws(), t, o->task_uid);
    ctx.emit(cfg);
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
