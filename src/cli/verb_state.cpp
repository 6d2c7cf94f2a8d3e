// croq protocol begin, croq state, croq decide: the protocol engine's own verbs.
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/ledger/documents.hpp"
#include "croq/protocol/command.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/workspace/sources.hpp"
#include "croq/measure/measurement.hpp"
#include "croq/protocol/stop.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/time.hpp"

namespace croq::cli {

VerbRunner setup_protocol_begin(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string mode = "enforced";
    int rounds = 50;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--mode", o->mode, "enforced (refuse out-of-order steps) or advisory (report only)")
      ->check(CLI::IsMember({"enforced", "advisory"}))->default_val("enforced");
  app.add_option("--rounds", o->rounds, "rounds this invocation must complete before it may stop")
      ->check(CLI::Range(1, 100000))->default_val(50);
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);
    Ledger ledger(ctx.ws(), t);
    ProtocolConfig cfg;
    const auto existing = read_protocol(ctx.ws(), t);
    if (existing) cfg = *existing;
    // An enforced task with records stays enforced: what was stored under its guards would
    // otherwise sit beside what was stored without them, under one best.
    if (existing && existing->enforced && o->mode == "advisory" && ledger.index().records > 0) {
      throw Error(ExitCode::refused,
                  fmt::format("{} is enforced and has {} stored record(s): it cannot be made advisory", t.id(),
                              ledger.index().records),
                  "go on under the enforced protocol (croq protocol begin --mode enforced --rounds N sets a new "
                  "budget), or tune under another --model to work without its guards");
    }
    cfg.enforced = o->mode == "enforced";
    cfg.target_rounds = o->rounds;
    cfg.start_round = ledger.index().max_round;
    cfg.started_at = now_iso8601();
    ensure_dir(ctx.ws().kind_dir(t, ArtifactKind::logs));
    write_protocol(ctx.ws(), t, cfg);
    json doc = cfg.to_json();
    doc["state"] = derive_state(ctx.ws(), t).to_json();
    ctx.emit(doc);
    return ExitCode::ok;
  };
}

VerbRunner setup_state(CLI::App& app) {
  auto o = std::make_shared<TaskOptions>();
  add_task_options(app, *o);
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, *o);
    TaskState s = derive_state(ctx.ws(), t);
    json doc = s.to_json();
    doc["task"] = t.id();
    StopCheck stop = stop_condition(ctx.ws(), t, s);
    doc["stop_allowed"] = stop.stop_allowed;
    doc["stop_reason"] = stop.reason;
    ctx.emit(doc);
    ctx.note(fmt::format("{}: {} — next: {}", t.id(), step_name(s.step), s.next_action));
    if (!read_protocol(ctx.ws(), t)) {
      // Nothing said so before: a driver stored steps out of order without a word.
      ctx.note(fmt::format("{} is advisory: no step is refused and typed figures are stored as reported; `{}` "
                           "turns the protocol's guards on",
                           t.id(), CroqCommand("protocol begin").task(t).opt("--rounds", "<N>").text()));
    }
    return ExitCode::ok;
  };
}

VerbRunner setup_decide(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string measurement;
    std::string kernel;
    bool rerun = false;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--measurement", o->measurement,
                 "the candidate's measurement file (from `croq measure`; default: the newest measurement of --kernel, "
                 "else of the open plan's candidate)");
  app.add_option("--kernel", o->kernel, "the candidate (default: from the measurement file)");
  app.add_flag("--rerun", o->rerun, "the candidate and the best were re-measured back to back (re-run protocol)");
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);
    std::string measurement = o->measurement;
    if (measurement.empty()) {
      // The newest measurement of the kernel (or of the open plan's candidate).
      std::string kernel = o->kernel;
      if (kernel.empty()) {
        if (auto cp = read_checkpoint(ctx.ws(), t); cp && cp->open()) {
          if (auto src = find_live_source(ctx.ws(), t, cp->iter)) kernel = src->stem().string();
        }
      }
      const fs::path own = ctx.ws().kind_dir(t, ArtifactKind::perf) / ("measure_" + kernel + ".json");
      std::error_code ec;
      if (!kernel.empty() && fs::exists(own, ec)) {
        measurement = own.string();  // the candidate's own measurement (pairs have files of their own)
      } else if (auto e = kernel.empty() ? std::nullopt : latest_valid_evidence(ctx.ws(), t, EvidenceKind::measure, kernel)) {
        measurement = e->file;
      } else {
        throw_usage("--measurement is required: no measurement of " + (kernel.empty() ? "the open plan's candidate" : kernel) + " found",
                    CroqCommand("measure").task(t).opt("--iter", kernel.empty() ? "<kernel>" : kernel).text() +
                        " first, or pass --measurement FILE");
      }
    }
    fs::path mp = input_path(ctx, measurement);
    std::string text = read_file_or_throw(mp);
    auto j = try_parse_json(text);
    if (!j || !j->is_object()) throw_usage(fmt::format("{} is not a measurement document", measurement));
    PerfSample cand = PerfSample::from_measurement(*j);
    std::string kernel = o->kernel;
    if (kernel.empty()) kernel = kernel_of_measurement(*j);
    if (kernel.empty()) {
      throw_usage(fmt::format("{} does not say which kernel it measured", measurement), "pass --kernel iter<NNN>_<tag>");
    }
    if (get_string(*j, "verdict").value_or("PASS") != "PASS") {
      std::string v = get_string(*j, "verdict").value_or("");
      ctx.emit({{"decision", v}, {"reason", "the measurement's verdict is " + v + ": store it as the round's decision"},
                {"needs_rerun", false}, {"kernel", kernel},
                {"next", json::array({CroqCommand("store-round").task(t).opt("--kernel", kernel)
                                          .opt("--measurement", ctx.ws().display(mp)).text()})}});
      return ExitCode::ok;
    }
    if (auto parsed = Measurement::from_json(*j); parsed && parsed->contended()) {
      throw Error(ExitCode::refused,
                  fmt::format("{} is contended ({}): a figure taken on a shared GPU decides nothing", measurement,
                              parsed->contention_reason()),
                  "measure again when the GPU is idle (`croq gpu check --wait`), then decide on that measurement");
    }
    DecisionContext d = decide_for(ctx.ws(), t, kernel, cand, o->rerun);
    json doc = d.to_json();
    doc["candidate"] = cand.to_json();
    doc["kernel"] = kernel;
    const bool pending = d.result.needs_rerun || d.result.needs_pairs;
    if (pending) {
      // Not a decision yet: the measurements it needs come first (one command measures them all).
      // `decision` stays what it always was for drivers that read it (DISCARD: safe to store);
      // `pending` says the decision is not made yet.
      doc["pending"] = true;
      doc["next"] = json::array({CroqCommand("measure").task(t).opt("--iter", kernel).flag("--pairs").text()});
      if (d.result.needs_pairs && doc.contains("pairs") && doc["pairs"].contains("next")) {
        const size_t n = doc["pairs"]["next"].size();
        doc["pairs"]["explained"] = fmt::format(
            "{} back-to-back pairs are needed; {} more measurement(s) complete them (the candidate's own measurement "
            "opens the first pair); `croq measure --iter {} --pairs` runs them all",
            d.result.pairs.value("needed", 0), n, kernel);
      }
    } else {
      doc["pending"] = false;
      doc["next"] = json::array({CroqCommand("store-round").task(t).opt("--kernel", kernel)
                                     .opt("--measurement", ctx.ws().display(mp))
                                     .opt("--decision", decision_name(d.result.decision)).text()});
    }
    ctx.emit(doc);
    ctx.note("decide: " + std::string(pending ? "PENDING -- " : std::string(decision_name(d.result.decision)) + " -- ") +
             d.result.reason);
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
