// croq resume, croq reinforce, croq session validate | clean.
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/agent/prompt.hpp"
#include "croq/session/maintenance.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/session/resume.hpp"

namespace croq::cli {

VerbRunner setup_resume(CLI::App& app) {
  auto o = std::make_shared<TaskOptions>();
  auto summary = std::make_shared<bool>(false);
  add_task_options(app, *o);
  app.add_flag("--summary", *summary, "add `summary`: where the task stands as text, the prompt that resumes an agent");
  return [o, summary](Context& ctx) {
    TaskRef t = resolve_task(ctx, *o);
    json doc = resume_state(ctx.ws(), t);
    if (*summary) {
      agent::ResumeSummary s = agent::resume_summary(ctx.ws(), t);
      doc["summary"] = s.text;
      doc["state"] = s.doc["state"];
      doc["stop_allowed"] = s.doc["stop_allowed"];
      doc["stop_reason"] = s.doc["stop_reason"];
      ctx.note(s.text);
    }
    ctx.emit(doc);
    return ExitCode::ok;
  };
}

VerbRunner setup_reinforce(CLI::App& app) {
  auto o = std::make_shared<TaskOptions>();
  add_task_options(app, *o);
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, *o);
    Reinforce r = reinforce(ctx.ws(), t);
    ctx.emit(r.doc);
    ctx.note(r.line);
    return ExitCode::ok;
  };
}

namespace {

struct SessionOpts {
  std::string gpu, dsl, shape_key, model;
  int lock_timeout_ms = 30000;
};

void add_session_options(CLI::App& app, SessionOpts& o) {
  app.add_option("--gpu", o.gpu, "device key (default: CROQ_GPU, else detected)");
  app.add_option("--dsl", o.dsl, "cuda | croqtile | triton | cpp")->required();
  app.add_option("--shape-key", o.shape_key, "only this shape key");
  app.add_option("--model", o.model, "only this model");
  app.add_option("--lock-timeout", o.lock_timeout_ms, "milliseconds to wait for each task's lock")->default_val(30000);
}

std::vector<TaskRef> select_tasks(Context& ctx, const SessionOpts& o, std::string& gpu) {
  validate_dsl(o.dsl);
  gpu = resolve_device_key(o.gpu, o.dsl);
  std::vector<TaskRef> out;
  for (auto& t : ctx.ws().list_tasks(gpu, o.dsl)) {
    if (!o.shape_key.empty() && t.shape.text != o.shape_key) continue;
    if (!o.model.empty() && t.model != o.model) continue;
    out.push_back(t);
  }
  if (out.size() == 1) ctx.task = out.front();
  else ctx.also_traced = out;
  return out;
}

}  // namespace

VerbRunner setup_session_validate(CLI::App& app) {
  auto o = std::make_shared<SessionOpts>();
  add_session_options(app, *o);
  return [o](Context& ctx) {
    std::string gpu;
    auto tasks = select_tasks(ctx, *o, gpu);
    json arr = json::array();
    bool pass = true;
    for (const auto& t : tasks) {
      TaskValidation v = validate_task(ctx.ws(), t);
      pass = pass && v.errors.empty();
      arr.push_back(v.to_json());
      for (const auto& e : v.errors) ctx.note(fmt::format("{}: error: {}", t.id(), e));
    }
    ctx.emit({{"pass", pass}, {"gpu", gpu}, {"dsl", o->dsl}, {"tasks", arr}});
    return pass ? ExitCode::ok : ExitCode::failure;
  };
}

VerbRunner setup_session_clean(CLI::App& app) {
  struct Opts {
    SessionOpts s;
    bool invalid_only = false, reset_all = false, yes = false;
  };
  auto o = std::make_shared<Opts>();
  add_session_options(app, o->s);
  app.add_flag("--invalid-only", o->invalid_only, "repair: drop unreadable records, rebuild views");
  app.add_flag("--reset-all", o->reset_all,
               "set the dsl's whole tree aside, every task of it (tuning/.trash/<time>/); not with --shape-key or --model");
  app.add_flag("--yes", o->yes, "confirm --reset-all");
  return [o](Context& ctx) {
    if (o->invalid_only == o->reset_all) throw_usage("give exactly one of --invalid-only or --reset-all");
    std::string gpu;
    if (o->reset_all) {
      validate_dsl(o->s.dsl);
      if (!o->s.shape_key.empty() || !o->s.model.empty()) {
        throw_usage("--reset-all sets the dsl's whole tree aside, every task of it; it takes no --shape-key or --model",
                    "to repair one task: croq session clean --invalid-only --dsl <dsl> --shape-key <key>; to set "
                    "every task of the dsl aside, leave --shape-key and --model out");
      }
      gpu = resolve_device_key(o->s.gpu, o->s.dsl);
      if (!o->yes) {
        throw_usage(fmt::format("--reset-all moves everything under {} aside; refused without --yes",
                                ctx.ws().display(ctx.ws().dsl_dir(gpu, o->s.dsl))),
                    "add --yes if that is what you want; the files go to tuning/.trash/, not away");
      }
      fs::path to = reset_dsl_tree(ctx.ws(), gpu, o->s.dsl);
      ctx.emit({{"actions", json::array({"moved to " + ctx.ws().display(to)})}, {"moved_to", to.string()}});
      return ExitCode::ok;
    }
    auto tasks = select_tasks(ctx, o->s, gpu);
    json actions = json::object();
    for (const auto& t : tasks) {
      auto acts = clean_task_invalid(ctx.ws(), t, std::chrono::milliseconds(o->s.lock_timeout_ms));
      actions[t.id()] = acts;
    }
    ctx.emit({{"actions", actions}});
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
