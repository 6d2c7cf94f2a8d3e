// Several shapes tuned at once, each in its own croq process (parallel_tune.hpp).
#include "croq/search/parallel_tune.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "croq/util/process.hpp"
#include "croq/util/units.hpp"

namespace croq {

namespace {

std::atomic<bool> g_stop_tunes{false};

extern "C" void on_tune_signal(int) { g_stop_tunes = true; }

}  // namespace

std::string tune_progress_line(const json& e, const std::string& shape, int rounds) {
  std::string ev = e.value("event", "");
  if (ev == "round") {
    std::string best = e.value("best", json()).is_number() ? format_rate(e["best"].get<double>()) : "-";
    std::string pct = e.contains("pct_of_baseline") ? fmt::format(" ({:.1f}% of baseline)", e["pct_of_baseline"].get<double>()) : "";
    std::string tf = e.value("tflops", json()).is_number() ? format_rate(e["tflops"].get<double>()) : "-";
    // The task's round number, and which of this invocation's `rounds` it is (a tune that resumes
    // or adds rounds to a task starts past 1).
    const int round = e.value("round", 0);
    const int run_round = e.contains("run_round") && e["run_round"].is_number_integer() ? e["run_round"].get<int>() : round;
    const std::string where = run_round == round ? fmt::format("round {}/{}", round, rounds)
                                                 : fmt::format("round {} ({} of {} this run)", round, run_round, rounds);
    return fmt::format("[{} {}] best {}{} | last {} {} {} {}", shape, where, best, pct, e.value("kernel", ""),
                       e.value("decision", ""), tf, e.value("bottleneck", ""));
  }
  if (ev == "done") {
    const json& sm = e.value("summary", json::object());
    const json best = sm.value("best", json::object());
    std::string rate = best.is_object() && best.value("tflops", json()).is_number() ? format_rate(best["tflops"].get<double>()) : "-";
    // The best kernel's parameters and source follow in the result (the text view of croq tune).
    return fmt::format("[{}] done: {} rounds, best {}{}", shape, sm.value("rounds", 0), rate,
                       sm.contains("pct_of_baseline")
                           ? fmt::format(" ({:.2f}x the baseline)", sm["pct_of_baseline"].get<double>() / 100)
                           : "");
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

StepResult tune_in_parallel(const ParallelTuneOptions& o, const StepDeps& deps,
                            const std::function<void(const std::string& line)>& progress) {
  const size_t n = o.shape_keys.size();
  const std::string root = o.root.string();
  std::vector<json> results(n);
  std::mutex out_mutex;
  std::atomic<size_t> next{0};
  auto note = [&](const std::string& line) {
    if (deps.note) deps.note(line);
  };
  // SIGINT and SIGTERM set the stop flag while the shapes run; the earlier handlers come back after.
  g_stop_tunes = false;
  ScopedStopSignals stop(on_tune_signal);
  note(fmt::format("croq tune: {} shapes, {} at a time", n, std::min<size_t>(n, static_cast<size_t>(o.jobs))));

  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) {
      const std::string& key = o.shape_keys[i];
      if (g_stop_tunes) {
        results[i] = {{"shape_key", key}, {"not_started", true}, {"status", "not started: croq tune was stopped"}};
        continue;
      }
      ProcessSpec spec;
      spec.argv = {o.croq_exe.string(), "--root", root, "tune", key, "--dsl", o.dsl, "--gpu", o.gpu,
                   "--model", o.model, "--rounds", std::to_string(o.rounds), "--seed", std::to_string(o.seed),
                   "--explore", fmt::format("{}", o.explore), "--step-timeout", std::to_string(o.step_timeout_s),
                   "--profile-preset", o.profile_preset};
      if (!o.family.empty()) spec.argv.insert(spec.argv.end(), {"--family", o.family});
      spec.should_stop = [] { return g_stop_tunes.load(); };
      spec.stop_grace = std::chrono::milliseconds(15000);
      std::string pending;
      spec.on_output = [&](bool is_err, std::string_view chunk) {
        if (!is_err || o.quiet) return;
        pending.append(chunk);
        size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
          std::string line = pending.substr(0, nl);
          pending.erase(0, nl + 1);
          if (line.empty()) continue;
          std::lock_guard<std::mutex> lock(out_mutex);
          if (!o.tty) {
            progress(line);
          } else if (auto e = try_parse_json(line); e && e->is_object()) {
            progress(tune_progress_line(*e, key, o.rounds));
          } else {
            progress("[" + key + "] " + line);
          }
        }
      };
      ProcessResult r = deps.runner.run(spec);
      auto doc = try_parse_json(r.out);
      if (r.ok() && doc && doc->is_object()) {
        results[i] = *doc;
      } else if (r.stopped) {
        // Stopped as asked (SIGINT or SIGTERM to this croq): not a failure. Every round it stored
        // stays, and the same command goes on from them.
        results[i] = {{"shape_key", key}, {"stopped", true}, {"status", r.describe()}};
        std::lock_guard<std::mutex> lock(out_mutex);
        note(fmt::format("croq tune: {} stopped before its rounds were done (the same command resumes it)", key));
      } else {
        json err = {{"shape_key", key}, {"exit_code", r.exit_code}, {"status", r.describe()}};
        if (doc && doc->is_object() && doc->contains("error")) err["error"] = (*doc)["error"];
        else err["error"] = r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err;
        results[i] = err;
        std::lock_guard<std::mutex> lock(out_mutex);
        note(fmt::format("croq tune: {} failed ({}); the other shapes go on", key, r.describe()));
      }
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < std::min<int>(o.jobs, static_cast<int>(n)); ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  size_t failed = 0, stopped = 0, not_started = 0;
  json shapes = json::array();
  for (auto& r : results) {
    if (r.value("stopped", false)) ++stopped;
    else if (r.value("not_started", false)) ++not_started;
    else if (r.contains("error")) ++failed;
    shapes.push_back(r);
  }
  StepResult res;
  res.doc = json{{"shapes", shapes},   {"jobs", o.jobs},          {"failed", failed}, {"stopped_shapes", stopped},
                 {"not_started", not_started}, {"stopped", g_stop_tunes.load()}};
  if (stopped + not_started) {
    res.notes.push_back(fmt::format("croq tune: stopped: {} of {} shapes stopped before their rounds were done and {} "
                                    "not started; run the same command to go on from the rounds stored",
                                    stopped, n, not_started));
  }
  if (failed) res.notes.push_back(fmt::format("croq tune: {} of {} shapes failed", failed, n));
  res.code = failed || stopped || not_started ? ExitCode::failure : ExitCode::ok;
  return res;
}

}  // namespace croq
