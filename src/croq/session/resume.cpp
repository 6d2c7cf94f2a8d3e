// resume_state and reinforce (resume.hpp).
#include "croq/session/resume.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/workspace/sources.hpp"
#include "croq/util/error.hpp"

namespace croq {

namespace {

// Keys with the same operator, dtype and dimension multiset but another order.
std::vector<std::string> permuted_keys(const Workspace& ws, const TaskRef& task) {
  std::vector<std::string> out;
  auto mine = task.shape.dims;
  std::sort(mine.begin(), mine.end());
  for (const auto& k : ws.existing_shape_keys(task.gpu, task.dsl)) {
    if (k == task.shape.text) continue;
    auto other = try_parse_shape_key(k);
    if (!other) continue;
    auto d = other->dims;
    std::sort(d.begin(), d.end());
    if (d == mine && other->op == task.shape.op) out.push_back(k);
  }
  return out;
}

json brief_or_null(const std::optional<RecordBrief>& b) { return b ? b->to_json() : json(nullptr); }

}  // namespace

std::vector<std::string> skill_files_to_reread(const std::string& dsl) {
  return {".claude/skills/croq-tune/SKILL.md", ".claude/skills/croq-dsl-" + dsl + "/SKILL.md"};
}

json resume_state(const Workspace& ws, const TaskRef& task) {
  Ledger ledger(ws, task);
  json warnings = json::array();
  const auto keys = ws.existing_shape_keys(task.gpu, task.dsl);
  const bool key_exists = std::find(keys.begin(), keys.end(), task.shape.text) != keys.end();
  const bool has_ledger = ledger.exists();

  LedgerIndex idx;
  if (has_ledger) {
    std::error_code ec;
    if (fs::exists(ws.idea_log(task), ec)) {
      idx = ledger.index();
    } else {
      // Legacy: only a hand-written results.tsv.
      std::vector<std::string> w;
      for (const auto& r : ledger.read_tsv(&w)) idx.fold(r);
      for (auto& s : w) warnings.push_back(s);
      warnings.push_back("idea-log.jsonl is missing: state read from results.tsv (the next store-round imports it)");
    }
  }
  for (const auto& w : idx.warnings) warnings.push_back(w);

  json j;
  j["dsl"] = task.dsl;
  j["shape_key"] = task.shape.text;
  j["gpu"] = task.gpu;
  j["model"] = task.model;
  const auto& best = idx.best;
  j["current_best_tflops"] = best && best->tflops ? json(*best->tflops) : json(nullptr);
  j["current_best_kernel"] = best ? json(best->kernel) : json(nullptr);
  j["current_best_iter"] = best ? json(best->iter) : json(nullptr);
  j["last_round"] = idx.last ? idx.max_round : 0;
  // The seeds' last_iter is the full name of the last stored kernel ("iter030_bn64"); a record
  // without a kernel name gives its id.
  j["last_iter"] = idx.last ? json(idx.last->kernel.empty() ? idx.last->iter : idx.last->kernel) : json(nullptr);
  j["last_decision"] = idx.last ? json(idx.last->decision) : json(nullptr);
  j["last_bottleneck"] = idx.last ? json(idx.last->bottleneck) : json(nullptr);
  int reserved_top = 0;
  try {
    reserved_top = ledger.reservations().live_iters.max().value_or(0);
  } catch (const Error& e) {
    warnings.push_back(std::string("reservations: ") + e.what());
  }
  j["next_iter_number"] =
      std::max({idx.iters.max().value_or(0), reserved_top, ledger.highest_iter_on_disk().value_or(0)}) + 1;
  j["src_count"] = count_iteration_sources(ws, task);
  json open_cp = nullptr;
  try {
    if (auto cp = read_checkpoint(ws, task); cp && cp->open()) open_cp = cp->to_json();
  } catch (const Error& e) {
    warnings.push_back(std::string("checkpoint: ") + e.what());
  }
  j["open_checkpoint"] = open_cp;
  std::error_code ec;
  const bool files_ok = fs::exists(ws.results_tsv(task), ec) && fs::exists(ws.idea_log(task), ec);
  j["memory_files_ok"] = files_ok;
  if (has_ledger && !files_ok) warnings.push_back("results.tsv or idea-log.jsonl is missing");

  // croq's fields.
  json cfg = nullptr;
  try {
    if (auto c = read_task_config(ws, task)) cfg = *c;
  } catch (const Error& e) {
    warnings.push_back(std::string("task_config: ") + e.what());
  }
  j["task_uid"] = cfg.is_object() && cfg.contains("task_uid") ? cfg["task_uid"] : json(nullptr);
  j["baseline_tflops"] = idx.baseline && idx.baseline->tflops ? json(*idx.baseline->tflops) : json(nullptr);
  if (best && best->tflops && idx.baseline && idx.baseline->tflops && *idx.baseline->tflops > 0) {
    j["pct_of_baseline"] = std::round(*best->tflops / *idx.baseline->tflops * 10000.0) / 100.0;
  } else {
    j["pct_of_baseline"] = nullptr;
  }
  j["rounds"] = idx.max_round;
  j["records"] = idx.records;
  j["decisions"] = json::object();
  for (const auto& [k, v] : idx.decisions) j["decisions"][k] = v;
  j["discard_streak"] = idx.discard_streak;
  j["non_keep_streak"] = idx.non_keep_streak;
  j["last"] = brief_or_null(idx.last);
  j["fresh_start"] = !key_exists && !has_ledger;
  auto similar = permuted_keys(ws, task);
  j["similar_keys"] = similar;
  if (!key_exists && !similar.empty()) {
    warnings.push_back(fmt::format("{} has no session; {} exist(s) with the same dimensions in another order "
                                   "and are different shapes: not resumed",
                                   task.shape.text, fmt::join(similar, ", ")));
  }
  if (idx.torn_tail) warnings.push_back("idea-log.jsonl ends with a torn line (a store was interrupted)");
  j["warnings"] = warnings;
  return j;
}

Reinforce reinforce(const Workspace& ws, const TaskRef& task) {
  Ledger ledger(ws, task);
  if (!ledger.exists()) {
    throw_not_found(fmt::format("task {} has no stored rounds", task.id()), "store a round first (`croq store-round`)");
  }
  LedgerIndex idx = ledger.index();
  std::string best = "none yet";
  if (idx.best && idx.best->tflops) {
    best = fmt::format("{} {:.2f} TFLOPS", idx.best->kernel, *idx.best->tflops);
    if (idx.baseline && idx.baseline->tflops && *idx.baseline->tflops > 0) {
      best += fmt::format(" ({:.1f}% of baseline {:.2f})", *idx.best->tflops / *idx.baseline->tflops * 100.0,
                          *idx.baseline->tflops);
    }
  }
  std::string last = idx.last ? fmt::format("{} {} {}", idx.last->kernel, idx.last->decision, idx.last->bottleneck) : "none";
  int reserved_top = 0;
  try {
    reserved_top = ledger.reservations().live_iters.max().value_or(0);
  } catch (const Error&) {
    // A damaged reservations.json: resume and session validate report it.
  }
  int next = std::max(idx.iters.max().value_or(0), reserved_top) + 1;
  auto reread = skill_files_to_reread(task.dsl);
  Reinforce r;
  r.line = fmt::format("[reinforce] round {} | best {} | last {} | discard streak {} | next {} | re-read {} now, then start round {}",
                       idx.max_round, best, last, idx.discard_streak, iter_number_name(next), fmt::join(reread, " and "),
                       idx.max_round + 1);
  r.doc = {{"line", r.line},
           {"round", idx.max_round},
           {"best", brief_or_null(idx.best)},
           {"last", brief_or_null(idx.last)},
           {"discard_streak", idx.discard_streak},
           {"next_iter", iter_number_name(next)},
           {"next_round", idx.max_round + 1},
           {"reread", reread}};
  return r;
}

}  // namespace croq
