// croq sweep run | status | stop: parses the options and prints; the sweep itself is
// src/croq/sweep (sweep.hpp).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/sweep/sweep.hpp"
#include "croq/util/paths.hpp"

namespace croq::cli {

namespace {

std::atomic<bool> g_stop{false};

std::vector<std::string> split_list_on_spaces(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == ' ' || c == '\t') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}
extern "C" void on_sweep_run_signal(int) { g_stop = true; }

struct RunOpts {
  std::string manifest = "typical", op, dtypes, mode = "from_scratch", driver = "search", command;
  sweep::SweepOptions s;
};

}  // namespace

VerbRunner setup_sweep_run(CLI::App& app) {
  auto o = std::make_shared<RunOpts>();
  app.add_option("--manifest", o->manifest,
                 "typical (built in: the 14 typical shapes of each dtype), a croq manifest (JSON or TOML), or the "
                 "from-scratch skill's kernels/manifest.json")
      ->default_val("typical");
  app.add_option("--op", o->op, "operator of a built-in manifest: gemm_sp (default) or matmul");
  app.add_option("--dtype", o->dtypes, "dtype(s), comma-separated, or all (default: the manifest's, else gemm_sp f16,e4m3 "
                                       "and matmul f16fp32)");
  app.add_option("--dsl", o->s.dsl, "cuda | croqtile | cpp (croq's search) or any dsl (--driver agent)")->required();
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
  app.add_option("--gpus", o->s.gpus, "devices to use: all, or a list of indexes/UUIDs such as 0,2")->default_val("all");
  app.add_option("--family", o->s.family, "kernel family of croq's search (default: the first that fits)");
  app.add_option("--seed", o->s.seed, "seed of croq's search (0: fresh)")->default_val(0);
  app.add_option("--explore", o->s.explore, "croq tune --explore")->default_val(0.15)->check(CLI::Range(0.0, 1.0));
  app.add_option("--profile-preset", o->s.profile_preset, "croq tune --profile-preset: full or quick")
      ->default_val("full")->check(CLI::IsMember({"full", "quick"}));
  app.add_option("--step-timeout", o->s.step_timeout_s, "croq tune --step-timeout")->default_val(900);
  app.add_option("--max-restarts", o->s.max_restarts, "times a driver that dies without progress is restarted before its "
                                                      "shape is marked failed")
      ->default_val(3)->check(CLI::Range(0, 1000));
  return [o](Context& ctx) {
    validate_dsl(o->s.dsl);
    auto mode = sweep::parse_mode(o->mode);
    if (!mode) throw_usage(fmt::format("--mode {} is neither from_scratch nor from_current_best", o->mode));
    o->s.mode = *mode;
    o->s.driver = o->driver;
    if (o->driver == "command") {
      o->s.command = split_list_on_spaces(o->command);
      if (o->s.command.empty()) throw_usage("--driver command needs --command", "e.g. --command \"my-driver {key} {device}\"");
    }
    if (o->driver == "agent" && o->s.model == "croq-search") {
      throw_usage("--driver agent: name the agent's model with --model (e.g. opus-4-fs)",
                  "croq-search is the model name of croq's own search");
    }
    std::vector<std::string> dtypes = split_list(o->dtypes);
    sweep::Manifest manifest = o->manifest == "typical" || (o->manifest.find('/') == std::string::npos &&
                                                           o->manifest.find('.') == std::string::npos)
                                   ? sweep::builtin_manifest(o->manifest, o->op, dtypes)
                                   : sweep::load_manifest(o->manifest, o->op, dtypes);
    o->s.gpu_key = resolve_device_key(o->s.gpu_key, o->s.dsl);
    for (const auto& s : manifest.shapes) (void)make_task(o->s.gpu_key, o->s.dsl, sweep::shape_key_for(s, *mode), o->s.model);
    o->s.root = ctx.ws().root();
    o->s.croq_exe = self_exe_dir() / "croq";
    auto devices = sweep::device_source_for(o->s.dsl);
    g_stop = false;
    struct sigaction sa{}, old_int{}, old_term{};
    sa.sa_handler = on_sweep_run_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int);
    ::sigaction(SIGTERM, &sa, &old_term);
    json summary;
    try {
      summary = sweep::run_sweep(o->s, manifest, *devices, g_stop, [&](const std::string& line) { ctx.note(line); });
    } catch (...) {
      ::sigaction(SIGINT, &old_int, nullptr);
      ::sigaction(SIGTERM, &old_term, nullptr);
      throw;
    }
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ctx.emit(summary);
    if (summary.value("stopped", false)) {
      ctx.note("croq sweep: stopped; `croq sweep run` with the same options resumes where it stopped");
      return ExitCode::ok;
    }
    if (summary.contains("error")) {
      throw Error(ExitCode::no_device, summary["error"].get<std::string>(),
                  "the unhealthy devices are in the output; fix them (croq never resets a GPU) and run again to resume");
    }
    return summary.value("failed", 0) > 0 ? ExitCode::failure : ExitCode::ok;
  };
}

VerbRunner setup_sweep_status(CLI::App&) {
  return [](Context& ctx) {
    json st = sweep::sweep_status(ctx.ws().root());
    if (!ctx.quiet) {
      ctx.note(fmt::format("{:<34} {:<12} {:>9} {:>10} {:>10} {:>7}", "shape", "status", "rounds", "baseline", "best", "ratio"));
      for (const auto& r : st["shapes"]) {
        auto num = [](const json& v) { return v.is_number() ? fmt::format("{:.2f}", v.get<double>()) : std::string("-"); };
        std::string ratio = r["best_tflops"].is_number() && r["baseline_tflops"].is_number() &&
                                    r["baseline_tflops"].get<double>() > 0
                                ? fmt::format("{:.3f}", r["best_tflops"].get<double>() / r["baseline_tflops"].get<double>())
                                : "-";
        std::string rounds = fmt::format("{}/{}", r.value("current_iter", 0),
                                         r["target_rounds"].is_number() ? std::to_string(r["target_rounds"].get<int>()) : "?");
        ctx.note(fmt::format("{:<34} {:<12} {:>9} {:>10} {:>10} {:>7}", r.value("key", ""), r.value("status", ""), rounds,
                             num(r["baseline_tflops"]), num(r["best_tflops"]), ratio));
      }
      ctx.note(st.value("running", false) ? fmt::format("a sweep runs now (pid {})", st.value("pid", 0))
                                          : std::string("no sweep runs now"));
    }
    ctx.emit(st);
    return ExitCode::ok;
  };
}

VerbRunner setup_sweep_stop(CLI::App& app) {
  auto wait = std::make_shared<bool>(false);
  auto timeout = std::make_shared<double>(60);
  app.add_flag("--wait", *wait, "wait until the sweep has stopped its drivers and ended");
  app.add_option("--timeout", *timeout, "seconds --wait waits")->default_val(60)->check(CLI::Range(0.0, 86400.0));
  return [wait, timeout](Context& ctx) {
    json r = sweep::stop_sweep(ctx.ws().root(), *wait, std::chrono::milliseconds(static_cast<long long>(*timeout * 1000)));
    if (!r.value("was_running", false)) ctx.note("croq sweep stop: no sweep runs on this workspace");
    ctx.emit(r);
    if (*wait && r.value("was_running", false) && !r.value("stopped", false)) {
      throw Error(ExitCode::busy, "the sweep has not ended yet", "it stops its drivers within seconds; check `croq sweep status`");
    }
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
