// croq serve and croq report in croq-web (web_verbs.hpp): serve is web::run_serve
// (croq/web/serve.hpp: the monitor, --check, --once); report writes the static HTML + SVG + CSV
// report (web/report.hpp, web/sweep_report.hpp).
#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "cli/web_verbs.hpp"
#include "croq/util/fs.hpp"
#include "croq/web/report.hpp"
#include "croq/web/serve.hpp"
#include "croq/web/sweep_report.hpp"

namespace croq::cli {

ExitCode run_serve(Context& ctx, const ServeOptions& o) {
  web::ServeOptions w = o;
  for (const auto& v : verbs()) w.verbs.insert(v.name);
  StepDeps deps = step_deps(ctx);
  deps.note = [&ctx](const std::string& line) {
    ctx.note(line);
    ctx.err.flush();
  };
  return web::run_serve(ctx.ws(), w, [&ctx](const json& doc) {
    ctx.emit(doc);
    ctx.out.flush();
  }, deps);
}

ExitCode run_report(Context& ctx, const ReportVerbOptions& opts) {
  const ReportVerbOptions* o = &opts;
    if (o->sweep) {
      if (!o->tasks.empty() || o->all) throw_usage("--sweep reports the whole sweep: leave --task and --all out");
      web::SweepReportResult r = web::write_sweep_report(ctx.ws(), fs::absolute(o->out));
      ctx.emit(json{{"ok", true}, {"out", r.out.string()}, {"files", r.files}, {"shapes", r.rows}});
      ctx.note(fmt::format("croq report --sweep: {} shapes, {} files in {} (open index.html)", r.rows.size(),
                           r.files.size(), r.out.string()));
      return ExitCode::ok;
    }
    web::ReportOptions ro;
    ro.selectors = o->tasks;
    ro.all = o->all;
    ro.out = fs::absolute(o->out);
    ro.bottleneck_window = o->window;
    web::ReportResult r = web::write_report(ctx.ws(), ro);
    json doc = {{"ok", true}, {"out", r.out.string()}, {"tasks", r.summary.size()}, {"files", r.files},
                {"summary", r.summary}, {"problems", r.problems}};
    ctx.emit(doc);
    for (const auto& p : r.problems) ctx.note("croq report: cannot read " + p);
    ctx.note(fmt::format("croq report: {} tasks, {} files in {} (open index.html)", r.summary.size(), r.files.size(),
                         r.out.string()));
    return ExitCode::ok;
}

}  // namespace croq::cli
