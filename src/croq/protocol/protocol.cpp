// State derivation and guards of the enforced protocol (protocol.hpp).
#include "croq/protocol/protocol.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "croq/ledger/ledger.hpp"
#include "croq/protocol/command.hpp"
#include "croq/protocol/snapshot.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/read_count.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"
#include "croq/workspace/sources.hpp"

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
          {"escalate_streak", escalate_streak},
          {"structural_reset_streak", structural_reset_streak},
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
  c.escalate_streak = static_cast<int>(get_integer(j, "escalate_streak").value_or(7));
  c.structural_reset_streak = static_cast<int>(get_integer(j, "structural_reset_streak").value_or(8));
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
  if (c.enforced) c.rule = at_least_as_strict(c.rule);
  return c;
}

DecisionRule at_least_as_strict(const DecisionRule& r) {
  const DecisionRule d;  // croq's rule
  auto at_least = [](double v, double floor) { return std::isfinite(v) && v > floor ? v : floor; };
  auto at_most = [](double v, double ceiling) { return std::isfinite(v) && v < ceiling ? v : ceiling; };
  DecisionRule s = r;
  s.noise_floor = at_least(r.noise_floor, d.noise_floor);
  s.k = at_least(r.k, d.k);
  s.paired_floor = at_least(r.paired_floor, d.paired_floor);
  s.suspicious_gain = at_most(r.suspicious_gain, d.suspicious_gain);
  s.suspicious_loss = at_most(r.suspicious_loss, d.suspicious_loss);
  s.min_reps = std::max(r.min_reps, d.min_reps);
  s.pairs = r.pairs == 0 ? 0 : std::max(r.pairs, d.pairs);  // 0: no close calls, each one a DISCARD
  return s;
}

fs::path protocol_path(const Workspace& ws, const TaskRef& task) {
  return ws.kind_dir(task, ArtifactKind::logs) / "protocol.json";
}

namespace {

// A suspicious change's re-run is measured: the candidate measured at least twice, and the best
// (`base`) measured since the plan was written (`since`). The state and the store guard ask alike.
bool rerun_was_measured(const TaskSnapshot& snap, const std::string& candidate, const std::string& base,
                        const std::string& since) {
  int measures = 0;
  for (const auto& e : snap.evidence()) measures += e.kind == EvidenceKind::measure && e.kernel == candidate ? 1 : 0;
  return measures >= 2 && snap.latest(EvidenceKind::measure, base, since).has_value();
}

// Whether a record of the task's ledger was stored under enforcement (read only when protocol.json
// is missing: the ledger itself, not an index or marker file that could be edited apart from it).
bool ledger_was_enforced(const Workspace& ws, const TaskRef& task) {
  auto text = read_file(ws.idea_log(task));
  if (!text || text->find(k_record_protocol_field) == std::string::npos) return false;
  for (const RoundRecord& r : parse_idea_log(*text).records) {
    if (get_string(r.extra, k_record_protocol_field).value_or("") == "enforced") return true;
  }
  return false;
}

}  // namespace

std::optional<ProtocolConfig> read_protocol(const Workspace& ws, const TaskRef& task) {
  count_state_read(StateDoc::protocol);
  auto text = read_file(protocol_path(ws, task));
  if (!text) {
    if (!ledger_was_enforced(ws, task)) return std::nullopt;
    return ProtocolConfig{};  // enforced, the default settings
  }
  auto j = try_parse_json(*text);
  if (!j || !j->is_object() || get_string(*j, "schema").value_or("") != k_protocol_schema) {
    throw_corrupt(fmt::format("{} cannot be read", ws.display(protocol_path(ws, task))),
                  "recreate it with `croq protocol begin` (the ledger is not affected)");
  }
  return ProtocolConfig::from_json(*j);
}

void mark_enforced(const Workspace& ws, const TaskRef& task, json& record_extra) {
  auto cfg = read_protocol(ws, task);
  if (cfg && cfg->enforced) record_extra[k_record_protocol_field] = "enforced";
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

ProtocolConfig config_or_default(const Workspace& ws, const TaskRef& task) {
  auto cfg = read_protocol(ws, task);
  if (cfg) return *cfg;
  ProtocolConfig c;
  c.enforced = false;
  return c;
}

namespace {

// Whether a measurement was timed with the L2 left warm (croq measure --no-l2-flush).
bool timed_hot(const json& measurement) {
  if (!measurement.is_object() || !measurement.contains("timing") || !measurement["timing"].is_object()) return false;
  const json& t = measurement["timing"];
  auto it = t.find("l2_flush");
  return it != t.end() && it->is_boolean() && !it->get<bool>();
}

// B's layout in the task's library baseline (its result file), if there is one.
std::optional<std::string> baseline_b_layout(const Workspace& ws, const TaskRef& task) {
  auto text = read_file(ws.baseline_result(task));
  if (!text) return std::nullopt;
  auto doc = try_parse_json(*text);
  if (!doc || !doc->is_object()) return std::nullopt;
  auto layout = get_string(*doc, "b_layout");
  if (!layout || layout->empty()) return std::nullopt;
  return layout;
}

// A suggested command for this task: `croq <verb> --gpu .. --dsl .. --shape-key .. --model ..`.
CroqCommand cmd(const std::string& verb, const TaskRef& t,
                std::source_location site = std::source_location::current()) {
  CroqCommand c(verb, site);
  c.task(t);
  return c;
}

// The task's uid from its task_config.json, else a placeholder.
std::string task_uid_or_placeholder(const Workspace& ws, const TaskRef& task) {
  try {
    if (auto cfg = read_task_config(ws, task)) {
      if (auto uid = get_string(*cfg, "task_uid"); uid && !uid->empty()) return *uid;
    }
  } catch (const Error&) {
    // Only the wording of a suggested command depends on it; the guard's decision does not, and
    // croq session validate reports a damaged task_config.json.
  }
  return "<uid>";
}

// The iteration's source in srcs/ (iter<NNN>_<tag>.<ext>), as its kernel name; empty if none.
std::string source_kernel(const Workspace& ws, const TaskRef& task, const std::string& iter) {
  try {
    if (auto p = find_live_source(ws, task, iter)) return p->stem().string();
  } catch (const Error&) {
    // An unreadable srcs/ folder: there is no kernel name to suggest, and the guard says so.
  }
  return {};
}

// Build evidence of the planned iteration made after the plan was written.
std::optional<Evidence> build_after(const std::vector<Evidence>& all, const std::string& iter, const std::string& since) {
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->kind == EvidenceKind::build && it->iter == iter && it->timestamp >= since) return *it;
  }
  return std::nullopt;
}

// A source as croq compares it for repeats: comments and all white space removed, so that a
// candidate re-declared under another idea, or re-spaced, is recognised as the same code.
std::string normalised_source(const std::string& text, bool hash_comments) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      // A literal is kept as it is (its spaces matter).
      const size_t start = i;
      for (++i; i < text.size() && text[i] != c; ++i) {
        if (text[i] == '\\') ++i;
      }
      out.append(text, start, i - start + 1);
      continue;
    }
    if (hash_comments && c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (!hash_comments && c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (!hash_comments && c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const size_t e = text.find("*/", i + 2);
      i = e == std::string::npos ? text.size() : e + 1;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    out += c;
  }
  return out;
}

std::string normalised_source_hash(const fs::path& file) {
  auto text = read_file(file);
  if (!text) return {};
  const std::string ext = file.extension().string();
  return sha256_hex(normalised_source(*text, ext == ".py"));
}

}  // namespace

TaskState derive_state(const Workspace& ws, const TaskRef& task) {
  return derive_state(ws, task, TaskSnapshot(ws, task));
}

TaskState derive_state(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snap) {
  TaskState s;
  const LedgerIndex& idx = snap.index();
  const ProtocolConfig& cfg = snap.config();
  // Rounds actually stored since the budget began, not the highest round number: a record stored
  // under a jumped round number (store-round --round) completes one round, not the jump.
  int completed = 0;
  for (const auto& [lo, hi] : idx.rounds.ranges()) completed += std::max(0, hi - std::max(lo, cfg.start_round + 1) + 1);
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
    CroqCommand baseline = cmd("baseline", task);
    if (const std::string uid = task_uid_or_placeholder(ws, task); uid != "<uid>") baseline.opt("--task-uid", uid);
    s.next_action = baseline;
    s.notes.push_back("no library baseline (iter000) yet (the task's uid: the one it has, else a new one; pass "
                      "--task-uid to tie it to a monitor's task)");
    return s;
  }
  if (!snap.checkpoint_error().empty()) s.notes.push_back(snap.checkpoint_error());
  if (!idx.best) {
    // PREPARE's starting kernel: prepare (copy it as iter001), build, measure, store as round 0.
    s.step = Step::PREPARE;
    const std::string kernel = source_kernel(ws, task, "iter001");
    if (kernel.empty()) {
      s.next_action = cmd("prepare", task);
      s.notes.push_back("no starting kernel (iter001) yet: `prepare` copies the recommended one (`" +
                        CroqCommand("discover").opt("--dsl", task.dsl).opt("--operator", operator_name(task.shape)).text() +
                        "` lists them; pass --pick N or --from FILE to choose)");
      return s;
    }
    auto build = snap.latest(EvidenceKind::build, kernel);
    if (!build || get_string(build->summary, "verdict").value_or("OK") != "OK") {
      s.next_action = cmd("build", task).opt("--iter", kernel);
      s.notes.push_back(build ? "the starting kernel's last build failed: fix it and build again"
                              : "the starting kernel " + kernel + " is not built yet");
      return s;
    }
    auto meas = snap.latest(EvidenceKind::measure, kernel, build->timestamp);
    if (!meas || get_string(meas->summary, "verdict").value_or("") != "PASS" || meas->summary.value("contended", false)) {
      s.next_action = cmd("measure", task).opt("--iter", kernel);
      if (meas) s.notes.push_back("the last measurement of " + kernel + " did not pass: fix the kernel, build and measure again");
      return s;
    }
    // Still PREPARE (drivers key on the step): its last command stores the starting kernel.
    s.next_action = cmd("store-round", task)
                        .opt("--iter", "iter001")
                        .opt("--kernel", kernel)
                        .opt("--measurement", meas->file)
                        .opt("--decision", "KEEP")
                        .opt("--round", 0);
    s.notes.push_back("the starting kernel is measured: store it as round 0 (PREPARE; not counted against the budget)");
    return s;
  }
  if (auto cp = snap.open_checkpoint()) {
    s.details["checkpoint"] = {{"iter", cp->iter}, {"status", checkpoint_status_name(cp->status)}, {"idea", cp->idea}};
    int attempts = snap.attempts_for(cp->iter, cp->created_at);
    s.details["attempts"] = attempts;
    const std::string planned_kernel = source_kernel(ws, task, cp->iter);
    const std::string kernel_or_tag = planned_kernel.empty() ? cp->iter + "_<tag>" : planned_kernel;
    if (attempts >= cfg.max_attempts) {
      s.step = Step::STORE;
      s.next_action = cmd("store-round", task).opt("--iter", cp->iter).opt("--kernel", kernel_or_tag).opt("--decision", "COMPILE_FAIL");
      s.notes.push_back(fmt::format("{} failed attempts: abandon the idea", attempts));
      return s;
    }
    auto build = build_after(snap.evidence(), cp->iter, cp->created_at);
    const bool built_ok = build && get_string(build->summary, "verdict").value_or("OK") == "OK";
    if (cp->status == CheckpointStatus::DRIFT) {
      s.step = Step::IMPLEMENT;
      s.next_action = then({"fix the implementation to match the plan",
                            cmd("build", task).opt("--iter", kernel_or_tag),
                            cmd("checkpoint verify", task).opt("--iter", kernel_or_tag)});
      s.notes.push_back("checkpoint verify found significant drift");
      return s;
    }
    if (!built_ok) {
      s.step = Step::IMPLEMENT;
      if (planned_kernel.empty()) {
        // The planned number already reserved (croq next-iter ran): write the source; else reserve
        // it first (following "next-iter" again reserved the number after it, which the plan
        // refused).
        const auto planned = try_parse_iter_number(cp->iter);
        const bool reserved = planned && Ledger(ws, task).reservations().live_iters.contains(*planned);
        const std::string write = "write srcs/.../" + cp->iter + "_<tag>" + source_extensions(task.dsl).front();
        s.next_action = reserved ? then({write, cmd("build", task).opt("--iter", kernel_or_tag)})
                                 : then({cmd("next-iter", task).opt("--tag", "<tag>"), write,
                                         cmd("build", task).opt("--iter", kernel_or_tag)});
      } else {
        s.next_action = cmd("build", task).opt("--iter", planned_kernel);
      }
      if (build) {
        s.notes.push_back("the last build failed: fix it (or log an attempt with `" +
                          cmd("attempt", task).opt("--tag", "<tag>").opt("--reason", "code_bug").text() + "`) and rebuild");
      }
      return s;
    }
    if (cp->status != CheckpointStatus::VERIFIED) {
      s.step = Step::VERIFY;
      s.next_action = cmd("checkpoint verify", task).opt("--iter", build->kernel);
      return s;
    }
    auto meas = snap.latest(EvidenceKind::measure, build->kernel, build->timestamp);
    if (!meas) {
      s.step = Step::MEASURE;
      s.next_action = cmd("measure", task).opt("--iter", build->kernel);
      return s;
    }
    s.step = Step::DECIDE;
    const std::string verdict = get_string(meas->summary, "verdict").value_or("");
    CroqCommand store = cmd("store-round", task).opt("--iter", cp->iter).opt("--kernel", build->kernel).opt("--measurement", meas->file);
    if (verdict != "PASS") {
      // A failed candidate: its verdict is the round's decision (store-round derives it).
      s.next_action = store;
      s.notes.push_back("the measurement's verdict is " + verdict + ": store it as the round's decision, or fix and rebuild");
      return s;
    }
    // The decision croq would make now, so the next action is the one command to run.
    std::optional<std::string> decision;
    try {
      auto text = read_file(ws.root() / meas->file);
      auto j = text ? try_parse_json(*text) : std::nullopt;
      if (!j) s.notes.push_back(fmt::format("the measurement {} cannot be read: croq cannot decide for you", meas->file));
      {
        if (j) {
          const PerfSample cand = PerfSample::from_measurement(*j);
          DecisionContext d = decide_for(ws, task, snap, build->kernel, cand, false);
          // Re-run already: decided as store-round's guard decides it.
          if (d.result.needs_rerun && rerun_was_measured(snap, build->kernel, d.base_kernel, cp->created_at)) {
            d = decide_for(ws, task, snap, build->kernel, cand, true);
          }
          s.details["decision"] = d.to_json();
          if (d.result.needs_rerun) {
            s.next_action = cmd("measure", task).opt("--iter", build->kernel).flag("--pairs");
            s.notes.push_back(d.result.reason);
            return s;
          }
          if (d.result.needs_pairs) {
            s.next_action = cmd("measure", task).opt("--iter", build->kernel).flag("--pairs");
            s.notes.push_back(d.result.reason);
            return s;
          }
          decision = decision_name(d.result.decision);
        }
      }
    } catch (const Error& e) {
      s.notes.push_back(fmt::format("no decision from {}: {}", meas->file, e.what()));
    }
    // Still DECIDE (drivers key on the step); the next action stores the decision croq made.
    s.next_action = store.opt("--decision", decision.value_or("<KEEP|DISCARD>"));
    return s;
  }
  if (completed >= cfg.target_rounds) {
    s.step = Step::SHAPE_COMPLETE;
    std::error_code ec;
    if (fs::exists(ws.kind_dir(task, ArtifactKind::logs) / "tune.json", ec)) {
      // croq tune drives this task (it wrote tune.json): it begins the protocol itself, and the
      // same command runs <N> more rounds.
      s.next_action = fmt::format(
          "the round budget is met: stop, or run <N> more rounds of croq's search with `croq tune {} --gpu {} "
          "--dsl {} --model {} --rounds <N>`",
          task.shape.text, task.gpu, task.dsl, task.model);
    } else {
      s.next_action = "the round budget is met: stop, or raise it with `" +
                      cmd("protocol begin", task).opt("--rounds", "<N>").text() + "`";
    }
    return s;
  }
  const History& history = snap.history();
  auto bases = history.active_bases(static_cast<size_t>(cfg.max_active_bases));
  json jb = json::array();
  std::optional<ActiveBase> profiled;
  std::optional<Evidence> profile;
  for (const auto& b : bases) jb.push_back(b.to_json());
  // The next idea builds on the best base: it is profiled first when it has no fresh profile (an
  // idea may still derive from the other active base, which the driver names with --base; before,
  // the state pointed at the older, slower base right after a KEEP).
  if (!bases.empty()) {
    if (auto p = snap.latest(EvidenceKind::profile, bases.front().kernel, bases.front().timestamp)) {
      profiled = bases.front();
      profile = p;
    }
  }
  s.details["active_bases"] = jb;
  if (profiled) {
    s.step = Step::IDEA;
    const std::string bottleneck = get_string(profile->summary, "bottleneck").value_or("<from the profile>");
    s.next_action = cmd("checkpoint write", task)
                        .opt("--iter", iter_number_name(snap.next_iter()))
                        .opt("--base", profiled->kernel)
                        .opt("--bottleneck", bottleneck)
                        .opt("--idea", "<what changes and why>")
                        .opt("--levers", "<macros>");
    s.notes.push_back("add --params '{...}' for the parameter set and --structural \"...\" for a structural change");
    return s;
  }
  s.step = Step::PROFILE;
  const std::string target = bases.empty() ? idx.best->kernel : bases.front().kernel;
  s.next_action = cmd("profile", task).opt("--iter", target);
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
  auto protocol = read_protocol(ws, task);
  if (!protocol || !protocol->enforced) return;
  guard_idea(ws, task, TaskSnapshot(ws, task, std::move(protocol)), cp);
}

void guard_idea(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snap, const Checkpoint& cp) {
  if (!snap.enforced()) return;
  const ProtocolConfig& cfg = snap.config();
  const LedgerIndex& idx = snap.index();
  if (!idx.baseline || !idx.best) {
    refuse({Step::IDEA, "prepare_first", "PREPARE is not complete: the baseline (iter000) and the starting kernel (iter001) must be stored first",
            derive_state(ws, task, snap).next_action});
  }
  if (auto open = snap.open_checkpoint()) {
    if (build_after(snap.evidence(), open->iter, open->created_at)) {
      refuse({Step::IDEA, "one_idea_per_round",
              fmt::format("the idea planned for {} is already being implemented; store its round (KEEP, DISCARD or "
                          "COMPILE_FAIL) before planning another",
                          open->iter),
              derive_state(ws, task, snap).next_action});
    }
  }
  const History& history = snap.history();
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
  auto prof = snap.latest(EvidenceKind::profile, base->kernel, base->timestamp);
  if (!prof) {
    refuse({Step::IDEA, "profile_before_idea",
            fmt::format("no profile of {} newer than its KEEP: every idea stands on a profile of the kernel it changes", base->kernel),
            cmd("profile", task).opt("--iter", base->kernel)});
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
  if (base->discard_streak >= cfg.escalate_streak) {
    // The cpp dsl has no SASS: its escalation is the fresh baseline profile alone.
    const bool needs_sass = task.dsl != "cpp";
    auto sass = snap.latest(EvidenceKind::sass_compare, "", base->streak_since);
    auto bprof = snap.latest(EvidenceKind::baseline_profile, "", base->streak_since);
    if ((needs_sass && !sass) || !bprof) {
      refuse({Step::IDEA, "escalate_at_7",
              needs_sass ? fmt::format("{} consecutive rounds on base {} were not kept: a SASS comparison against the "
                                       "baseline and a fresh baseline profile are required before the next idea",
                                       base->discard_streak, base->kernel)
                         : fmt::format("{} consecutive rounds on base {} were not kept: a fresh baseline profile is "
                                       "required before the next idea",
                                       base->discard_streak, base->kernel),
              needs_sass ? then({cmd("sass compare", task).opt("--iter", base->kernel), cmd("profile", task).flag("--baseline")})
                         : cmd("profile", task).flag("--baseline").text()});
    }
  }
  if (base->discard_streak >= cfg.structural_reset_streak && !plan.is_structural()) {
    bool other_base = bases.size() > 1;
    refuse({Step::IDEA, "structural_reset_at_8",
            fmt::format("{} consecutive rounds on base {} were not kept: make a structural reset{}", base->discard_streak,
                        base->kernel, other_base ? " or switch to the other active base" : ""),
            other_base ? fmt::format("pass --structural \"...\" or --base {}", bases[bases.front().kernel == base->kernel ? 1 : 0].kernel)
                       : "pass --structural \"...\""});
  }
}

void guard_implement(const Workspace& ws, const TaskRef& task, int iter_number, bool is_attempt) {
  auto protocol = read_protocol(ws, task);
  if (!protocol || !protocol->enforced) return;
  guard_implement(ws, task, TaskSnapshot(ws, task, std::move(protocol)), iter_number, is_attempt);
}

void guard_implement(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snap, int iter_number, bool is_attempt) {
  if (!snap.enforced()) return;
  if (!snap.index().best) return;  // PREPARE: the starting kernel is built without a plan
  const ProtocolConfig& cfg = snap.config();
  auto cp = snap.open_checkpoint();
  if (!cp) {
    refuse({Step::IMPLEMENT, "checkpoint_before_implement",
            "there is no open plan: IMPLEMENT starts from the checkpoint written at the end of IDEA",
            derive_state(ws, task, snap).next_action});
  }
  if (!is_attempt && iter_number != parse_iter_number(cp->iter)) {
    refuse({Step::IMPLEMENT, "build_the_plan",
            fmt::format("the plan is for {}, not {}", cp->iter, iter_number_name(iter_number)),
            fmt::format("build {} (or write a new plan first)", cp->iter)});
  }
  int attempts = snap.attempts_for(cp->iter, cp->created_at);
  if (attempts >= cfg.max_attempts) {
    refuse({Step::IMPLEMENT, "abandon_after_5",
            fmt::format("the idea for {} has failed {} times: abandon it", cp->iter, attempts),
            cmd("store-round", task)
                .opt("--iter", cp->iter)
                .opt("--kernel", source_kernel(ws, task, cp->iter).empty() ? cp->iter + "_<tag>" : source_kernel(ws, task, cp->iter))
                .opt("--decision", "COMPILE_FAIL")});
  }
}

void record_verification(const Workspace& ws, const TaskRef& task, const std::string& kernel, const fs::path& source,
                         bool verified) {
  record_evidence(ws, task, EvidenceKind::verify, kernel, source,
                  {{"status", verified ? "VERIFIED" : "DRIFT"}, {"source_sha256", sha256_file(source)}});
}

void guard_measure(const Workspace& ws, const TaskRef& task, const std::string& kernel) {
  auto protocol = read_protocol(ws, task);
  if (!protocol || !protocol->enforced) return;
  guard_measure(ws, task, TaskSnapshot(ws, task, std::move(protocol)), kernel);
}

void guard_measure(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snap, const std::string& kernel) {
  if (!snap.enforced()) return;
  if (!snap.index().best) return;  // PREPARE: the starting kernel
  if (!snap.history().structure_of(kernel).empty()) return;  // re-measuring a kept kernel (re-run protocol)
  auto cp = snap.open_checkpoint();
  auto id = try_parse_iter_id(kernel);
  if (!cp || !id || cp->iter != id->number_name()) {
    refuse({Step::MEASURE, "measure_the_plan", fmt::format("{} is not the candidate of the open plan", kernel),
            derive_state(ws, task, snap).next_action});
  }
  // No repeats, by what croq sees: the candidate's source (comments and spacing aside) is not one
  // an earlier round already measured, whatever the plan declared.
  if (auto src = find_primary_source(ws, task, kernel)) {
    const std::string mine = normalised_source_hash(*src);
    for (const auto& r : snap.records()) {
      if (r.kernel == kernel || !is_measured(r.decision) || r.decision == Decision::BASELINE) continue;
      auto other = find_primary_source(ws, task, r.kernel);
      if (!mine.empty() && other && normalised_source_hash(*other) == mine) {
        refuse({Step::MEASURE, "no_repeat",
                fmt::format("{}'s source is the same code as {} (round {}, {}): the candidate repeats a tried one, "
                            "whatever its plan says",
                            kernel, r.kernel, r.round, decision_name(r.decision)),
                "plan a different idea (" + cmd("checkpoint write", task).opt("--iter", cp->iter).opt("--base", cp->base)
                    .opt("--bottleneck", cp->bottleneck).opt("--idea", "<what changes and why>").text() +
                    ") and implement it"});
      }
    }
  }
  if (cp->status != CheckpointStatus::VERIFIED) {
    refuse({Step::MEASURE, "verify_before_measure",
            fmt::format("the plan for {} is {}: verify the build against the plan first", cp->iter, checkpoint_status_name(cp->status)),
            cmd("checkpoint verify", task).opt("--iter", kernel)});
  }
  // The status is the checkpoint's word; the verification behind it is evidence: croq checkpoint
  // verify's, since the plan, of this iteration, of the source as it is now.
  bool verified = false;
  const auto src = find_primary_source(ws, task, kernel);
  const std::string now_sha = src ? sha256_file(*src) : "";
  for (const Evidence& e : snap.evidence()) {
    if (e.kind != EvidenceKind::verify || e.timestamp < cp->created_at) continue;
    // `croq checkpoint verify --iter` names the iteration (iter002) or its kernel (iter002_tag).
    const std::string n = id->number_name();
    if (e.kernel.rfind(n, 0) != 0 || (e.kernel.size() > n.size() && e.kernel[n.size()] != '_')) continue;
    verified = get_string(e.summary, "status").value_or("") == "VERIFIED" &&
               get_string(e.summary, "source_sha256").value_or("") == now_sha;
  }
  if (!verified) {
    refuse({Step::MEASURE, "verify_before_measure",
            fmt::format("the plan for {} says VERIFIED, but croq checkpoint verify has not verified {} as its source "
                        "is now (a status written by hand, or the source changed since)",
                        cp->iter, kernel),
            cmd("checkpoint verify", task).opt("--iter", kernel)});
  }
}

json DecisionContext::to_json() const {
  json j = result.to_json();
  j["best"] = best ? best->to_json() : json(nullptr);
  j["base_kernel"] = base_kernel;
  return j;
}

namespace {

// A measurement of the back-to-back pairs of a close call (pair_plan names their files).
bool is_pair_measurement(const Evidence& e) { return fs::path(e.file).filename().string().rfind("pair_", 0) == 0; }

// The median (by TFLOPS) of a kernel's passing measurements since `since`, the back-to-back pairs
// aside, each read from its file with the hash its evidence recorded; nothing with fewer than two.
std::optional<PerfSample> median_measurement(const Workspace& ws, const std::vector<Evidence>& evidence,
                                             const std::string& kernel, const std::string& since) {
  std::vector<PerfSample> all;
  for (const Evidence& e : evidence) {
    if (e.kind != EvidenceKind::measure || e.kernel != kernel || e.timestamp < since || is_pair_measurement(e)) continue;
    const auto file = intact_file(ws, e);
    auto text = file ? read_file(*file) : std::nullopt;
    auto j = text ? try_parse_json(*text) : std::nullopt;
    if (!j || !j->is_object() || get_string(*j, "verdict").value_or("") != "PASS") continue;
    PerfSample sample = PerfSample::from_measurement(*j);
    sample.file = e.file;
    if (sample.tflops > 0) all.push_back(sample);
  }
  if (all.size() < 2) return std::nullopt;
  std::sort(all.begin(), all.end(), [](const PerfSample& a, const PerfSample& b) { return a.tflops < b.tflops; });
  return all[(all.size() - 1) / 2];
}

}  // namespace

DecisionContext decide_for(const Workspace& ws, const TaskRef& task, const std::string& candidate_kernel,
                           const PerfSample& candidate, bool rerun_done) {
  return decide_for(ws, task, TaskSnapshot(ws, task), candidate_kernel, candidate, rerun_done);
}

DecisionContext decide_for(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snap,
                           const std::string& candidate_kernel, const PerfSample& candidate, bool rerun_done) {
  DecisionContext ctx;
  const ProtocolConfig& cfg = snap.config();
  const auto& records = snap.records();
  const History& history = snap.history();
  std::string base;
  if (auto cp = snap.open_checkpoint(); cp && !cp->base.empty()) base = cp->base;
  if (base.empty()) {
    auto bases = history.active_bases(static_cast<size_t>(cfg.max_active_bases));
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
    if (auto e = snap.latest_valid(EvidenceKind::measure, base)) {
      if (auto text = read_file(ws.root() / e->file)) {
        if (auto j = try_parse_json(*text)) {
          PerfSample s = PerfSample::from_measurement(*j);
          s.file = e->file;
          ctx.best = s;
        }
      }
    }
  }
  // Several measurements of the candidate since its latest build: the decision takes their median,
  // so measuring again until one run comes out lucky does not move it (a stored record's figure is
  // still its newest measurement's).
  PerfSample cand = candidate;
  if (auto built = snap.latest(EvidenceKind::build, candidate_kernel, "")) {
    if (auto median = median_measurement(ws, snap.evidence(), candidate_kernel, built->timestamp)) cand = *median;
  }
  ctx.result = decide(cand, ctx.best, cfg.rule, rerun_done);
  if (base.empty()) return ctx;
  // The back-to-back pairs measured since the plan was written (or since the candidate's first
  // measurement, for a task without a plan).
  std::string since;
  if (auto cp = snap.open_checkpoint()) since = cp->created_at;
  const auto& evidence = snap.evidence();
  if (since.empty()) {
    for (const auto& e : evidence) {
      if (e.kind == EvidenceKind::measure && e.kernel == candidate_kernel) {
        since = e.timestamp;
        break;
      }
    }
  }
  auto pairs = measured_pairs(ws, evidence, candidate_kernel, base, since);
  // A close call is decided on the pairs; and pairs once measured decide, whatever a single
  // measurement says against the best's older figure (before, a pair file stored on its own cleared
  // the margin the pairs had refused).
  if (ctx.result.needs_pairs || (!pairs.empty() && !ctx.result.needs_rerun)) {
    const DecisionResult first = ctx.result;
    ctx.result = decide_pairs(std::move(pairs), cfg.rule);
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
    cmds.push_back(cmd("measure", task).opt("--iter", m.kernel).opt("--out", ws.display(m.out)).text());
  }
  return cmds;
}

void guard_store(const Workspace& ws, const TaskRef& task, const RoundRecord& record, const json& measurement) {
  auto protocol = read_protocol(ws, task);
  if (!protocol || !protocol->enforced) return;
  guard_store(ws, task, TaskSnapshot(ws, task, std::move(protocol)), record, measurement);
}

void guard_store(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snap, const RoundRecord& record,
                 const json& measurement) {
  if (!snap.enforced()) return;
  const LedgerIndex& idx = snap.index();
  const bool prep = !idx.best && record.round == 0;
  if (is_measured(record.decision) && !measurement.is_object()) {
    if (record.decision == Decision::BASELINE) {
      refuse({Step::STORE, "measured_numbers_only",
              "this task is enforced: the library baseline takes its figure from croq's own measurement, not a typed "
              "number",
              cmd("baseline", task)});
    }
    refuse({Step::STORE, "measured_numbers_only",
            "this task is enforced: a KEEP or DISCARD takes its figure from a measurement file, not a typed number",
            then({cmd("measure", task).opt("--iter", record.kernel),
                  cmd("store-round", task).opt("--iter", record.iter).opt("--kernel", record.kernel).opt("--measurement", "<file>")})});
  }
  if (record.decision == Decision::BASELINE) return;
  if (prep) return;
  auto cp = snap.open_checkpoint();
  std::string planned = get_string(record.extra, "planned_iter").value_or(record.iter);
  if (!cp || (cp->iter != planned && cp->iter != record.iter)) {
    refuse({Step::STORE, "checkpoint_matches_round",
            fmt::format("there is no open plan for {}: a round stores the idea planned in its checkpoint", planned),
            derive_state(ws, task, snap).next_action});
  }
  const auto& evidence = snap.evidence();
  if (is_measured(record.decision)) {
    // The measurement must be of what was built from the current source.
    auto build = snap.latest(EvidenceKind::build, record.kernel, cp->created_at);
    if (!build) {
      refuse({Step::STORE, "measured_what_was_built", fmt::format("no build of {} since the plan was written", record.kernel),
              cmd("build", task).opt("--iter", record.kernel)});
    }
    // The kernel's newest measurement since that build: its newest of all, or its newest outside
    // the back-to-back pairs of a close call (the round's own measurement, decided on the pairs). A
    // driver does not pick the luckiest of several runs.
    if (record.extra.contains("measurement") && record.extra["measurement"].is_object()) {
      const std::string stored_sha = get_string(record.extra["measurement"], "sha256").value_or("");
      std::optional<Evidence> newest, newest_any;
      for (const Evidence& e : evidence) {
        if (e.kind != EvidenceKind::measure || e.kernel != record.kernel || e.timestamp < build->timestamp) continue;
        newest_any = e;
        if (!is_pair_measurement(e)) newest = e;
      }
      if (!newest) newest = newest_any;
      if (newest && !stored_sha.empty() && newest->sha256 != stored_sha && newest_any->sha256 != stored_sha) {
        refuse({Step::STORE, "newest_measurement",
                fmt::format("this task is enforced: the round stores {}'s newest measurement since its build ({}), "
                            "not an earlier one",
                            record.kernel, newest->file),
                then({cmd("store-round", task)
                          .opt("--iter", record.iter)
                          .opt("--kernel", record.kernel)
                          .opt("--measurement", newest->file),
                      "or measure again and store that"})});
      }
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
    // Evidence is timed by croq's method: cold (the L2 flushed before each repetition), in the
    // B layout the baseline was measured in. A hot run (--no-l2-flush) or another layout measures
    // something else, and a figure chosen that way is not a gain.
    if (timed_hot(measurement)) {
      refuse({Step::STORE, "measurement_method",
              "this task is enforced: the measurement was timed hot (--no-l2-flush), not by croq's method (the L2 "
              "flushed before each repetition, as the baseline and the best were)",
              then({cmd("measure", task).opt("--iter", record.kernel), "store with that measurement"})});
    }
    if (auto base_layout = baseline_b_layout(ws, task)) {
      const std::string layout = measurement.contains("problem") && measurement["problem"].is_object()
                                     ? get_string(measurement["problem"], "b_layout").value_or("")
                                     : "";
      if (!layout.empty() && layout != *base_layout) {
        refuse({Step::STORE, "measurement_method",
                fmt::format("this task is enforced: the measurement's B is {}-major, the baseline's {}-major: a "
                            "figure in another layout is another problem",
                            layout, *base_layout),
                then({cmd("measure", task).opt("--iter", record.kernel).opt("--b-layout", *base_layout),
                      "store with that measurement"})});
      }
    }
    if (get_string(measurement, "verdict").value_or("PASS") != "PASS") {
      refuse({Step::STORE, "verdict_matches_decision",
              fmt::format("the measurement's verdict is {}, so the decision cannot be {}",
                          get_string(measurement, "verdict").value_or(""), decision_name(record.decision)),
              "store the failure verdict as the decision"});
    }
    PerfSample cand = PerfSample::from_measurement(measurement);
    DecisionContext d0 = decide_for(ws, task, snap, record.kernel, cand, false);
    bool rerun_done = false;
    if (d0.result.needs_rerun) {
      rerun_done = rerun_was_measured(snap, record.kernel, d0.base_kernel, cp->created_at);
      if (!rerun_done) {
        refuse({Step::STORE, "rerun_suspicious", d0.result.reason,
                then({cmd("measure", task).opt("--iter", record.kernel).flag("--pairs"),
                      "store with the new candidate measurement"})});
      }
    }
    DecisionContext d = rerun_done ? decide_for(ws, task, snap, record.kernel, cand, true) : d0;
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
    if (!failed_build && snap.attempts_for(planned, cp->created_at) == 0) {
      refuse({Step::STORE, "failure_needs_evidence",
              "COMPILE_FAIL needs a failed build (or logged attempts) of the planned iteration",
              cmd("build", task).opt("--iter", planned + "_<tag>")});
    }
    return;
  }
  if (!measurement.is_object() || get_string(measurement, "verdict").value_or("") != decision_name(record.decision)) {
    refuse({Step::STORE, "failure_needs_evidence",
            fmt::format("{} needs a measurement file with that verdict", decision_name(record.decision)),
            then({cmd("measure", task).opt("--iter", record.kernel),
                  cmd("store-round", task).opt("--iter", record.iter).opt("--kernel", record.kernel).opt("--measurement", "<file>")})});
  }
}

}  // namespace croq
