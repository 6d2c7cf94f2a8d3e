// Validation and cleaning of task ledgers (maintenance.hpp).
#include "croq/session/maintenance.hpp"

#include <ctime>
#include <fmt/format.h>
#include <map>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/workspace/sources.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/time.hpp"

namespace croq {

json TaskValidation::to_json() const {
  return {{"task", task.id()}, {"pass", errors.empty()}, {"errors", errors}, {"warnings", warnings}};
}

TaskValidation validate_task(const Workspace& ws, const TaskRef& task) {
  TaskValidation v;
  v.task = task;
  Ledger ledger(ws, task);
  std::error_code ec;
  const bool has_jsonl = fs::exists(ws.idea_log(task), ec);
  const bool has_tsv = fs::exists(ws.results_tsv(task), ec);
  if (!has_jsonl && !has_tsv) {
    v.warnings.push_back("no ledger yet (no idea-log.jsonl or results.tsv)");
  }
  std::vector<RoundRecord> records;
  if (has_jsonl) {
    JsonlParse p = ledger.read_all();
    for (auto& w : p.warnings) {
      if (p.torn_tail && w.find("torn") != std::string::npos) v.warnings.push_back(w);
      else v.errors.push_back(w);
    }
    records = std::move(p.records);
  } else if (has_tsv) {
    v.warnings.push_back("idea-log.jsonl is missing; results.tsv is the only record (the next store-round imports it)");
    std::vector<std::string> w;
    records = ledger.read_tsv(&w);
    for (auto& s : w) v.errors.push_back(s);
  }
  std::map<int, int> rounds, iters, attempts;
  for (const auto& r : records) {
    if (r.round >= 1 && ++rounds[r.round] == 2) v.errors.push_back(fmt::format("round {} is stored more than once", r.round));
    if (auto n = r.iter_number(); n && !is_failure(r.decision) && ++iters[*n] == 2) {
      v.errors.push_back(fmt::format("{} is stored more than once", iter_number_name(*n)));
    }
    if (auto a = r.attempt_index(); a && ++attempts[*a] == 2) {
      v.errors.push_back(fmt::format("attempt{} is stored more than once", attempt_letters(*a)));
    }
    if (r.bottleneck == "unknown") v.errors.push_back(fmt::format("{}: bottleneck 'unknown' is forbidden", r.kernel));
    else if (!is_valid_bottleneck(r.bottleneck) && r.bottleneck != k_no_bottleneck) {
      v.errors.push_back(fmt::format("{}: unknown bottleneck '{}'", r.kernel, r.bottleneck));
    } else if (r.bottleneck == k_no_bottleneck && r.round != 0) {
      v.errors.push_back(fmt::format("{}: a tuning round (round {}) needs a bottleneck", r.kernel, r.round));
    }
    if (is_measured(r.decision) && !r.tflops) v.errors.push_back(fmt::format("{}: {} without TFLOPS", r.kernel, decision_name(r.decision)));
    if (auto n = r.iter_number(); n && *n >= 1 && !is_failure(r.decision) && !find_primary_source(ws, task, r.kernel) &&
                                  !find_primary_source(ws, task, r.iter)) {
      v.warnings.push_back(fmt::format("{}: no source in srcs/", r.kernel));
    }
  }
  if (has_jsonl) {
    std::vector<std::string> w;
    auto rows = ledger.read_tsv(&w);
    if (!has_tsv) v.errors.push_back("results.tsv is missing (it is rebuilt by the next store-round or `session clean --invalid-only`)");
    else if (rows.size() != records.size()) {
      v.errors.push_back(fmt::format("results.tsv has {} rows but idea-log.jsonl {} records", rows.size(), records.size()));
    } else {
      for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].kernel != records[i].kernel || rows[i].decision != records[i].decision) {
          v.errors.push_back(fmt::format("results.tsv row {} ({}) differs from idea-log.jsonl ({})", i + 1, rows[i].kernel, records[i].kernel));
          break;
        }
      }
    }
  }
  try {
    (void)read_checkpoint(ws, task);
  } catch (const Error& e) {
    v.errors.push_back(e.what());
  }
  try {
    auto cfg = read_task_config(ws, task);
    if (!cfg && (has_jsonl || has_tsv)) v.warnings.push_back("no task_config.json (no task_uid: the monitor cannot link this task)");
  } catch (const Error& e) {
    v.errors.push_back(e.what());
  }
  return v;
}

std::vector<std::string> clean_task_invalid(const Workspace& ws, const TaskRef& task, std::chrono::milliseconds lock_timeout) {
  std::vector<std::string> actions;
  Ledger ledger(ws, task);
  FileLock guard = ledger.lock(lock_timeout, "session clean");
  const std::string stamp = std::to_string(::time(nullptr));
  auto text = read_file(ws.idea_log(task));
  std::vector<RoundRecord> records;
  if (text) {
    JsonlParse p = parse_idea_log(*text);
    // Drop duplicates too (keep the first of each round / iteration / attempt).
    std::map<std::string, bool> seen;
    std::vector<RoundRecord> kept;
    int dups = 0;
    for (auto& r : p.records) {
      std::string key = r.iter_number() && !is_failure(r.decision) ? r.iter : (r.attempt_index() ? r.iter : "");
      std::string rkey = r.round >= 1 ? "round" + std::to_string(r.round) : "";
      if ((!key.empty() && seen[key]) || (!rkey.empty() && seen[rkey])) {
        ++dups;
        continue;
      }
      if (!key.empty()) seen[key] = true;
      if (!rkey.empty()) seen[rkey] = true;
      kept.push_back(std::move(r));
    }
    if (p.invalid_lines > 0 || dups > 0) {
      atomic_write(ws.idea_log(task).string() + ".bak." + stamp, *text);
      std::string out;
      for (const auto& r : kept) out += dump_compact(r.to_json()) + "\n";
      atomic_write(ws.idea_log(task), out);
      actions.push_back(fmt::format("idea-log.jsonl: dropped {} unreadable and {} duplicate line(s); old file kept as idea-log.jsonl.bak.{}",
                                    p.invalid_lines, dups, stamp));
    }
    records = std::move(kept);
  } else {
    std::vector<std::string> w;
    records = ledger.read_tsv(&w);
    if (!records.empty()) {
      std::string out;
      for (auto& r : records) {
        r.extra["source"] = "tsv-import";
        out += dump_compact(r.to_json()) + "\n";
      }
      atomic_write(ws.idea_log(task), out);
      actions.push_back(fmt::format("idea-log.jsonl: imported {} row(s) from results.tsv", records.size()));
    }
  }
  if (!records.empty() || text) {
    auto old_tsv = read_file(ws.results_tsv(task));
    std::string fresh = std::string(k_tsv_header) + "\n";
    for (const auto& r : records) fresh += tsv_row(r) + "\n";
    if (!old_tsv || *old_tsv != fresh) {
      if (old_tsv) atomic_write(ws.results_tsv(task).string() + ".bak." + stamp, *old_tsv);
      atomic_write(ws.results_tsv(task), fresh);
      actions.push_back("results.tsv: rebuilt from idea-log.jsonl");
    }
  }
  std::error_code ec;
  if (fs::remove(ws.ledger_index(task), ec)) actions.push_back("index: removed (rebuilt on next read)");
  try {
    (void)read_checkpoint(ws, task);
  } catch (const Error&) {
    fs::path cp = ws.checkpoint(task);
    fs::rename(cp, cp.string() + ".bak." + stamp, ec);
    actions.push_back("checkpoint: damaged file set aside as current_idea.json.bak." + stamp);
  }
  return actions;
}

fs::path reset_dsl_tree(const Workspace& ws, const std::string& gpu, const std::string& dsl) {
  fs::path from = ws.dsl_dir(gpu, dsl);
  std::error_code ec;
  if (!fs::exists(from, ec)) throw_not_found(fmt::format("nothing to reset: {} does not exist", ws.display(from)));
  std::string stamp = now_iso8601();
  for (auto& c : stamp) {
    if (c == ':') c = '-';
  }
  fs::path to = ws.tuning_dir() / ".trash" / stamp / gpu / dsl;
  ensure_dir(to.parent_path());
  fs::rename(from, to, ec);
  if (ec) throw Error(ExitCode::failure, fmt::format("cannot move {} to {}: {}", from.string(), to.string(), ec.message()));
  return to;
}

}  // namespace croq
