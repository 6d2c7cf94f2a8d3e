// croq use (the task context) and croq status (a table of the workspace's tasks).
#include <unistd.h>

#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/time.hpp"
#include "croq/util/units.hpp"

namespace croq::cli {

VerbRunner setup_use(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    bool clear = false;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_flag("--clear", o->clear, "forget the chosen task");
  return [o](Context& ctx) {
    Workspace& ws = ctx.ws();
    const fs::path file = current_task_file(ws);
    if (o->clear) {
      std::error_code ec;
      fs::remove(file, ec);
      ctx.emit({{"ok", true}, {"task", nullptr}, {"file", ws.display(file)}});
      return ExitCode::ok;
    }
    const bool naming = !o->task.dsl.empty() || !o->task.shape_key.empty() || !o->task.model.empty();
    if (!naming) {
      auto c = task_context(ctx);
      if (!c) {
        throw Error(ExitCode::not_found, "no task chosen",
                    "croq use --dsl <dsl> --shape-key <key> --model <model> (or run croq inside a task's folder)");
      }
      ctx.emit({{"task", fmt::format("{}/{}/{}/{}", c->gpu, c->dsl, c->shape_key, c->model)},
                {"gpu", c->gpu}, {"dsl", c->dsl}, {"shape_key", c->shape_key}, {"model", c->model},
                {"origin", c->origin}});
      return ExitCode::ok;
    }
    TaskRef t = resolve_task(ctx, o->task);
    json doc = {{"gpu", t.gpu}, {"dsl", t.dsl}, {"shape_key", t.shape.text}, {"model", t.model},
                {"chosen_at", now_iso8601()}};
    ensure_dir(file.parent_path());
    atomic_write(file, dump_pretty(doc) + "\n");
    doc["ok"] = true;
    doc["task"] = t.id();
    doc["file"] = ws.display(file);
    ctx.emit(doc);
    ctx.note("croq use: " + t.id() + " -- --dsl, --shape-key and --model may now be left out");
    return ExitCode::ok;
  };
}

VerbRunner setup_status(CLI::App& app) {
  struct Opts {
    std::string dsl;
    bool as_json = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--dsl", o->dsl, "only the tasks of this dsl");
  app.add_flag("--json", o->as_json, "JSON even on a terminal");
  return [o](Context& ctx) {
    Workspace& ws = ctx.ws();
    json tasks = json::array();
    for (const auto& t : ws.list_tasks({}, o->dsl)) {
      json row = {{"task", t.id()}, {"gpu", t.gpu}, {"dsl", t.dsl}, {"shape_key", t.shape.text}, {"model", t.model}};
      try {
        LedgerIndex idx = Ledger(ws, t).index();
        row["best"] = idx.best ? idx.best->to_json() : json(nullptr);
        row["baseline"] = idx.baseline ? idx.baseline->to_json() : json(nullptr);
        const double best = idx.best && idx.best->tflops ? *idx.best->tflops : 0;
        const double base = idx.baseline && idx.baseline->tflops ? *idx.baseline->tflops : 0;
        row["ratio"] = best > 0 && base > 0 ? json(std::round(best / base * 1000) / 1000) : json(nullptr);
        row["rounds"] = idx.max_round;
        if (!idx.warnings.empty()) row["warnings"] = idx.warnings;  // an edited record among them
        TaskState s = derive_state(ws, t);
        row["step"] = step_name(s.step);
        row["next_action"] = s.next_action;
      } catch (const Error& e) {
        row["error"] = e.what();
      }
      tasks.push_back(row);
    }
    if (o->as_json || !::isatty(STDOUT_FILENO) || &ctx.out != &std::cout) {
      ctx.emit({{"root", ws.root().string()}, {"tasks", tasks}});
      return ExitCode::ok;
    }
    // A person at a terminal: a table.
    std::vector<std::vector<std::string>> rows = {{"TASK", "BEST", "BASELINE", "RATIO", "ROUNDS", "STEP"}};
    for (const auto& r : tasks) {
      // A figure typed by hand (an advisory task's store-round --tflops) or not matched to croq's
      // build is shown as such, not as a measurement.
      auto rate = [](const json& b) {
        if (!b.is_object() || !b.contains("tflops") || !b["tflops"].is_number()) return std::string("-");
        const std::string source = b.value("source", "");
        const std::string shown = format_rate(b["tflops"].get<double>());
        return source == "measured" || source.empty() ? shown : shown + " (" + source + ")";
      };
      rows.push_back({fmt::format("{}/{} {} {}", r.value("gpu", ""), r.value("dsl", ""), r.value("shape_key", ""), r.value("model", "")),
                      rate(r.value("best", json())), rate(r.value("baseline", json())),
                      r.contains("ratio") && r["ratio"].is_number() ? fmt::format("{:.2f}x", r["ratio"].get<double>()) : "-",
                      r.contains("rounds") ? std::to_string(r["rounds"].get<int>()) : "-", r.value("step", r.value("error", ""))});
    }
    ctx.out << format_table(rows);
    for (const auto& r : tasks) {
      for (const auto& w : r.value("warnings", json::array())) {
        ctx.out << "warning: " << r.value("task", "") << ": " << w.get<std::string>() << "\n";
      }
    }
    if (tasks.empty()) ctx.out << "(no tasks under " << ws.tuning_dir().string() << ")\n";
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
