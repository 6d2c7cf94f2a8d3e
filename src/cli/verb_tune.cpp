// croq tune: the main job — croq's own search drives the protocol for one or more shapes.
#include <unistd.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/search/tune.hpp"
#include "croq/util/paths.hpp"

namespace croq::cli {

VerbRunner setup_tune(CLI::App& app) {
  struct Opts {
    std::vector<std::string> shape_keys;
    std::string dsl, model = "croq-search", gpu, family, task_uid;
    int rounds = 50;
    uint64_t seed = 0;
    double explore = 0.15;
    bool git_commit = false;
    int step_timeout_s = 900;
    std::string profile_preset = "full";
  };
  auto o = std::make_shared<Opts>();
  app.add_option("shape_key", o->shape_keys, "shape key(s), e.g. matmul_f32_512x512x512; several run as a sweep")->required();
  app.add_option("--dsl", o->dsl, "cuda | cpp (the dsls croq's search has kernel families for)")->required();
  app.add_option("--rounds", o->rounds, "rounds to complete (per shape)")->default_val(50)->check(CLI::Range(1, 100000));
  app.add_option("--model", o->model, "the model name the rounds are stored under")->default_val("croq-search");
  app.add_option("--seed", o->seed, "random seed of the search (0: a fresh one, recorded in tune.json)")->default_val(0);
  app.add_option("--family", o->family, "kernel family (default: the first that supports the problem)");
  app.add_option("--gpu", o->gpu, "device key (default: CROQ_GPU, else detected; cpu_<arch> for dsl cpp)");
  app.add_option("--task-uid", o->task_uid, "the monitor's task id (new if omitted)");
  app.add_option("--explore", o->explore, "probability of a random legal move instead of the best-ranked one")
      ->default_val(0.15)->check(CLI::Range(0.0, 1.0));
  app.add_flag("--git-commit", o->git_commit, "commit each KEEP locally with the seeds' message format");
  app.add_option("--step-timeout", o->step_timeout_s, "seconds a single step may take")->default_val(900);
  app.add_option("--profile-preset", o->profile_preset,
                 "Nsight Compute preset of each round's profile: full (every section) or quick (the sections the "
                 "classifier reads; much faster)")
      ->default_val("full")->check(CLI::IsMember({"full", "quick"}));
  return [o](Context& ctx) {
    validate_dsl(o->dsl);
    std::string gpu = resolve_device_key(o->gpu, o->dsl);
    auto exe = self_exe_dir() / "croq";
    SelfExecClient client(exe, ctx.ws().root());
    const bool tty = ::isatty(2) && !ctx.quiet;
    json summaries = json::array();
    for (size_t i = 0; i < o->shape_keys.size(); ++i) {
      TaskRef t = make_task(gpu, o->dsl, o->shape_keys[i], o->model);
      ctx.task = t;
      TuneOptions opt;
      opt.shape_key = o->shape_keys[i];
      opt.dsl = o->dsl;
      opt.model = o->model;
      opt.gpu = gpu;
      opt.family = o->family;
      opt.task_uid = o->shape_keys.size() == 1 ? o->task_uid : "";
      opt.rounds = o->rounds;
      opt.seed = o->seed;
      opt.explore = o->explore;
      opt.git_commit = o->git_commit;
      opt.step_timeout = std::chrono::seconds(o->step_timeout_s);
      opt.profile_preset = o->profile_preset;
      auto progress = [&, tty](const json& e) {
        if (ctx.quiet) return;
        if (!tty) {
          ctx.err << dump_compact(e) << "\n";
          return;
        }
        std::string ev = e.value("event", "");
        if (ev == "round") {
          std::string best = e["best"].is_number() ? fmt::format("{:.2f}", e["best"].get<double>()) : "-";
          std::string pct = e.contains("pct_of_baseline") ? fmt::format(" ({:.1f}% of baseline)", e["pct_of_baseline"].get<double>()) : "";
          std::string tf = e["tflops"].is_number() ? fmt::format("{:.2f}", e["tflops"].get<double>()) : "-";
          ctx.err << fmt::format("\r\033[K[{} round {}/{}] best {} TFLOPS{} | last {} {} {} TFLOPS {}", t.shape.text,
                                 e.value("round", 0), o->rounds, best, pct, e.value("kernel", ""), e.value("decision", ""), tf,
                                 e.value("bottleneck", ""))
                  << std::flush;
        } else if (ev == "done") {
          ctx.err << "\n";
        } else {
          ctx.err << fmt::format("\r\033[K[{}] {}", t.shape.text, ev) << std::flush;
        }
      };
      if (o->shape_keys.size() > 1) ctx.note(fmt::format("NEXT_SHAPE {} ({} of {})", t.shape.text, i + 1, o->shape_keys.size()));
      Tuner tuner(client, ctx.ws(), t, opt, progress);
      summaries.push_back(tuner.run());
      if (o->shape_keys.size() > 1) ctx.note(fmt::format("SHAPE_COMPLETE {}", t.shape.text));
    }
    ctx.emit(summaries.size() == 1 ? summaries[0] : json{{"shapes", summaries}});
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
