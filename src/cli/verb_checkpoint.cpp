// croq checkpoint write | read | verify.
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/ledger/records.hpp"
#include "croq/ledger/store.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/session/drift.hpp"
#include "croq/workspace/sources.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq::cli {

VerbRunner setup_checkpoint_write(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string iter, bottleneck, idea, idea_file, expected_gain, levers, base, extra, params, structural;
    int round = 0;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--iter", o->iter, "the planned iteration (iter<NNN>)")->required();
  app.add_option("--bottleneck", o->bottleneck, "the profile's bottleneck the idea targets")->required();
  auto* idea = app.add_option("--idea", o->idea, "one-line description of the idea (or --idea-file)");
  app.add_option("--idea-file", o->idea_file, "read the idea from this file ('-': standard input)")->excludes(idea);
  app.add_option("--expected-gain", o->expected_gain, "e.g. +20 TFLOPS");
  app.add_option("--levers", o->levers, "comma-separated parameter or construct names the change touches");
  app.add_option("--base", o->base, "the kernel the candidate derives from (default: the current best)");
  app.add_option("--round", o->round, "the round this plan belongs to (default: the next)");
  app.add_option("--params", o->params, "JSON object: the candidate's parameter set (for the no-repeat rule)");
  app.add_option("--structural", o->structural,
                 "the structural change this idea makes (tiling, pipeline structure, warp specialisation, memory "
                 "hierarchy, ...); omit for a macro-only change");
  app.add_option("--extra", o->extra, "JSON object of further fields");
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);
    std::string idea_text = o->idea;
    if (!o->idea_file.empty()) idea_text = read_text_arg(o->idea_file, "--idea-file", k_max_idea_bytes);
    if (o->bottleneck == "unknown" || !is_valid_bottleneck(o->bottleneck)) {
      throw_usage(fmt::format("invalid bottleneck '{}'", preview(o->bottleneck)),
                  "memory_bound, compute_bound, latency_bound, launch_bound or mixed (from `croq classify`)");
    }
    if (trim(idea_text).empty() || !is_valid_utf8(idea_text) || idea_text.size() > k_max_idea_bytes ||
        idea_text.find('\0') != std::string::npos) {
      throw_usage("the idea must be a non-empty UTF-8 sentence (at most 16 KiB)", "pass --idea TEXT or --idea-file FILE");
    }
    int planned = parse_iter_number(o->iter);
    if (!o->base.empty() && !try_parse_iter_id(o->base)) {
      throw_usage(fmt::format("--base '{}' is not a kernel name", preview(o->base)), "e.g. --base iter009_bn256");
    }
    for (const std::string* text : {&o->expected_gain, &o->levers}) {
      if (!is_valid_utf8(*text) || text->size() > 4096 || text->find('\0') != std::string::npos) {
        throw_usage("--expected-gain and --levers must be short UTF-8 text");
      }
    }
    json extra = o->extra.empty() ? json::object() : parse_json_object_arg(o->extra, "--extra");
    if (o->round < 0) throw_usage(fmt::format("--round {} is negative", o->round));
    Ledger ledger(ctx.ws(), t);
    LedgerIndex idx = ledger.index();
    Checkpoint cp;
    cp.status = CheckpointStatus::PLANNED;
    cp.iter = iter_number_name(planned);
    cp.round = o->round > 0 ? o->round : idx.max_round + 1;
    cp.bottleneck = o->bottleneck;
    cp.idea = idea_text;
    cp.expected_gain = o->expected_gain;
    cp.levers = split_list(o->levers);
    cp.base = !o->base.empty() ? o->base : (idx.best ? idx.best->kernel : std::string());
    cp.created_at = cp.updated_at = now_iso8601();
    cp.extra = extra;
    if (!o->params.empty()) cp.extra["params"] = parse_json_object_arg(o->params, "--params");
    if (!is_valid_utf8(o->structural) || o->structural.size() > 4096) throw_usage("--structural must be a short UTF-8 text");
    cp.extra["structural"] = o->structural;
    {
      IdeaPlan plan = IdeaPlan::from_json(cp.extra);
      plan.base = cp.base;
      plan = complete_plan(History::load(ledger), plan, "");
      const json completed = plan.to_json();  // a named object: items() would dangle on a temporary
      for (auto& [k, v] : completed.items()) cp.extra[k] = v;
    }
    guard_idea(ctx.ws(), t, cp);
    try {
      if (auto prev = read_checkpoint(ctx.ws(), t); prev && prev->open()) {
        cp.extra["replaces"] = prev->to_json();
        ctx.note(fmt::format("checkpoint: replacing the open plan for {} ({})", prev->iter, checkpoint_status_name(prev->status)));
      }
    } catch (const Error&) {
      // A damaged old checkpoint is simply replaced.
    }
    write_checkpoint(ctx.ws(), t, cp);
    ctx.emit(cp.to_json());
    return ExitCode::ok;
  };
}

VerbRunner setup_checkpoint_read(CLI::App& app) {
  auto o = std::make_shared<TaskOptions>();
  add_task_options(app, *o);
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, *o);
    auto cp = read_checkpoint(ctx.ws(), t);
    if (!cp) throw_not_found("no checkpoint for " + t.id(), "write the plan first: `croq checkpoint write ...` (the last action of IDEA)");
    if (cp->status == CheckpointStatus::PLANNED) {
      cp->status = CheckpointStatus::IMPLEMENTING;
      cp->updated_at = now_iso8601();
      write_checkpoint(ctx.ws(), t, *cp, /*durable=*/false);
    }
    ctx.emit(cp->to_json());
    return ExitCode::ok;
  };
}

VerbRunner setup_checkpoint_verify(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string iter;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--iter", o->iter, "the iteration actually built (iter<NNN> or iter<NNN>_<tag>)")->required();
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);
    int built = parse_iter_number(o->iter);
    auto cp = read_checkpoint(ctx.ws(), t);
    if (!cp) throw_not_found("no checkpoint for " + t.id(), "write the plan first: `croq checkpoint write ...`");
    // A stored round closed its plan: verifying again would reopen it for an iteration the ledger
    // already holds, and no step could follow (store-round refuses the stored iteration, checkpoint
    // write the second idea of a round).
    if (cp->status == CheckpointStatus::CLOSED || Ledger(ctx.ws(), t).index().iters.contains(built)) {
      throw Error(ExitCode::conflict,
                  fmt::format("{} is already stored: its plan ({}) was closed by the round's store, there is nothing "
                              "to verify",
                              iter_number_name(built), cp->iter),
                  "`croq state` names the next step (a new round starts with `croq checkpoint write`)");
    }
    // The source named by --iter (iter<NNN>_<tag>), else the live one of its number (not a failed
    // attempt's, which keeps the number's name beside it).
    auto cand = find_live_source(ctx.ws(), t, try_parse_iter_id(o->iter) ? o->iter : iter_number_name(built));
    std::string cand_text = cand ? read_file(*cand).value_or("") : "";
    std::optional<fs::path> base;
    if (!cp->base.empty()) base = find_primary_source(ctx.ws(), t, cp->base);
    std::string base_text = base ? read_file(*base).value_or("") : "";
    DriftReport d = assess_drift(*cp, built, cand.has_value(), cand_text, base.has_value(), base_text);
    cp->status = d.significant ? CheckpointStatus::DRIFT : CheckpointStatus::VERIFIED;
    cp->updated_at = now_iso8601();
    cp->extra["verified_iter"] = iter_number_name(built);
    write_checkpoint(ctx.ws(), t, *cp, /*durable=*/false);
    if (cand) record_verification(ctx.ws(), t, o->iter, *cand, !d.significant);
    json doc = d.to_json();
    doc["status"] = checkpoint_status_name(cp->status);
    doc["planned_iter"] = cp->iter;
    doc["built_iter"] = iter_number_name(built);
    doc["candidate"] = cand ? json(ctx.ws().display(*cand)) : json(nullptr);
    doc["base"] = base ? json(ctx.ws().display(*base)) : json(nullptr);
    ctx.emit(doc);
    for (const auto& f : d.findings) ctx.note("checkpoint verify: " + f);
    return d.significant ? ExitCode::drift : ExitCode::ok;
  };
}

}  // namespace croq::cli
