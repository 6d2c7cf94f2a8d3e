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
  auto words = std::make_shared<std::vector<std::string>>();
  auto* md = app.add_flag("--markdown", *markdown, "print the whole reference as Markdown (docs/cli.md)");
  app.add_flag("--json", *as_json, "print the verb table as JSON: [{name, summary, details, options}]")->excludes(md);
  app.add_option("verb", *words, "the verb to explain (`croq help store-round`, `croq help checkpoint write`)");
  return [markdown, as_json, words](Context& ctx) {
    if (!words->empty()) {
      std::string name;
      for (const auto& w : *words) name += (name.empty() ? "" : " ") + w;
      std::string text = verb_help(name);
      if (text.empty()) {
        // A group (`croq help sweep`): its verbs, each with its summary.
        std::string group;
        for (const auto& v : verbs()) {
          if (std::string(v.name).rfind(name + " ", 0) == 0) group += fmt::format("  croq {:<22} {}\n", v.name, v.summary);
        }
        if (!group.empty()) {
          ctx.out << fmt::format("croq {}: the verbs of the group (`croq help {} <verb>` explains one)\n{}", name,
                                 name, group);
          return ExitCode::ok;
        }
      }
      if (text.empty()) {
        std::string best;
        size_t best_d = 99;
        for (const auto& v : verbs()) {
          const std::string full = v.name;
          for (const std::string& cand : {full, full.substr(0, full.find(' '))}) {  // the verb, its group
            size_t d = edit_distance(name, cand);
            if (d < best_d) best_d = d, best = cand;
          }
        }
        throw_usage("unknown verb '" + name + "'",
                    best_d <= 3 ? "did you mean `croq help " + best + "`?" : "run `croq help` for the list of verbs");
      }
      ctx.out << text;
      return ExitCode::ok;
    }
    if (*markdown) {
      ctx.out << cli_reference_markdown();
      return ExitCode::ok;
    }
    if (*as_json) {
      json table = json::array();
      for (const auto& v : verbs()) {
        // Each verb's options, built in a scratch parser (for tools and the suggestion test).
        CLI::App scratch("", "croq");
        CLI::App& sub = *scratch.add_subcommand("x", "");
        (void)v.setup(sub);
        json options = json::array();
        for (const CLI::Option* opt : sub.get_options()) {
          for (const auto& l : opt->get_lnames()) options.push_back("--" + l);
        }
        table.push_back({{"name", v.name}, {"summary", v.summary}, {"details", v.details}, {"options", options}});
      }
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
