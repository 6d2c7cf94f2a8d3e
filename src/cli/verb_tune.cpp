// croq tune: the main job — croq's own search drives the protocol for one or more shapes. With
// --jobs N, N shapes are tuned at once, each by its own `croq tune <shape>` child process: their
// builds run side by side on the CPU while the device's lease lets one measurement or profile at a
// time use the GPU, so a sweep takes about as long as its GPU work instead of the sum of its builds.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/gpu/device_key.hpp"
#include "croq/search/tune.hpp"
#include "croq/util/paths.hpp"
#include "croq/util/process.hpp"
#include "croq/util/units.hpp"

namespace croq::cli {

namespace {

std::atomic<bool> g_stop_sweep{false};

extern "C" void on_sweep_signal(int) { g_stop_sweep = true; }

// One line of a child's progress, for a terminal.
std::string progress_line(const json& e, const std::string& shape, int rounds) {
  std::string ev = e.value("event", "");
  if (ev == "round") {
    std::string best = e.value("best", json()).is_number() ? format_rate(e["best"].get<double>()) : "-";
    std::string pct = e.contains("pct_of_baseline") ? fmt::format(" ({:.1f}% of baseline)", e["pct_of_baseline"].get<double>()) : "";
    std::string tf = e.value("tflops", json()).is_number() ? format_rate(e["tflops"].get<double>()) : "-";
    return fmt::format("[{} round {}/{}] best {}{} | last {} {} {} {}", shape, e.value("round", 0), rounds, best,
                       pct, e.value("kernel", ""), e.value("decision", ""), tf, e.value("bottleneck", ""));
  }
  if (ev == "done") {
    const json& sm = e.value("summary", json::object());
    const json best = sm.value("best", json::object());
    std::string rate = best.is_object() && best.value("tflops", json()).is_number() ? format_rate(best["tflops"].get<double>()) : "-";
    std::string s = fmt::format("[{}] done: {} rounds, best {}{}", shape, sm.value("rounds", 0), rate,
                                sm.contains("pct_of_baseline")
                                    ? fmt::format(" ({:.2f}x the baseline)", sm["pct_of_baseline"].get<double>() / 100)
                                    : "");
    // The best kernel's parameters and source follow in the result (text_output.cpp's tune view).
    return s;
  }
  if (ev == "close_call") {
    return fmt::format("[{}] close call: {} against {}, measuring back-to-back pairs", shape, e.value("kernel", ""),
                       e.value("best", ""));
  }
  if (ev == "paired") {
    return fmt::format("[{}] {} {}: {}", shape, e.value("kernel", ""), e.value("decision", ""), e.value("reason", ""));
  }
  return fmt::format("[{}] {}", shape, ev);
}

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
};

// Runs each shape as `croq tune <shape>` in a child process, `jobs` at a time. Progress lines are
// passed on (JSON lines as the children write them, or one line per event on a terminal); the
// summaries come back in the order of the shape keys. A shape whose child fails is reported and
// the others go on; SIGINT or SIGTERM stops every child (each resumes where it stopped).
ExitCode run_sweep_in_parallel(Context& ctx, const std::filesystem::path& exe, const std::string& gpu, const TuneOpts& o) {
  const size_t n = o.shape_keys.size();
  const std::string root = ctx.ws().root().string();
  const bool tty = ::isatty(2) && !ctx.quiet;
  std::vector<json> results(n);
  std::mutex out_mutex;
  std::atomic<size_t> next{0};
  g_stop_sweep = false;
  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = on_sweep_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  ctx.note(fmt::format("croq tune: {} shapes, {} at a time", n, std::min<size_t>(n, static_cast<size_t>(o.jobs))));

  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) {
      const std::string& key = o.shape_keys[i];
      if (g_stop_sweep) {
        results[i] = {{"shape_key", key}, {"error", "not started: the sweep was stopped"}};
        continue;
      }
      ProcessSpec spec;
      spec.argv = {exe.string(), "--root", root, "tune", key, "--dsl", o.dsl, "--gpu", gpu,
                   "--model", o.model, "--rounds", std::to_string(o.rounds), "--seed", std::to_string(o.seed),
                   "--explore", fmt::format("{}", o.explore), "--step-timeout", std::to_string(o.step_timeout_s),
                   "--profile-preset", o.profile_preset};
      if (!o.family.empty()) spec.argv.insert(spec.argv.end(), {"--family", o.family});
      spec.should_stop = [] { return g_stop_sweep.load(); };
      spec.stop_grace = std::chrono::milliseconds(15000);
      std::string pending;
      spec.on_output = [&](bool is_err, std::string_view chunk) {
        if (!is_err || ctx.quiet) return;
        pending.append(chunk);
        size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
          std::string line = pending.substr(0, nl);
          pending.erase(0, nl + 1);
          if (line.empty()) continue;
          std::lock_guard<std::mutex> lock(out_mutex);
          if (!tty) {
            ctx.err << line << "\n" << std::flush;
          } else if (auto e = try_parse_json(line); e && e->is_object()) {
            ctx.err << progress_line(*e, key, o.rounds) << "\n" << std::flush;
          } else {
            ctx.err << "[" << key << "] " << line << "\n" << std::flush;
          }
        }
      };
      ProcessResult r = process_runner().run(spec);
      auto doc = try_parse_json(r.out);
      if (r.ok() && doc && doc->is_object()) {
        results[i] = *doc;
      } else {
        json err = {{"shape_key", key}, {"exit_code", r.exit_code}, {"status", r.describe()}};
        if (doc && doc->is_object() && doc->contains("error")) err["error"] = (*doc)["error"];
        else err["error"] = r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err;
        results[i] = err;
        std::lock_guard<std::mutex> lock(out_mutex);
        ctx.note(fmt::format("croq tune: {} failed ({}); the other shapes go on", key, r.describe()));
      }
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < std::min<int>(o.jobs, static_cast<int>(n)); ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  size_t failed = 0;
  json shapes = json::array();
  for (auto& r : results) {
    if (r.contains("error")) ++failed;
    shapes.push_back(r);
  }
  ctx.emit(json{{"shapes", shapes}, {"jobs", o.jobs}, {"failed", failed}, {"stopped", g_stop_sweep.load()}});
  if (failed) ctx.note(fmt::format("croq tune: {} of {} shapes failed or were not run", failed, n));
  return failed ? ExitCode::failure : ExitCode::ok;
}

}  // namespace

VerbRunner setup_tune(CLI::App& app) {
  auto o = std::make_shared<TuneOpts>();
  app.add_option("shape_key", o->shape_keys, "shape key(s), e.g. matmul_f32_512x512x512; several run as a sweep")->required();
  app.add_option("--dsl", o->dsl, "cuda | cpp | croqtile (the dsls croq's search has kernel families for)")->required();
  app.add_option("--rounds", o->rounds, "rounds to complete (per shape)")->default_val(50)->check(CLI::Range(1, 100000));
  app.add_option("--model", o->model, "the model name the rounds are stored under")->default_val("croq-search");
  app.add_option("--seed", o->seed, "random seed of the search (0: a fresh one, recorded in tune.json)")->default_val(0);
  app.add_option("--family", o->family, "kernel family (default: the first that supports the problem)");
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
    auto exe = self_exe_dir() / "croq";
    for (const auto& key : o->shape_keys) (void)make_task(gpu, o->dsl, key, o->model);  // refuse bad keys first
    if (o->jobs > 1 && o->shape_keys.size() > 1) {
      if (o->git_commit) {
        throw_usage("--git-commit cannot be combined with --jobs: concurrent commits would contend for the git index",
                    "tune with --jobs 1 to commit each KEEP, or commit the tuning/ folder afterwards");
      }
      return run_sweep_in_parallel(ctx, exe, gpu, *o);
    }
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
        if (ev == "round" || ev == "done" || ev == "close_call" || ev == "paired") {
          ctx.err << "\r\033[K" << progress_line(e, t.shape.text, o->rounds) << "\n" << std::flush;
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
