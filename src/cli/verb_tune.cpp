// croq tune: the main job — croq's own search drives the protocol for one or more shapes (the
// Tuner, search/tune.hpp). With --jobs N, N shapes are tuned at once, each by its own
// `croq tune <shape>` child process (tune_in_parallel, search/parallel_tune.hpp).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/verbs.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/search/family.hpp"
#include "croq/search/parallel_tune.hpp"
#include "croq/search/tune.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/workspace/operators.hpp"

namespace croq::cli {

namespace {

struct TuneOpts {
  std::vector<std::string> shape_keys;
  std::string dsl, model = "croq-search", gpu, family, task_uid;
  int rounds = 50;
  uint64_t seed = 0;
  double explore = 0.15;
  bool git_commit = false;
  int step_timeout_s = 900;
  std::string profile_preset = "full";
  int jobs = 1;
  std::string device;
  std::string start_params, start_from;
  bool list_space = false;
};

// --list-space: the family's legal configurations for each shape, as a brute-force autotune of the
// same space would measure them, without tuning anything.
json list_space(const TuneOpts& o, const std::string& gpu) {
  json shapes = json::array();
  for (const auto& key : o.shape_keys) {
    TaskRef t = make_task(gpu, o.dsl, key, o.model);
    const FamilyProblem p = problem_from_task(t);
    auto f = choose_family(o.family, o.dsl, p);
    const FamilySpace space = legal_space(*f, p);
    json names = json::array(), configs = json::array();
    for (const auto& spec : f->params()) names.push_back(spec.name);
    for (const auto& c : space.legal) configs.push_back(config_to_json(c));
    shapes.push_back({{"shape_key", key}, {"family", f->name()}, {"arch", p.arch}, {"params", names},
                      {"product", space.product}, {"examined", space.examined}, {"truncated", space.truncated},
                      {"legal", space.legal.size()}, {"default", config_to_json(f->default_config(p))},
                      {"configs", configs}});
  }
  return {{"gpu", gpu}, {"dsl", o.dsl}, {"shapes", shapes}};
}

// --start-params names the family's parameters with their legal values: a mistyped name or value
// would otherwise be dropped and the tune start from the family's default without a word.
void check_start_params(const json& params, const KernelFamily& family) {
  const auto specs = family.params();
  std::vector<std::string> names;
  for (const auto& spec : specs) names.push_back(spec.name);
  for (auto it = params.begin(); it != params.end(); ++it) {
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == it.key(); });
    if (spec == specs.end()) {
      throw_usage(fmt::format("--start-params: {} is not a parameter of the {} family", it.key(), family.name()),
                  fmt::format("its parameters: {} (croq tune --list-space shows the legal configurations)",
                              fmt::join(names, " ")));
    }
    const std::string value = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    if (std::find(spec->values.begin(), spec->values.end(), value) == spec->values.end()) {
      throw_usage(fmt::format("--start-params: {}={} is not a value of the {} family's {}", it.key(), value,
                              family.name(), it.key()),
                  fmt::format("its values: {}", fmt::join(spec->values, " ")));
    }
  }
}

// Ctrl-C (or SIGTERM) during a tune of one shape at a time ends croq as before (every stored round is
// on disk), after a line that says so and gives the command that goes on from them.
char g_interrupt_note[4096];
size_t g_interrupt_note_size = 0;

extern "C" void on_tune_interrupt(int sig) {
  if (g_interrupt_note_size > 0) {
    ssize_t ignored = ::write(2, g_interrupt_note, g_interrupt_note_size);
    (void)ignored;
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void set_interrupt_note(const std::string& text) {
  g_interrupt_note_size = std::min(text.size(), sizeof(g_interrupt_note));
  std::memcpy(g_interrupt_note, text.data(), g_interrupt_note_size);
}

}  // namespace

VerbRunner setup_tune(CLI::App& app) {
  auto o = std::make_shared<TuneOpts>();
  app.add_option("shape_key", o->shape_keys, "shape key(s), e.g. matmul_f32_512x512x512; several run as a sweep")->required();
  app.add_option("--dsl", o->dsl, fmt::format("{} (the dsls croq's search has kernel families for)",
                                              fmt::join(family_dsls(), " | ")))
      ->required();
  app.add_option("--rounds", o->rounds,
                 "rounds this run completes per shape, counted from the last stored round (so N more after a "
                 "finished run); an interrupted run resumes with its own budget")->default_val(50)->check(CLI::Range(1, 100000));
  app.add_option("--model", o->model, "the model name the rounds are stored under")->default_val("croq-search");
  app.add_option("--seed", o->seed, "random seed of the search (0: a fresh one, recorded in tune.json)")->default_val(0);
  app.add_option("--family", o->family,
                 "kernel family (default: the first of the dsl's that supports the problem): " + families_by_dsl());
  app.add_option("--gpu", o->gpu, "device key (default: CROQ_GPU, else detected; cpu_<arch> for dsl cpp)");
  app.add_option("--task-uid", o->task_uid, "the monitor's task id (new if omitted)");
  app.add_option("--explore", o->explore, "probability of a random legal move instead of the best-ranked one")
      ->default_val(0.15)->check(CLI::Range(0.0, 1.0));
  app.add_flag("--git-commit", o->git_commit, "commit each KEEP locally with the original skill's message format");
  app.add_option("--step-timeout", o->step_timeout_s, "seconds a single step may take")->default_val(900);
  app.add_option("--jobs,-j", o->jobs,
                 "shapes tuned at once, each in its own croq process (builds overlap; the GPU lease keeps "
                 "measurements one at a time)")
      ->default_val(1)->check(CLI::Range(1, 64));
  app.add_option("--profile-preset", o->profile_preset,
                 "Nsight Compute preset of each round's profile: full (every section) or quick (the sections the "
                 "classifier reads; much faster)")
      ->default_val("full")->check(CLI::IsMember({"full", "quick"}));
  app.add_option("--device", o->device,
                 "pin every step to this device: a GPU index or UUID (CUDA_VISIBLE_DEVICES and the device's lease), "
                 "or for dsl cpp a CPU lease slot cpu<i> (CROQ_DEVICE)");
  app.add_option("--start-params", o->start_params,
                 "the starting kernel's configuration (a JSON object of the family's parameters, e.g. another shape's "
                 "best record's `params`); default: the family's default");
  app.add_option("--start-from", o->start_from, "what --start-params come from, for the record (\"<shape> <kernel>\")");
  app.add_flag("--list-space", o->list_space,
               "print the family's legal configurations for each shape (every value of every parameter, each "
               "checked by the family's constraints: what a brute-force autotune of the same space would measure) "
               "and exit without tuning");
  return [o](Context& ctx) {
    require_buildable_dsl(o->dsl, "tune");
    json start_params;
    if (!o->start_params.empty()) start_params = parse_json_object_arg(o->start_params, "--start-params");
    if (!o->device.empty()) {
      // The verbs this tune runs inherit the pin: measure, baseline and profile use this device and
      // its lease, and a candidate's CUDA runtime sees no other GPU.
      if (o->dsl == "cpp") {
        if (o->device.rfind("cpu", 0) != 0) throw_usage("dsl cpp runs on the CPU: --device takes a CPU lease slot cpu<i>");
        ::setenv("CROQ_DEVICE", o->device.c_str(), 1);
      } else {
        ::setenv("CROQ_DEVICE", o->device.c_str(), 1);
        ::setenv("CUDA_VISIBLE_DEVICES", o->device.c_str(), 1);
      }
    }
    std::string gpu = resolve_device_key(o->gpu, o->dsl);
    if (o->list_space) {
      StepResult r;
      r.doc = list_space(*o, gpu);
      return print_step(ctx, r);
    }
    auto exe = self_exe_dir() / "croq";
    // A key given twice is one task, tuned once (with --jobs two processes raced on it).
    {
      std::vector<std::string> once;
      for (const auto& key : o->shape_keys) {
        if (std::find(once.begin(), once.end(), key) == once.end()) once.push_back(key);
        else ctx.note(fmt::format("croq tune: {} is given more than once; tuned once", key));
      }
      o->shape_keys = once;
    }
    // Refuse what cannot be tuned before any task is made: a bad key, a shape the operator does not
    // define (two dimensions, K not a multiple of 8 for 2:4 sparse, ...), one no family supports.
    for (const auto& key : o->shape_keys) {
      TaskRef t = make_task(gpu, o->dsl, key, o->model);
      (void)check_measurable_shape(t.shape);
      refuse_near_miss(ctx, t, "");
      auto family = choose_family(o->family, o->dsl, problem_from_task(t));
      if (start_params.is_object()) check_start_params(start_params, *family);
    }
    if (o->jobs > 1 && o->shape_keys.size() > 1) {
      if (o->git_commit) {
        throw_usage("--git-commit cannot be combined with --jobs: concurrent commits would contend for the git index",
                    "tune with --jobs 1 to commit each KEEP, or commit the tuning/ folder afterwards");
      }
      ParallelTuneOptions p;
      p.croq_exe = exe;
      p.root = ctx.ws().root();
      p.shape_keys = o->shape_keys;
      p.gpu = gpu;
      p.dsl = o->dsl;
      p.model = o->model;
      p.family = o->family;
      p.rounds = o->rounds;
      p.seed = o->seed;
      p.explore = o->explore;
      p.step_timeout_s = o->step_timeout_s;
      p.profile_preset = o->profile_preset;
      p.jobs = o->jobs;
      p.quiet = ctx.quiet;
      p.tty = ::isatty(2) && !ctx.quiet;
      return print_step(ctx, tune_in_parallel(p, step_deps(ctx), [&](const std::string& line) {
                          ctx.err << line << "\n" << std::flush;
                        }));
    }
    SelfExecClient client(process_runner(), exe, ctx.ws().root());
    const bool tty = ::isatty(2) && !ctx.quiet;
    std::vector<std::string> again;
    for (const auto& a : ctx.argv) again.push_back(shell_quote(a));
    set_interrupt_note(fmt::format("\ncroq tune: interrupted; every round stored so far is kept, and the same command "
                                   "goes on from them:\n  croq {}\n",
                                   fmt::join(again, " ")));
    ScopedStopSignals interrupted(on_tune_interrupt);
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
      opt.start_params = start_params;
      opt.start_from = o->start_from;
      auto progress = [&, tty](const json& e) {
        if (ctx.quiet) return;
        if (!tty) {
          ctx.err << dump_compact(e) << "\n";
          return;
        }
        // A scrolling log: one line per round, the steps in between overwritten on the last line,
        // and a summary at the end.
        std::string ev = e.value("event", "");
        if (ev == "baseline" && e.contains("warnings") && e["warnings"].is_array() && !e["warnings"].empty()) {
          for (const auto& w : e["warnings"]) {
            if (!w.is_object()) continue;
            ctx.err << fmt::format("\r\033[K[{}] WARNING baseline {}: {}\n", t.shape.text, w.value("flag", ""),
                                   w.value("message", ""))
                    << std::flush;
          }
          return;
        }
        if (ev == "resume") {
          ctx.err << fmt::format("\r\033[K[{}] resuming the interrupted run: it completes its {} rounds counted from "
                                 "round {} (--rounds sets the budget of a new run)\n",
                                 t.shape.text, e.value("rounds", 0), e.value("start_round", 0))
                  << std::flush;
          return;
        }
        if (ev == "round" || ev == "done" || ev == "close_call" || ev == "paired") {
          ctx.err << "\r\033[K" << tune_progress_line(e, t.shape.text, o->rounds) << "\n" << std::flush;
        } else {
          ctx.err << fmt::format("\r\033[K[{}] {}", t.shape.text, ev) << std::flush;
        }
      };
      if (o->shape_keys.size() > 1) ctx.note(fmt::format("NEXT_SHAPE {} ({} of {})", t.shape.text, i + 1, o->shape_keys.size()));
      Tuner tuner(client, process_runner(), ctx.ws(), t, opt, progress);
      summaries.push_back(tuner.run());
      if (o->shape_keys.size() > 1) ctx.note(fmt::format("SHAPE_COMPLETE {}", t.shape.text));
    }
    ctx.emit(summaries.size() == 1 ? summaries[0] : json{{"shapes", summaries}});
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
