// State derivation and guards of the enforced protocol (protocol.hpp).
#include "croq/protocol/protocol.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/ledger/ledger.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

namespace croq {

const char* step_name(Step s) {
  switch (s) {
    case Step::PREPARE: return "PREPARE";
    case Step::PROFILE: return "PROFILE";
    case Step::IDEA: return "IDEA";
    case Step::IMPLEMENT: return "IMPLEMENT";
    case Step::VERIFY: return "VERIFY";
    case Step::MEASURE: return "MEASURE";
    case Step::DECIDE: return "DECIDE";
    case Step::STORE: return "STORE";
    case Step::SHAPE_COMPLETE: return "SHAPE_COMPLETE";
    case Step::NEXT_SHAPE: return "NEXT_SHAPE";
  }
  return "?";
}

json ProtocolConfig::to_json() const {
  return {{"schema", k_protocol_schema},
          {"mode", enforced ? "enforced" : "advisory"},
          {"target_rounds", target_rounds},
          {"start_round", start_round},
          {"started_at", started_at},
          {"max_attempts", max_attempts},
          {"max_active_bases", max_active_bases},
          {"macro_streak_limit", macro_streak_limit},
          {"decision_rule", rule.to_json()}};
}

ProtocolConfig ProtocolConfig::from_json(const json& j) {
  ProtocolConfig c;
  c.enforced = get_string(j, "mode").value_or("enforced") != "advisory";
  c.target_rounds = static_cast<int>(get_integer(j, "target_rounds").value_or(50));
  c.start_round = static_cast<int>(get_integer(j, "start_round").value_or(0));
  c.started_at = get_string(j, "started_at").value_or("");
  c.max_attempts = static_cast<int>(get_integer(j, "max_attempts").value_or(5));
  c.max_active_bases = static_cast<int>(get_integer(j, "max_active_bases").value_or(2));
  c.macro_streak_limit = static_cast<int>(get_integer(j, "macro_streak_limit").value_or(2));
  if (j.contains("decision_rule") && j["decision_rule"].is_object()) {
    const json& r = j["decision_rule"];
    c.rule.noise_floor = get_number(r, "noise_floor").value_or(c.rule.noise_floor);
    c.rule.k = get_number(r, "k").value_or(c.rule.k);
    c.rule.suspicious_gain = get_number(r, "suspicious_gain").value_or(c.rule.suspicious_gain);
    c.rule.suspicious_loss = get_number(r, "suspicious_loss").value_or(c.rule.suspicious_loss);
    c.rule.min_reps = static_cast<int>(get_integer(r, "min_reps").value_or(c.rule.min_reps));
    c.rule.pairs = static_cast<int>(get_integer(r, "pairs").value_or(c.rule.pairs));
    c.rule.paired_floor = get_number(r, "paired_floor").value_or(c.rule.paired_floor);
  }
  return c;
}

fs::path protocol_path(const Workspace& ws, const TaskRef& task) {
  return ws.kind_dir(task, ArtifactKind::logs) / "protocol.json";
}

std::optional<ProtocolConfig> read_protocol(const Workspace& ws, const TaskRef& task) {
  auto text = read_file(protocol_path(ws, task));
  if (!text) return std::nullopt;
  auto j = try_parse_json(*text);
  if (!j || !j->is_object() || get_string(*j, "schema").value_or("") != k_protocol_schema) {
    throw_corrupt(fmt::format("{} cannot be read", ws.display(protocol_path(ws, task))),
                  "recreate it with `croq protocol begin` (the ledger is not affected)");
  }
  return ProtocolConfig::from_json(*j);
}

void write_protocol(const Workspace& ws, const TaskRef& task, const ProtocolConfig& cfg) {
  atomic_write(protocol_path(ws, task), dump_pretty(cfg.to_json()));
}

json TaskState::to_json() const {
  return {{"step", step_name(step)}, {"next_action", next_action}, {"notes", notes}, {"details", details}};
}

[[noreturn]] void refuse(const Refusal& r) {
  throw Error(ExitCode::refused, fmt::format("{} refused ({}): {}", step_name(r.step), r.rule, r.reason), r.next_action,
              json{{"step", step_name(r.step)}, {"rule", r.rule}, {"reason", r.reason}, {"next_action", r.next_action}});
}

namespace {

std::string task_args(const TaskRef& t) {
  return fmt::format("--gpu {} --dsl {} --shape-key {} --model {}", t.gpu, t.dsl, t.shape.text, t.model);
}

bool enforced(const Workspace& ws, const TaskRef& task) {
  auto cfg = read_protocol(ws, task);
  return cfg && cfg->enforced;
}

ProtocolConfig config_or_default(const Workspace& ws, const TaskRef& task) {
  auto cfg = read_protocol(ws, task);
  if (cfg) return *cfg;
  ProtocolConfig c;
  c.enforced = false;
  return c;
}

// Build evidence of the planned iteration made after the plan was written.
std::optional<Evidence> build_after(const std::vector<Evidence>& all, const std::string& iter, const std::string& since) {
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->kind == EvidenceKind::build && it->iter == iter && it->timestamp >= since) return *it;
  }
  return std::nullopt;
}

std::optional<Evidence> latest_of(const std::vector<Evidence>& all, EvidenceKind kind, const std::string& kernel,
                                  const std::string& since = {}) {
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->kind == kind && (kernel.empty() || it->kernel == kernel) && it->timestamp >= since) return *it;
  }
  return std::nullopt;
}

int attempts_for(const Ledger& ledger, const std::string& planned_iter, const std::string& since) {
  int n = 0;
  for (const auto& a : ledger.read_attempts(nullptr)) {
    if (get_string(a, "planned_iter").value_or("") == planned_iter &&
        get_string(a, "timestamp").value_or("") >= since) {
      ++n;
    }
  }
  return n;
}

std::optional<Checkpoint> open_checkpoint(const Workspace& ws, const TaskRef& task) {
  try {
    auto cp = read_checkpoint(ws, task);
    if (cp && cp->open()) return cp;
  } catch (const Error&) {
  }
  return std::nullopt;
}

}  // namespace

TaskState derive_state(const Workspace& ws, const TaskRef& task) {
  TaskState s;
  Ledger ledger(ws, task);
  LedgerIndex idx = ledger.index();
  ProtocolConfig cfg = config_or_default(ws, task);
  const std::string args = task_args(task);
  const int completed = std::max(0, idx.max_round - cfg.start_round);
  s.details["mode"] = cfg.enforced ? "enforced" : "advisory";
  s.details["round"] = idx.max_round;
  s.details["next_round"] = idx.max_round + 1;
  s.details["budget"] = {{"target_rounds", cfg.target_rounds},
                         {"start_round", cfg.start_round},
                         {"completed", completed},
                         {"remaining", std::max(0, cfg.target_rounds - completed)}};
  s.details["best"] = idx.best ? idx.best->to_json() : json(nullptr);
  s.details["discard_streak"] = idx.discard_streak;
  if (!idx.baseline) {
    s.step = Step::PREPARE;
    s.next_action = fmt::format("croq baseline {} --task-uid <uid>", args);
    s.notes.push_back("no library baseline (iter000) yet");
    return s;
  }
  if (!idx.best) {
    s.step = Step::PREPARE;
    s.next_action = fmt::format("croq discover --dsl {} --operator {}; croq prepare {}; then build, measure and store "
                                "iter001 with --round 0",
                                task.dsl, operator_name(task.shape), args);
    s.notes.push_back("no starting kernel (iter001) stored yet");
    return s;
  }
  const auto evidence = read_evidence(ws, task);
  if (auto cp = open_checkpoint(ws, task)) {
    s.details["checkpoint"] = {{"iter", cp->iter}, {"status", checkpoint_status_name(cp->status)}, {"idea", cp->idea}};
    int attempts = attempts_for(ledger, cp->iter, cp->created_at);
    s.details["attempts"] = attempts;
    if (attempts >= cfg.max_attempts) {
      s.step = Step::STORE;
      s.next_action = fmt::format("croq store-round {} --iter {} --kernel {}_<tag> --decision COMPILE_FAIL ...", args,
                                  cp->iter, cp->iter);
      s.notes.push_back(fmt::format("{} failed attempts: abandon the idea", attempts));
      return s;
    }
    auto build = build_after(evidence, cp->iter, cp->created_at);
    const bool built_ok = build && get_string(build->summary, "verdict").value_or("OK") == "OK";
    if (cp->status == CheckpointStatus::DRIFT) {
      s.step = Step::IMPLEMENT;
      s.next_action = "fix the implementation to match the plan, rebuild, then `croq checkpoint verify` again";
      s.notes.push_back("checkpoint verify found significant drift");
      return s;
    }
    if (!built_ok) {
      s.step = Step::IMPLEMENT;
      s.next_action = fmt::format("croq next-iter {} --tag <tag>; write srcs/.../{}_<tag>.<ext>; croq build {} --iter {}_<tag>",
                                  args, cp->iter, args, cp->iter);
      if (build) s.notes.push_back("the last build failed: fix it (or log an attempt) and rebuild");
      return s;
    }
    if (cp->status != CheckpointStatus::VERIFIED) {
      s.step = Step::VERIFY;
      s.next_action = fmt::format("croq checkpoint verify {} --iter {}", args, build->kernel);
      return s;
    }
    auto meas = latest_of(evidence, EvidenceKind::measure, build->kernel, build->timestamp);
    if (!meas) {
      s.step = Step::MEASURE;
      s.next_action = fmt::format("croq measure {} --iter {}", args, build->kernel);
      return s;
    }
    s.step = Step::DECIDE;
    s.next_action = fmt::format("croq decide {} --measurement {}; then croq store-round {} --measurement {} ...", args,
                                meas->file, args, meas->file);
    return s;
  }
  if (completed >= cfg.target_rounds) {
    s.step = Step::SHAPE_COMPLETE;
    s.next_action = "the round budget is met: stop, or raise it with `croq protocol begin --rounds N`";
    return s;
  }
  History history = History::load(ledger);
  auto bases = history.active_bases(static_cast<size_t>(cfg.max_active_bases));
  json jb = json::array();
  std::optional<ActiveBase> profiled;
  for (const auto& b : bases) {
    jb.push_back(b.to_json());
    if (!profiled && latest_of(evidence, EvidenceKind::profile, b.kernel, b.timestamp)) profiled = b;
  }
  s.details["active_bases"] = jb;
  if (profiled) {
    s.step = Step::IDEA;
    s.next_action = fmt::format("croq checkpoint write {} --iter {} --base {} --bottleneck <from the profile> --idea \"...\" "
                                "--levers ... [--params JSON] [--structural \"...\"]",
                                args, iter_number_name(ledger.peek_next_iter()), profiled->kernel);
    return s;
  }
  s.step = Step::PROFILE;
  const std::string target = bases.empty() ? idx.best->kernel : bases.front().kernel;
  s.next_action = fmt::format("croq profile {} --iter {}", args, target);
  return s;
}

IdeaPlan complete_plan(const History& history, IdeaPlan plan, const std::string&) {
  if (plan.is_structural()) {
    plan.structure = "s:" + plan.combination_key();
  } else {
    std::string s = history.structure_of(plan.base);
    plan.structure = s.empty() ? plan.base : s;
  }
  return plan;
}

void guard_idea(const Workspace& ws, const TaskRef& task, const Checkpoint& cp) {
  if (!enforced(ws, task)) return;
  ProtocolConfig cfg = *read_protocol(ws, task);
  Ledger ledger(ws, task);
  LedgerIndex idx = ledger.index();
  const std::string args = task_args(task);
  if (!idx.baseline || !idx.best) {
    refuse({Step::IDEA, "prepare_first", "PREPARE is not complete: the baseline (iter000) and the starting kernel (iter001) must be stored first",
            derive_state(ws, task).next_action});
  }
  const auto evidence = read_evidence(ws, task);
  if (auto open = open_checkpoint(ws, task)) {
    if (build_after(evidence, open->iter, open->created_at)) {
      refuse({Step::IDEA, "one_idea_per_round",
              fmt::format("the idea planned for {} is already being implemented; store its round (KEEP, DISCARD or "
                          "COMPILE_FAIL) before planning another",
                          open->iter),
              derive_state(ws, task).next_action});
    }
  }
  History history = History::load(ledger);
  auto bases = history.active_bases(static_cast<size_t>(cfg.max_active_bases));
  IdeaPlan plan = IdeaPlan::from_json(cp.extra);
  plan.base = cp.base;
  std::optional<ActiveBase> base;
  for (const auto& b : bases) {
    if (b.kernel == plan.base) base = b;
  }
  if (!base) {
    std::string list;
    for (const auto& b : bases) list += (list.empty() ? "" : ", ") + b.kernel;
    refuse({Step::IDEA, "hill_climb_from_active_bases",
            fmt::format("{} is not the best kernel of an active base; derive the candidate from one of: {}",
                        plan.base.empty() ? "(no base)" : plan.base, list),
            fmt::format("pass --base {}", bases.empty() ? idx.best->kernel : bases.front().kernel)});
  }
  auto prof = latest_of(evidence, EvidenceKind::profile, base->kernel, base->timestamp);
  if (!prof) {
    refuse({Step::IDEA, "profile_before_idea",
            fmt::format("no profile of {} newer than its KEEP: every idea stands on a profile of the kernel it changes", base->kernel),
            fmt::format("croq profile {} --iter {}", args, base->kernel)});
  }
  if (auto b = get_string(prof->summary, "bottleneck"); b && *b != cp.bottleneck) {
    refuse({Step::IDEA, "bottleneck_from_profile",
            fmt::format("the profile of {} says {}, the plan says {}", base->kernel, *b, cp.bottleneck),
            fmt::format("pass --bottleneck {}", *b)});
  }
  if (!plan.params.empty() || !plan.structural.empty()) {
    if (history.tried(plan.combination_key())) {
      refuse({Step::IDEA, "no_repeat",
              "this combination (base x parameter set x structural change) was already tried; choose a different idea",
              "read the idea log (`croq resume --summary`) and plan something not tried yet"});
    }
  }
  if (history.macro_streak() >= cfg.macro_streak_limit && !plan.is_structural()) {
    refuse({Step::IDEA, "structural_after_two_macro",
            fmt::format("the last {} rounds were macro-only changes; this round must make a structural change",
                        history.macro_streak()),
            "plan a structural change (tiling, pipeline structure, warp specialisation, memory hierarchy, ...) and pass "
            "--structural \"<what changes>\""});
  }
  if (base->discard_streak >= 7) {
    // The cpp dsl has no SASS: its escalation is the fresh baseline profile alone.
    const bool needs_sass = task.dsl != "cpp";
    auto sass = latest_of(evidence, EvidenceKind::sass_compare, "", base->streak_since);
    auto bprof = latest_of(evidence, EvidenceKind::baseline_profile, "", base->streak_since);
    if ((needs_sass && !sass) || !bprof) {
      refuse({Step::IDEA, "escalate_at_7",
              needs_sass ? fmt::format("{} consecutive rounds on base {} were not kept: a SASS comparison against the "
                                       "baseline and a fresh baseline profile are required before the next idea",
                                       base->discard_streak, base->kernel)
                         : fmt::format("{} consecutive rounds on base {} were not kept: a fresh baseline profile is "
                                       "required before the next idea",
                                       base->discard_streak, base->kernel),
              needs_sass ? fmt::format("croq sass compare {} --iter {}; croq profile {} --baseline", args, base->kernel, args)
                         : fmt::format("croq profile {} --baseline", args)});
    }
  }
  if (base->discard_streak >= 8 && !plan.is_structural()) {
    bool other_base = bases.size() > 1;
    refuse({Step::IDEA, "structural_reset_at_8",
            fmt::format("{} consecutive rounds on base {} were not kept: make a structural reset{}", base->discard_streak,
                        base->kernel, other_base ? " or switch to the other active base" : ""),
            other_base ? fmt::format("pass --structural \"...\" or --base {}", bases[bases.front().kernel == base->kernel ? 1 : 0].kernel)
                       : "pass --structural \"...\""});
  }
}

void guard_implement(const Workspace& ws, const TaskRef& task, int iter_number, bool is_attempt) {
  if (!enforced(ws, task)) return;
  Ledger ledger(ws, task);
  LedgerIndex idx = ledger.index();
  if (!idx.best) return;  // PREPARE: the starting kernel is built without a plan
  ProtocolConfig cfg = *read_protocol(ws, task);
  auto cp = open_checkpoint(ws, task);
  const std::string args = task_args(task);
  if (!cp) {
    refuse({Step::IMPLEMENT, "checkpoint_before_implement",
            "there is no open plan: IMPLEMENT starts from the checkpoint written at the end of IDEA",
            derive_state(ws, task).next_action});
  }
  if (!is_attempt && iter_number != parse_iter_number(cp->iter)) {
    refuse({Step::IMPLEMENT, "build_the_plan",
            fmt::format("the plan is for {}, not {}", cp->iter, iter_number_name(iter_number)),
            fmt::format("build {} (or write a new plan first)", cp->iter)});
  }
  int attempts = attempts_for(ledger, cp->iter, cp->created_at);
  if (attempts >= cfg.max_attempts) {
    refuse({Step::IMPLEMENT, "abandon_after_5",
            fmt::format("the idea for {} has failed {} times: abandon it", cp->iter, attempts),
            fmt::format("croq store-round {} --iter {} --kernel {}_<tag> --decision COMPILE_FAIL --bottleneck {} --idea \"...\"",
                        args, cp->iter, cp->iter, cp->bottleneck)});
  }
}

void guard_measure(const Workspace& ws, const TaskRef& task, const std::string& kernel) {
  if (!enforced(ws, task)) return;
  Ledger ledger(ws, task);
  LedgerIndex idx = ledger.index();
  if (!idx.best) return;  // PREPARE: the starting kernel
  History history = History::load(ledger);
  if (!history.structure_of(kernel).empty()) return;  // re-measuring a kept kernel (re-run protocol)
  auto cp = open_checkpoint(ws, task);
  auto id = try_parse_iter_id(kernel);
  if (!cp || !id || cp->iter != id->number_name()) {
    refuse({Step::MEASURE, "measure_the_plan", fmt::format("{} is not the candidate of the open plan", kernel),
            derive_state(ws, task).next_action});
  }
  if (cp->status != CheckpointStatus::VERIFIED) {
    refuse({Step::MEASURE, "verify_before_measure",
            fmt::format("the plan for {} is {}: verify the build against the plan first", cp->iter, checkpoint_status_name(cp->status)),
            fmt::format("croq checkpoint verify {} --iter {}", task_args(task), kernel)});
  }
}

json DecisionContext::to_json() const {
  json j = result.to_json();
  j["best"] = best ? best->to_json() : json(nullptr);
  j["base_kernel"] = base_kernel;
  return j;
}

DecisionContext decide_for(const Workspace& ws, const TaskRef& task, const std::string& candidate_kernel,
                           const PerfSample& candidate, bool rerun_done) {
  DecisionContext ctx;
  ProtocolConfig cfg = config_or_default(ws, task);
  Ledger ledger(ws, task);
  auto records = ledger.read_all().records;
  History history = History::from_records(records);
  std::string base;
  if (auto cp = open_checkpoint(ws, task); cp && !cp->base.empty()) base = cp->base;
  if (base.empty()) {
    auto bases = history.active_bases();
    if (!bases.empty()) base = bases.front().kernel;
  }
  ctx.base_kernel = base;
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (it->kernel == base && (it->decision == Decision::KEEP)) {
      ctx.best = PerfSample::from_record(*it);
      break;
    }
  }
  // A record stored before measurements had a robust spread: its measurement file's samples give it.
  if (ctx.best && ctx.best->robust_cv < 0 && !ctx.best->file.empty()) {
    if (auto text = read_file(ws.root() / ctx.best->file)) {
      if (auto j = try_parse_json(*text)) ctx.best->robust_cv = PerfSample::from_measurement(*j).robust_cv;
    }
  }
  // After a re-run, the best's figure is its newest measurement.
  if (rerun_done && !base.empty()) {
    if (auto e = latest_valid_evidence(ws, task, EvidenceKind::measure, base)) {
      if (auto text = read_file(ws.root() / e->file)) {
        if (auto j = try_parse_json(*text)) {
          PerfSample s = PerfSample::from_measurement(*j);
          s.file = e->file;
          ctx.best = s;
        }
      }
    }
  }
  ctx.result = decide(candidate, ctx.best, cfg.rule, rerun_done);
  if (ctx.result.needs_pairs && !base.empty()) {
    // A close call: decided on the back-to-back pairs measured since the plan was written (or
    // since the candidate's first measurement, for a task without a plan).
    std::string since;
    if (auto cp = open_checkpoint(ws, task)) since = cp->created_at;
    const auto evidence = read_evidence(ws, task);
    if (since.empty()) {
      for (const auto& e : evidence) {
        if (e.kind == EvidenceKind::measure && e.kernel == candidate_kernel) {
          since = e.timestamp;
          break;
        }
      }
    }
    const DecisionResult first = ctx.result;
    ctx.result = decide_pairs(measured_pairs(ws, evidence, candidate_kernel, base, since), cfg.rule);
    ctx.result.pairs["first"] = {{"gain", std::round(first.gain * 1e5) / 1e5}, {"margin", std::round(first.margin * 1e5) / 1e5}};
    if (ctx.result.needs_pairs) {
      ctx.result.reason = first.reason + "; " + ctx.result.reason;
      ctx.result.pairs["next"] = pair_commands(ws, task, candidate_kernel, base, ctx.result.pairs["measured"].size(), cfg.rule.pairs);
    }
  }
  return ctx;
}

std::vector<MeasuredPair> measured_pairs(const Workspace& ws, const std::vector<Evidence>& evidence,
                                         const std::string& candidate, const std::string& best, const std::string& since) {
  // The measurements of the two kernels since `since` whose files are unchanged, in time order;
  // two neighbours of different kernels make a pair, taken greedily from the oldest.
  struct M {
    bool is_candidate;
    double tflops;
    std::string file;
  };
  std::vector<M> seq;
  for (const auto& e : evidence) {
    if (e.kind != EvidenceKind::measure || e.timestamp < since || (e.kernel != candidate && e.kernel != best)) continue;
    if (get_string(e.summary, "verdict").value_or("") != "PASS") continue;
    if (e.summary.value("contended", false)) continue;  // timed on a shared GPU: not evidence
    const auto abs = intact_file(ws, e);
    auto text = abs ? read_file(*abs) : std::nullopt;
    auto j = text ? try_parse_json(*text) : std::nullopt;
    if (!j) continue;
    const double t = get_number(*j, "tflops").value_or(0);
    if (t > 0) seq.push_back({e.kernel == candidate, t, e.file});
  }
  std::vector<MeasuredPair> pairs;
  for (size_t i = 0; i + 1 < seq.size();) {
    if (seq[i].is_candidate != seq[i + 1].is_candidate) {
      const M& c = seq[i].is_candidate ? seq[i] : seq[i + 1];
      const M& b = seq[i].is_candidate ? seq[i + 1] : seq[i];
      pairs.push_back({c.tflops, b.tflops, c.file, b.file});
      i += 2;
    } else {
      ++i;
    }
  }
  return pairs;
}

std::vector<std::string> pair_order(size_t measured, int pairs) {
  // After the candidate's own measurement: best; then (best, candidate) and (candidate, best)
  // alternately, so that a steady drift favours neither side (ABBA).
  std::vector<std::string> order;
  for (int i = static_cast<int>(measured) + 1; i <= pairs; ++i) {
    if (i == 1) order.push_back("best");
    else if (i % 2 == 0) order.insert(order.end(), {"best", "candidate"});
    else order.insert(order.end(), {"candidate", "best"});
  }
  return order;
}

std::vector<PairMeasurement> pair_plan(const Workspace& ws, const TaskRef& task, const std::string& candidate,
                                       const std::string& best, size_t measured, int pairs) {
  std::vector<PairMeasurement> plan;
  int n = static_cast<int>(measured);
  for (const auto& who : pair_order(measured, pairs)) {
    const std::string& k = who == "best" ? best : candidate;
    // A pair file already written (an earlier plan whose measurement did not count) is never
    // overwritten: the numbering moves past it.
    fs::path out;
    do {
      out = ws.kind_dir(task, ArtifactKind::perf) /
            fmt::format("pair_{}_{}_{}.json", candidate.substr(0, candidate.find('_')), ++n, k);
    } while (fs::exists(out));
    plan.push_back({k, out});
  }
  return plan;
}

json pair_commands(const Workspace& ws, const TaskRef& task, const std::string& candidate, const std::string& best,
                   size_t measured, int pairs) {
  json cmds = json::array();
  for (const auto& m : pair_plan(ws, task, candidate, best, measured, pairs)) {
    cmds.push_back(fmt::format("croq measure {} --iter {} --out {}", task_args(task), m.kernel, ws.display(m.out)));
  }
  return cmds;
}

void guard_store(const Workspace& ws, const TaskRef& task, const RoundRecord& record, const json& measurement) {
  if (!enforced(ws, task)) return;
  Ledger ledger(ws, task);
  LedgerIndex idx = ledger.index();
  const std::string args = task_args(task);
  const bool prep = !idx.best && record.round == 0;
  if (is_measured(record.decision) && !measurement.is_object()) {
    if (record.decision == Decision::BASELINE) {
      refuse({Step::STORE, "measured_numbers_only",
              "this task is enforced: the library baseline takes its figure from croq's own measurement, not a typed "
              "number",
              fmt::format("croq baseline {} --task-uid <uid>", args)});
    }
    refuse({Step::STORE, "measured_numbers_only",
            "this task is enforced: a KEEP or DISCARD takes its figure from a measurement file, not a typed number",
            fmt::format("croq measure {} --iter {}; then store-round --measurement <file>", args, record.kernel)});
  }
  if (record.decision == Decision::BASELINE) return;
  if (prep) return;
  auto cp = open_checkpoint(ws, task);
  std::string planned = get_string(record.extra, "planned_iter").value_or(record.iter);
  if (!cp || (cp->iter != planned && cp->iter != record.iter)) {
    refuse({Step::STORE, "checkpoint_matches_round",
            fmt::format("there is no open plan for {}: a round stores the idea planned in its checkpoint", planned),
            derive_state(ws, task).next_action});
  }
  const auto evidence = read_evidence(ws, task);
  if (is_measured(record.decision)) {
    // The measurement must be of what was built from the current source.
    auto build = latest_of(evidence, EvidenceKind::build, record.kernel, cp->created_at);
    if (!build) {
      refuse({Step::STORE, "measured_what_was_built", fmt::format("no build of {} since the plan was written", record.kernel),
              fmt::format("croq build {} --iter {}", args, record.kernel)});
    }
    std::string cand_sha = measurement.contains("candidate") ? get_string(measurement["candidate"], "sha256").value_or("") : "";
    std::string built_sha = get_string(build->summary, "output_sha256").value_or("");
    if (!built_sha.empty() && !cand_sha.empty() && built_sha != cand_sha) {
      refuse({Step::STORE, "measured_what_was_built",
              "the measurement's candidate hash differs from the last build's output: the candidate changed after it was built",
              fmt::format("rebuild and re-measure {}", record.kernel)});
    }
    if (auto src_sha = get_string(build->summary, "source_sha256")) {
      std::optional<std::string> src_file = get_string(build->summary, "source");
      if (src_file) {
        fs::path p = fs::path(*src_file).is_absolute() ? fs::path(*src_file) : ws.root() / *src_file;
        std::error_code ec;
        if (fs::exists(p, ec) && sha256_file(p) != *src_sha) {
          refuse({Step::STORE, "measured_what_was_built",
                  "the source changed after the build that was measured", fmt::format("rebuild and re-measure {}", record.kernel)});
        }
      }
    }
    if (get_string(measurement, "verdict").value_or("PASS") != "PASS") {
      refuse({Step::STORE, "verdict_matches_decision",
              fmt::format("the measurement's verdict is {}, so the decision cannot be {}",
                          get_string(measurement, "verdict").value_or(""), decision_name(record.decision)),
              "store the failure verdict as the decision"});
    }
    PerfSample cand = PerfSample::from_measurement(measurement);
    int cand_measures = 0;
    for (const auto& e : evidence) cand_measures += e.kind == EvidenceKind::measure && e.kernel == record.kernel ? 1 : 0;
    DecisionContext d0 = decide_for(ws, task, record.kernel, cand, false);
    bool rerun_done = false;
    if (d0.result.needs_rerun) {
      auto first = latest_of(evidence, EvidenceKind::measure, record.kernel);
      auto base_meas = latest_of(evidence, EvidenceKind::measure, d0.base_kernel, cp->created_at);
      rerun_done = cand_measures >= 2 && base_meas.has_value();
      (void)first;
      if (!rerun_done) {
        refuse({Step::STORE, "rerun_suspicious", d0.result.reason,
                fmt::format("croq measure {} --iter {}; croq measure {} --iter {}; then store with the new candidate measurement",
                            args, record.kernel, args, d0.base_kernel)});
      }
    }
    DecisionContext d = rerun_done ? decide_for(ws, task, record.kernel, cand, true) : d0;
    if (record.decision == Decision::KEEP && d.result.decision != Decision::KEEP) {
      std::string next = "store this round as DISCARD";
      if (d.result.needs_pairs && d.result.pairs.contains("next")) {
        std::vector<std::string> cmds = d.result.pairs["next"].get<std::vector<std::string>>();
        next = fmt::format("measure the pairs ({}), then store again; or store this round as DISCARD", fmt::join(cmds, "; "));
      }
      refuse({Step::STORE, "noise_aware_decision", d.result.reason, next});
    }
    return;
  }
  // Failures need evidence of the failure.
  if (record.decision == Decision::COMPILE_FAIL) {
    bool failed_build = false;
    for (const auto& e : evidence) {
      if (e.kind == EvidenceKind::build && e.iter == planned && e.timestamp >= cp->created_at &&
          get_string(e.summary, "verdict").value_or("OK") != "OK") {
        failed_build = true;
      }
    }
    if (!failed_build && attempts_for(ledger, planned, cp->created_at) == 0) {
      refuse({Step::STORE, "failure_needs_evidence",
              "COMPILE_FAIL needs a failed build (or logged attempts) of the planned iteration",
              fmt::format("croq build {} --iter {}_<tag>", args, planned)});
    }
    return;
  }
  if (!measurement.is_object() || get_string(measurement, "verdict").value_or("") != decision_name(record.decision)) {
    refuse({Step::STORE, "failure_needs_evidence",
            fmt::format("{} needs a measurement file with that verdict", decision_name(record.decision)),
            fmt::format("croq measure {} --iter {}; store with --measurement <file>", args, record.kernel)});
  }
}

}  // namespace croq
