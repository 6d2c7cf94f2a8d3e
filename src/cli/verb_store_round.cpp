// croq store-round and croq attempt.
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/ledger/documents.hpp"
#include "croq/ledger/store.hpp"
#include "croq/protocol/command.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/measure/store_measurement.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/protocol/provenance.hpp"
#include "croq/util/number.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq::cli {

namespace {

// What croq already holds is the default: the kernel and iteration from the measurement, the
// bottleneck, idea, category and expected gain from the round's plan (its checkpoint), and the
// decision from `croq decide` on the measurement.
void fill_defaults(Context& ctx, const TaskRef& t, StoreRequest& req, const std::optional<MeasurementFile>& mf) {
  if (req.kernel.empty() && mf) {
    json m = mf->measurement.to_json();
    std::string k = kernel_of_measurement(m);
    if (try_parse_iter_id(k)) req.kernel = k;
  }
  if (req.iter.empty() && !req.kernel.empty()) {
    if (auto id = try_parse_iter_id(req.kernel)) req.iter = id->number_name();
  }
  if (req.iter.empty()) {
    throw_usage("--iter is required", "pass --iter iter<NNN> (or --kernel iter<NNN>_<tag>, or --measurement FILE)");
  }
  std::optional<Checkpoint> cp;
  try {
    cp = read_checkpoint(ctx.ws(), t);
  } catch (const Error& e) {
    ctx.note(std::string("store-round: the plan (checkpoint) could not be read, so its idea and bottleneck are not "
                         "copied into the record: ") +
             e.what() + " (croq session validate names the damage)");
  }
  const std::string planned = req.iter.substr(0, req.iter.find('_'));
  if (cp && cp->open() && cp->iter == planned) {
    if (req.bottleneck.empty()) req.bottleneck = cp->bottleneck;
    if (req.idea.empty()) req.idea = cp->idea;
    if (req.expected_gain.empty()) req.expected_gain = cp->expected_gain;
    if (req.category.empty()) req.category = get_string(cp->extra, "category").value_or("");
  }
  if (req.decision.empty() && mf && mf->measurement.passed() && !req.kernel.empty()) {
    DecisionContext d = decide_for(ctx.ws(), t, req.kernel, PerfSample::from_measurement(mf->measurement.to_json()), false);
    if (d.result.needs_rerun || d.result.needs_pairs) {
      throw_usage("--decision is required: croq decide has no decision yet (" + d.result.reason + ")",
                  CroqCommand("measure").task(t).opt("--iter", req.kernel).flag("--pairs").text() +
                      " measures what it needs; then store again");
    }
    req.decision = decision_name(d.result.decision);
    ctx.note("store-round: decision " + req.decision + " (croq decide: " + d.result.reason + ")");
  }
}

}  // namespace

VerbRunner setup_store_round(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    StoreRequest req;
    std::string tflops_text;
    std::string round_text;
    std::string extra_text;
    std::string measurement;
    std::string idea_file;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--iter", o->req.iter, "iter<NNN> (or attempt<AAAA> for a failure; default: from --kernel or the measurement)");
  app.add_option("--measurement", o->measurement,
                 "measurement file from `croq measure`: TFLOPS and verdict come from it (source: measured)");
  app.add_option("--kernel", o->req.kernel, "iter<NNN>_<tag>: the kernel's canonical name");
  app.add_option("--tflops", o->tflops_text, "measured TFLOPS (stored as source: reported)");
  app.add_option("--decision", o->req.decision,
                 "KEEP DISCARD COMPILE_FAIL VERIFY_FAIL RUNTIME_FAIL SEGFAULT HANG (BASELINE for iter000); "
                 "with --measurement, derived from a failed verdict, else croq decide's decision");
  app.add_option("--bottleneck", o->req.bottleneck,
                 "memory_bound compute_bound latency_bound launch_bound mixed (default: the plan's, from its checkpoint)");
  auto* idea = app.add_option("--idea", o->req.idea, "one human-readable sentence: what changed and why (default: the plan's)");
  app.add_option("--idea-file", o->idea_file, "read the idea from this file ('-': standard input), for text a shell would mangle")
      ->excludes(idea);
  app.add_option("--round", o->round_text, "round number (default: the next one)");
  app.add_option("--category", o->req.category, "tiling pipeline memory compute misc");
  app.add_option("--expected-gain", o->req.expected_gain, "e.g. +5% TFLOPS");
  app.add_option("--extra", o->extra_text, "JSON object of further fields to store with the record");
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);
    StoreRequest req = o->req;
    if (!o->idea_file.empty()) req.idea = read_text_arg(o->idea_file, "--idea-file", k_max_idea_bytes);
    if (!o->tflops_text.empty()) req.tflops = parse_number_arg(o->tflops_text, "--tflops", 0, 1e6);
    if (!o->round_text.empty()) {
      req.round = static_cast<int>(parse_integer_arg(o->round_text, "--round", 0, k_max_round_number));
    }
    if (!o->extra_text.empty()) req.extra = parse_json_object_arg(o->extra_text, "--extra");
    check_extra_fields(req.extra);  // extra fields add to a record, never change what it says
    json measurement_doc = nullptr;
    std::optional<MeasurementFile> measured;
    if (!o->measurement.empty()) measured = read_measurement_file(input_path(ctx, o->measurement));
    fill_defaults(ctx, t, req, measured);
    if (measured) {
      MeasurementFile& mf = *measured;
      apply_measurement(req, mf, ctx.ws().display(mf.path), t.shape);
      // Only a document croq wrote for this task, of what croq built, is a measured figure.
      const MeasurementProvenance p = vet_measurement(ctx.ws(), t, req, mf, make_round_record(req).kernel);
      if (!p.trusted) ctx.note(fmt::format("store-round: stored as source unverified: {}", p.problem));
      measurement_doc = mf.measurement.to_json();
    } else if (req.decision.empty()) {
      throw_usage("--decision is required", "KEEP, DISCARD, COMPILE_FAIL, VERIFY_FAIL, RUNTIME_FAIL, SEGFAULT or HANG");
    }
    // What the build established (CroqTile's cu_finetuned) is the build's to say, not --extra's.
    apply_build_facts(ctx.ws(), t, req, make_round_record(req).kernel);
    // Validate before touching the disk (store_round validates again under the lock), then ask the
    // protocol whether this round may be stored.
    RoundRecord preview_record = make_round_record(req);
    guard_store(ctx.ws(), t, preview_record, measurement_doc);
    mark_enforced(ctx.ws(), t, req.extra);  // the ledger says the task is enforced, protocol.json or not
    Ledger ledger(ctx.ws(), t);
    StoreRoundResult r = store_round(ledger, req, lock_timeout(o->task));
    json doc;
    doc["ok"] = true;
    doc["record"] = r.outcome.record.to_json();
    doc["files"] = {{"idea_log", ctx.ws().display(ctx.ws().idea_log(t))},
                    {"results_tsv", ctx.ws().display(ctx.ws().results_tsv(t))}};
    doc["tsv_rebuilt"] = r.outcome.tsv_rebuilt;
    doc["repaired_torn_tail"] = r.outcome.repaired_torn_tail;
    doc["imported_tsv"] = r.outcome.imported_tsv;
    doc["planned_iter"] = r.outcome.planned_iter.empty() ? json(nullptr) : json(r.outcome.planned_iter);
    doc["released_reservation"] =
        r.outcome.released_reservation.empty() ? json(nullptr) : json(r.outcome.released_reservation);
    doc["checkpoint_closed"] = r.checkpoint_closed;
    doc["line"] = r.line;
    ctx.emit(doc);
    if (r.outcome.repaired_torn_tail) {
      ctx.note(fmt::format("store-round: cut off a torn last line of idea-log.jsonl ({} bytes, left by an interrupted "
                           "write)", r.outcome.torn_bytes));
    }
    if (r.outcome.tsv_rebuilt) ctx.note("store-round: results.tsv was out of step and was rebuilt from idea-log.jsonl");
    // The seeds' contract line: a driver waits for it. Printed even with --quiet.
    ctx.err << r.line << "\n";
    return ExitCode::ok;
  };
}

VerbRunner setup_attempt(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string tag;
    std::string reason;
    std::string idea;
    std::string planned_iter;
    std::string build_log;
    std::string extra_text;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--tag", o->tag, "the idea's tag")->required();
  app.add_option("--reason", o->reason, "why it failed: code_bug, dsl_limitation, library_call_forbidden, verify_fail, ...")->required();
  app.add_option("--idea", o->idea, "the idea being implemented");
  app.add_option("--planned-iter", o->planned_iter, "the iteration the idea was planned as");
  app.add_option("--build-log", o->build_log, "path of the build log of this attempt");
  app.add_option("--extra", o->extra_text, "JSON object of further fields");
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);
    validate_tag(o->tag);
    if (!is_valid_utf8(o->reason) || !is_valid_utf8(o->idea) || o->idea.size() > k_max_idea_bytes) {
      throw_usage("--reason and --idea must be UTF-8 text of reasonable length");
    }
    json extra = o->extra_text.empty() ? json::object() : parse_json_object_arg(o->extra_text, "--extra");
    check_attempt_extra_fields(extra);
    std::string planned;
    if (!o->planned_iter.empty()) planned = iter_number_name(parse_iter_number(o->planned_iter));
    Ledger ledger(ctx.ws(), t);
    json rec;
    rec["reason"] = o->reason;
    rec["idea"] = o->idea;
    if (!planned.empty()) rec["planned_iter"] = planned;
    if (!o->build_log.empty()) rec["build_log"] = o->build_log;
    rec["timestamp"] = now_iso8601();
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      if (!rec.contains(it.key())) rec[it.key()] = it.value();
    }
    rec = ledger.append_attempt(rec, o->tag, lock_timeout(o->task));
    ctx.emit(rec);
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
