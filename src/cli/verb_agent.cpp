// croq init (skills and the seeds' tool shims for coding agents) and croq agent run (a supervised
// agent session on one task). The work is in src/croq/agent; this file parses and reports.
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/agent/install.hpp"
#include "croq/agent/prompt.hpp"
#include "croq/agent/supervisor.hpp"
#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/time.hpp"

namespace croq::cli {

namespace {

std::string croq_self() { return (self_exe_dir() / "croq").string(); }

fs::path init_root(Context& ctx) {
  // init may create a workspace: the root is --root, CROQ_ROOT, a discovered one, else the
  // current folder (the one place croq takes the current folder: the user is asking for it).
  if (!ctx.root_flag.empty()) return fs::absolute(ctx.root_flag);
  if (const char* env = std::getenv("CROQ_ROOT"); env && *env) return fs::absolute(env);
  try {
    return ctx.ws().root();
  } catch (const Error&) {
    return fs::current_path();
  }
}

}  // namespace

VerbRunner setup_init(CLI::App& app) {
  struct Opts {
    std::vector<std::string> agents;
    bool compat = false, force = false, dry_run = false;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--agent", o->agents, "claude | cursor | opencode | codex (repeatable or comma-separated; default claude)")
      ->delimiter(',');
  app.add_flag("--compat", o->compat, "also install the original croq-tune skill's tools as shims: .claude/skills/croq-tune/tools/*.sh, fsm-engine");
  app.add_flag("--force", o->force, "overwrite croq's files even where they were edited");
  app.add_flag("--dry-run", o->dry_run, "show what would change; write nothing");
  return [o](Context& ctx) {
    fs::path root = init_root(ctx);
    if (!fs::is_directory(root)) throw_not_found(fmt::format("{} is not a folder", root.string()));
    agent::InitOptions io;
    io.agents = o->agents;
    io.compat = o->compat;
    io.force = o->force;
    io.dry_run = o->dry_run;
    io.croq_exe = croq_self();
    agent::InitResult r = agent::install(root, io);
    json doc = r.to_json(root);
    // The agents config is the user's once written: created when absent, never overwritten.
    fs::path cfg = agent::agents_config_path(root);
    if (!fs::exists(cfg) && !o->dry_run) {
      ensure_dir(cfg.parent_path());
      atomic_write(cfg, agent::default_agents_config().dump(2) + "\n");
      doc["agents_config"] = {{"path", cfg.string()}, {"action", "created"}};
    } else {
      doc["agents_config"] = {{"path", cfg.string()}, {"action", fs::exists(cfg) ? "kept" : "would_create"}};
    }
    doc["dry_run"] = o->dry_run;
    doc["skills"] = agent::skill_names();
    const auto& c = doc["counts"];
    ctx.note(fmt::format("croq init: {} created, {} updated, {} unchanged, {} kept (edited by you), {} removed",
                         c["created"].get<int>(), c["updated"].get<int>(), c["unchanged"].get<int>(),
                         c["kept_modified"].get<int>() + c["kept_obsolete"].get<int>(), c["removed"].get<int>()));
    for (const auto& k : doc["kept_user_files"]) {
      ctx.note("  kept (edited since croq wrote it): " + k.get<std::string>() + " — `croq init --force` replaces it");
    }
    ctx.emit(doc);
    return ExitCode::ok;
  };
}

VerbRunner setup_agent_run(CLI::App& app) {
  struct Opts {
    std::string positional_key;
    TaskOptions task;
    std::string agent, config, task_uid;
    int rounds = 0, max_sessions = 10, rate_limit_waits = 3;
    double stall_s = 1800, poll_s = 2, rate_limit_wait_s = 300;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("shape_key", o->positional_key, "the task's shape key (or --shape-key)");
  app.add_option("--gpu", o->task.gpu, "device key (default: CROQ_GPU, else detected; cpu_<arch> for dsl cpp)");
  app.add_option("--dsl", o->task.dsl, "cuda | croqtile | triton | cpp")->required();
  app.add_option("--shape-key", o->task.shape_key, "<operator>_<dtype>_<M>x<N>x<K>, used exactly as given");
  app.add_option("--model", o->task.model, "model (driver) name, e.g. opus-4")->required();
  app.add_option("--agent", o->agent, "agent in the config (claude, cursor, opencode, codex or your own; default: the config's)");
  app.add_option("--config", o->config, "agents config (default: <root>/.croq/agents.json, else built-in defaults)");
  app.add_option("--task-uid", o->task_uid, "the task's uid (default: CROQ_TASK_UID, else task_config.json's)");
  app.add_option("--rounds", o->rounds, "round budget: starts the protocol with it when the task has none "
                                        "(default: CROQ_BUDGET_ROUNDS, else 50)")->check(CLI::Range(0, 100000));
  app.add_option("--max-sessions", o->max_sessions, "sessions to start (first + resumes) before giving up")
      ->default_val(10)->check(CLI::Range(1, 10000));
  app.add_option("--stall-seconds", o->stall_s, "stop a session after this long without progress in the task's files")
      ->default_val(1800)->check(CLI::Range(0.01, 7 * 86400.0));
  app.add_option("--poll-seconds", o->poll_s, "how often progress is checked")->default_val(2)->check(CLI::Range(0.01, 3600.0));
  app.add_option("--rate-limit-wait", o->rate_limit_wait_s, "seconds to wait after a rate limit (doubles each time)")
      ->default_val(300)->check(CLI::Range(0.0, 86400.0));
  app.add_option("--rate-limit-retries", o->rate_limit_waits, "waits before giving up with exit 75")
      ->default_val(3)->check(CLI::Range(0, 100));
  return [o](Context& ctx) {
    TaskOptions t_opts = o->task;
    if (t_opts.shape_key.empty()) t_opts.shape_key = o->positional_key;
    if (t_opts.shape_key.empty()) throw_usage("name the task's shape key", "croq agent run <shape_key> --dsl ... --model ...");
    if (!o->positional_key.empty() && o->positional_key != t_opts.shape_key) {
      throw_usage(fmt::format("two shape keys given: {} and {}", o->positional_key, t_opts.shape_key));
    }
    TaskRef t = resolve_task(ctx, t_opts);
    Workspace& ws = ctx.ws();
    agent::AgentSpec spec = agent::load_agent(ws.root(), o->agent, o->config);

    std::string uid = o->task_uid;
    if (uid.empty()) {
      if (const char* e = std::getenv("CROQ_TASK_UID"); e && *e) uid = e;
    }
    if (uid.empty()) {
      if (auto cfg = read_file(ws.task_config(t))) {
        if (auto j = try_parse_json(*cfg); j && j->is_object()) uid = j->value("task_uid", "");
      }
    }
    // The protocol's budget: the stop condition the supervisor waits for.
    if (!read_protocol(ws, t)) {
      int rounds = o->rounds;
      if (rounds <= 0) {
        if (const char* e = std::getenv("CROQ_BUDGET_ROUNDS"); e && std::atoi(e) > 0) rounds = std::atoi(e);
      }
      ProtocolConfig cfg;
      cfg.target_rounds = rounds > 0 ? rounds : 50;
      Ledger ledger(ws, t);
      cfg.start_round = ledger.exists() ? ledger.index().max_round : 0;
      cfg.started_at = now_iso8601();
      ensure_dir(ws.kind_dir(t, ArtifactKind::logs));
      write_protocol(ws, t, cfg);
      ctx.note(fmt::format("agent run: protocol begun (enforced, {} rounds)", cfg.target_rounds));
    }

    agent::SupervisorOptions so;
    so.max_sessions = o->max_sessions;
    so.stall = std::chrono::milliseconds(static_cast<long long>(o->stall_s * 1000));
    so.poll = std::chrono::milliseconds(static_cast<long long>(o->poll_s * 1000));
    so.rate_limit_wait = std::chrono::milliseconds(static_cast<long long>(o->rate_limit_wait_s * 1000));
    so.max_rate_limit_waits = o->rate_limit_waits;
    so.croq_exe = croq_self();
    so.task_uid = uid;
    agent::SupervisorResult r = agent::supervise(ws, t, spec, so, [&](const std::string& line) { ctx.note(line); });
    ctx.emit(r.doc);
    return static_cast<ExitCode>(r.exit_code);
  };
}

}  // namespace croq::cli
