// croq sweep run | submit | task | status | stop: parses the options and prints; the sweep itself
// is src/croq/sweep (sweep.hpp; slurm_sweep.hpp for Slurm).
#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/verbs.hpp"
#include "croq/search/family.hpp"
#include "croq/sweep/request.hpp"
#include "croq/sweep/slurm_sweep.hpp"
#include "croq/sweep/sweep.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/text.hpp"

namespace croq::cli {

namespace {

std::atomic<bool> g_stop{false};

struct RunOpts : sweep::SweepRequest {
  std::string dtypes_text;  // --dtype, comma-separated
};

// The options `croq sweep run` and `croq sweep submit` share: the manifest, the tasks and the driver.
void add_sweep_options(CLI::App& app, RunOpts& o_, bool local) {
  RunOpts* o = &o_;
  app.add_option("--manifest", o->manifest,
                 "typical (built in: the 14 typical shapes of each dtype), a croq manifest (JSON or TOML), or the "
                 "from-scratch skill's kernels/manifest.json")
      ->default_val("typical");
  app.add_option("--op", o->op, "operator of a built-in manifest: gemm_sp (default) or matmul");
  app.add_option("--dtype", o->dtypes_text, "dtype(s), comma-separated, or all (default: the manifest's, else gemm_sp f16,e4m3 "
                                       "and matmul f16fp32)");
  app.add_option("--dsl", o->s.dsl,
                 fmt::format("{} (croq's search) or any dsl (--driver agent)", fmt::join(family_dsls(), " | ")))
      ->required();
  app.add_option("--gpu", o->s.gpu_key, "device key of the tasks (default: CROQ_GPU, else detected; cpu_<arch> for dsl cpp)");
  app.add_option("--model", o->s.model, "model name the rounds are stored under")->default_val("croq-search");
  app.add_option("--mode", o->mode, "from_scratch (the skill's `_fs` keys; the simplest kernel) or from_current_best (the "
                                    "best kernel of the nearest tuned shape)")
      ->default_val("from_scratch");
  app.add_option("--rounds", o->s.rounds, "each shape's round budget: a shape is done at this many stored rounds")
      ->default_val(150)->check(CLI::Range(1, 100000));
  app.add_option("--driver", o->driver, "search (croq tune), agent (croq agent run) or command (--command)")
      ->default_val("search")->check(CLI::IsMember({"search", "agent", "command"}));
  app.add_option("--agent", o->s.agent, "agent of --driver agent (claude, cursor, opencode, codex or your own)");
  app.add_option("--agent-config", o->s.agent_config, "agents config of --driver agent");
  app.add_option("--command", o->command,
                 "driver command of --driver command, split on spaces, with {croq} {root} {key} {device} {visible} {gpu} "
                 "{dsl} {model} {rounds} {target} expanded (no shell)");
  if (local) {
    app.add_option("--gpus", o->s.gpus, "devices to use: all, or a list of indexes/UUIDs such as 0,2")->default_val("all");
    app.add_option_function<std::string>(
           "--workers-per-device",
           [o](const std::string& v) { o->s.workers_per_device = v == "auto" ? 0 : std::stoi(v); },
           "shapes tuned at once on each device: their builds overlap on the CPU while the device's lease keeps "
           "measurements one at a time. auto: for croq's search on GPUs one per 4 cores shared among the devices "
           "(1-4), else 1; or a number 1-64")
        ->default_str("auto")
        ->check(CLI::IsMember({"auto"}) | CLI::Range(1, 64));
  }
  app.add_option("--family", o->s.family, "kernel family of croq's search (default: the first that fits)");
  app.add_option("--seed", o->s.seed, "seed of croq's search (0: fresh)")->default_val(0);
  app.add_option("--explore", o->s.explore, "croq tune --explore")->default_val(0.15)->check(CLI::Range(0.0, 1.0));
  app.add_option("--profile-preset", o->s.profile_preset, "croq tune --profile-preset: full or quick")
      ->default_val("full")->check(CLI::IsMember({"full", "quick"}));
  app.add_option("--step-timeout", o->s.step_timeout_s, "croq tune --step-timeout")->default_val(900);
  app.add_option("--max-restarts", o->s.max_restarts, "times a driver that dies without progress is restarted before its "
                                                      "shape is marked failed")
      ->default_val(3)->check(CLI::Range(0, 1000));
}

// Checks the options and reads the manifest (every shape's task name checked); nothing is written.
sweep::Manifest resolve_sweep_options(Context& ctx, RunOpts& o) {
  o.dtypes = split_list(o.dtypes_text);
  return sweep::resolve_sweep_request(o, ctx.ws().root(), self_exe_dir() / "croq");
}

ExitCode finish_sweep(Context& ctx, const json& summary, const std::string& again) {
  ctx.emit(summary);
  if (summary.value("stopped", false)) {
    ctx.note("croq sweep: stopped; " + again + " resumes where it stopped");
    return ExitCode::ok;
  }
  if (summary.contains("error")) {
    throw Error(ExitCode::no_device, summary["error"].get<std::string>(),
                "the unhealthy devices are in the output; fix them (croq never resets a GPU) and run again to resume");
  }
  return summary.value("failed", 0) > 0 ? ExitCode::failure : ExitCode::ok;
}

}  // namespace

VerbRunner setup_sweep_run(CLI::App& app) {
  auto o = std::make_shared<RunOpts>();
  add_sweep_options(app, *o, true);
  return [o](Context& ctx) {
    sweep::Manifest manifest = resolve_sweep_options(ctx, *o);
    auto devices = sweep::device_source_for(o->s.dsl);
    json summary = sweep::with_stop_signals(g_stop,
        [&] { return sweep::run_sweep(o->s, manifest, *devices, g_stop, [&](const std::string& line) { ctx.note(line); }); });
    return finish_sweep(ctx, summary, "`croq sweep run` with the same options");
  };
}

VerbRunner setup_sweep_submit(CLI::App& app) {
  auto o = std::make_shared<RunOpts>();
  auto so = std::make_shared<sweep::SlurmOptions>();
  auto slurm = std::make_shared<bool>(false);
  app.add_flag("--slurm", *slurm, "submit to Slurm: a job array, one task per shape (the only scheduler croq knows)")
      ->required();
  add_sweep_options(app, *o, false);
  app.add_option("--partition", so->partition, "sbatch --partition (default: the cluster's)");
  app.add_option("--account", so->account, "sbatch --account");
  app.add_option("--time", so->time_limit, "sbatch --time, each task's limit (e.g. 2-00:00:00); a task stopped by it "
                                           "resumes on the next submission");
  app.add_option("--gres", so->gres, "sbatch --gres of each task, or none")->default_val("gpu:1");
  app.add_option("--cpus-per-task", so->cpus_per_task, "sbatch --cpus-per-task (0: the cluster's default)")
      ->default_val(0)->check(CLI::Range(0, 4096));
  app.add_option("--max-parallel", so->max_parallel, "at most this many tasks at once (--array=0-N%M; 0: no limit)")
      ->default_val(0)->check(CLI::Range(0, 100000));
  app.add_option("--job-name", so->job_name, "sbatch --job-name")->default_val("croq-sweep");
  app.add_option("--sbatch-arg", so->sbatch_args, "one more sbatch option, passed through as an #SBATCH line "
                                                  "(repeat it: --sbatch-arg=--constraint=h200 --sbatch-arg=--qos=long)");
  app.add_flag("--dry-run", so->dry_run, "write the job script and the submission, submit nothing");
  return [o, so, slurm](Context& ctx) {
    (void)*slurm;  // required: the flag names the scheduler
    sweep::Manifest manifest = resolve_sweep_options(ctx, *o);
    sweep::CommandSlurm client;
    json out = sweep::submit_slurm_sweep(o->s, manifest, *so, client, [&](const std::string& line) { ctx.note(line); });
    ctx.emit(out);
    return ExitCode::ok;
  };
}

VerbRunner setup_sweep_task(CLI::App& app) {
  auto submission = std::make_shared<std::string>();
  auto index = std::make_shared<int>(-1);
  app.add_option("--submission", *submission, "the submission.json `croq sweep submit --slurm` wrote")->required();
  app.add_option("--index", *index, "the array index (default: SLURM_ARRAY_TASK_ID)");
  return [submission, index](Context& ctx) {
    int i = *index;
    if (i < 0) {
      const char* env = std::getenv("SLURM_ARRAY_TASK_ID");
      if (!env || !*env) throw_usage("no --index and no SLURM_ARRAY_TASK_ID", "the job script passes --index");
      try {
        i = std::stoi(env);
      } catch (const std::exception&) {
        throw_usage(fmt::format("SLURM_ARRAY_TASK_ID '{}' is not a number", env));
      }
    }
    const std::filesystem::path root = ctx.ws().root();
    json summary = sweep::with_stop_signals(g_stop, [&] {
      return sweep::run_slurm_task(root, input_path(ctx, *submission), i, self_exe_dir() / "croq", g_stop,
                                   [&](const std::string& line) { ctx.note(line); });
    });
    return finish_sweep(ctx, summary, "`croq sweep submit --slurm` with the same options");
  };
}

VerbRunner setup_sweep_status(CLI::App&) {
  return [](Context& ctx) {
    const std::filesystem::path root = ctx.ws().root();
    json st = sweep::sweep_status(root);
    sweep::CommandSlurm client;
    sweep::add_slurm_status(st, root, client);
    const bool slurm = st.contains("slurm");
    if (!ctx.quiet) {
      // A terminal gets the table as the verb's text (render_text); a pipe gets the JSON, and the
      // table on stderr for a person watching.
      if (!ctx.text) {
        for (const auto& line : split_lines(sweep_table(st["shapes"]))) ctx.note(line);
      }
      for (const auto& r : st["shapes"]) {
        if (!slurm || !r.contains("slurm")) continue;
        const json& t = r["slurm"];
        ctx.note(fmt::format("slurm: {} is task {}_{} {}{}", r.value("key", ""), st["slurm"].value("job_id", ""),
                             t.value("index", -1), t.value("state", ""), t.contains("node") ? " on " + t.value("node", "") : ""));
      }
      if (!ctx.text) {
        ctx.note(st.value("running", false) ? fmt::format("a sweep runs now (pid {})", st.value("pid", 0))
                                            : std::string("no local sweep runs now"));
      }
      if (slurm) {
        const json& j = st["slurm"];
        std::string counts;
        for (auto it = j["counts"].begin(); it != j["counts"].end(); ++it) {
          counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", it.value().get<int>(), it.key());
        }
        ctx.note(fmt::format("Slurm job {}: {} task(s) queued or running ({})", j.value("job_id", ""), j.value("live", 0),
                             counts.empty() ? "no task seen" : counts));
        for (const auto& n : j["notes"]) ctx.note("  slurm: " + n.get<std::string>());
      }
    }
    ctx.emit(st);
    return ExitCode::ok;
  };
}

VerbRunner setup_sweep_stop(CLI::App& app) {
  auto wait = std::make_shared<bool>(false);
  auto timeout = std::make_shared<double>(60);
  app.add_flag("--wait", *wait, "wait until the sweep has stopped its drivers and ended (the Slurm job's tasks too)");
  app.add_option("--timeout", *timeout, "seconds --wait waits")->default_val(60)->check(CLI::Range(0.0, 86400.0));
  return [wait, timeout](Context& ctx) {
    const std::filesystem::path root = ctx.ws().root();
    const auto limit = std::chrono::milliseconds(static_cast<long long>(*timeout * 1000));
    json r = sweep::stop_sweep(root, *wait, limit);
    sweep::CommandSlurm client;
    json slurm = sweep::stop_slurm_sweep(root, client, *wait, limit);
    if (!slurm.is_null()) r["slurm"] = slurm;
    const bool slurm_live = !slurm.is_null() && slurm.value("was_live", false);
    if (!r.value("was_running", false) && !slurm_live) ctx.note("croq sweep stop: no sweep runs on this workspace");
    if (slurm_live) {
      ctx.note(fmt::format("croq sweep stop: Slurm job {} cancelled ({} task(s) were queued or running){}",
                           slurm.value("job_id", ""), slurm.value("live_tasks", 0),
                           *wait ? (slurm.value("stopped", false) ? "; every task has ended" : "") : ""));
    }
    ctx.emit(r);
    if (*wait && r.value("was_running", false) && !r.value("stopped", false)) {
      throw Error(ExitCode::busy, "the sweep has not ended yet", "it stops its drivers within seconds; check `croq sweep status`");
    }
    if (*wait && slurm_live && !slurm.value("stopped", false)) {
      throw Error(ExitCode::busy, fmt::format("Slurm job {} still has tasks after --timeout", slurm.value("job_id", "")),
                  "Slurm ends them within its KillWait; check `croq sweep status`");
    }
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
