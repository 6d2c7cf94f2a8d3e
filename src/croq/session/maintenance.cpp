// Validation and cleaning of task ledgers (maintenance.hpp).
#include "croq/session/maintenance.hpp"

#include <ctime>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/workspace/sources.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq {

json TaskValidation::to_json() const {
  return {{"task", task.id()}, {"pass", errors.empty()}, {"errors", errors}, {"warnings", warnings}};
}

namespace {

// Ids that lie after a gap of more than k_max_id_skip unused ids: what no croq writer hands out
// (next-iter, attempts and rounds count on from the highest), so a record, a reservation or a
// cache entry put there by hand or by an older croq. Such an id can use up a task's ids
// (iter999999, attemptZZZZ, round 1000000); repair sets it aside.
struct Strays {
  std::optional<long long> iter, attempt, round;  // the first stray id of each kind
  bool record(const RoundRecord& r) const {
    auto n = r.iter_number();
    auto a = r.attempt_index();
    return (iter && n && !is_failure(r.decision) && *n >= *iter) || (attempt && a && *a >= *attempt) ||
           (round && r.round >= *round);
  }
};

std::optional<long long> first_stray(const std::set<long long>& ids, long long base) {
  long long prev = base;
  for (long long id : ids) {
    if (id - prev - 1 > k_max_id_skip) return id;
    prev = id;
  }
  return std::nullopt;
}

Strays find_strays(const std::vector<RoundRecord>& records, const std::vector<json>& attempt_log,
                   const std::optional<Reservations>& res) {
  std::set<long long> iters, attempts, rounds;
  for (const auto& r : records) {
    if (auto n = r.iter_number(); n && !is_failure(r.decision)) iters.insert(*n);
    if (auto a = r.attempt_index()) attempts.insert(*a);
    if (r.round >= 1) rounds.insert(r.round);
  }
  for (const auto& a : attempt_log) {
    if (auto id = get_string(a, "attempt"); id && id->size() == 11) {
      if (auto i = parse_attempt_letters(id->substr(7))) attempts.insert(*i);
    }
  }
  if (res) {
    for (const auto& [lo, hi] : res->live_iters.ranges()) {
      iters.insert(lo);
      iters.insert(hi);  // a range is one run of ids: its ends tell the gaps
    }
    if (res->max_attempt >= 0) attempts.insert(res->max_attempt);
  }
  return {first_stray(iters, 0), first_stray(attempts, -1), first_stray(rounds, 0)};
}

std::optional<Reservations> reservations_or_null(const Ledger& ledger) {
  try {
    return ledger.reservations();
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

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
    // A measured record carries its measurement's figure: a figure that differs from it, or from
    // the measurement file the record names, was edited into the log (the export refuses such a
    // record as well).
    if (auto why = unbacked_figure(ws, r)) {
      v.errors.push_back(fmt::format("{}: {}: the log was edited", r.kernel, *why));
    }
    if (auto n = r.iter_number(); n && *n >= 1 && !is_failure(r.decision) && !find_primary_source(ws, task, r.kernel) &&
                                  !find_primary_source(ws, task, r.iter)) {
      v.warnings.push_back(fmt::format("{}: no source in srcs/", r.kernel));
    }
  }
  {
    const Strays strays = find_strays(records, ledger.read_attempts(nullptr), reservations_or_null(ledger));
    for (const auto& r : records) {
      if (strays.record(r)) {
        v.errors.push_back(fmt::format("{} (round {}) lies more than {} ids past the ids before it: it would use up "
                                       "this task's ids (`session clean --invalid-only` sets it aside)",
                                       r.kernel, r.round, k_max_id_skip));
      }
    }
    if (auto res = reservations_or_null(ledger)) {
      if (strays.iter && res->live_iters.max() && *res->live_iters.max() >= *strays.iter) {
        v.errors.push_back(fmt::format("reservations.json hands out {} far past the stored iterations "
                                       "(`session clean --invalid-only` drops it)",
                                       iter_number_name(*res->live_iters.max())));
      }
      if (strays.attempt && res->max_attempt >= *strays.attempt) {
        v.errors.push_back(fmt::format("reservations.json's max_attempt (attempt{}) lies far past the attempts "
                                       "used (`session clean --invalid-only` resets it)",
                                       attempt_letters(res->max_attempt)));
      }
    }
  }
  for (const auto& l : ledger.linked_files()) {
    v.errors.push_back(l + ": croq refuses to write through it (replace it with a real file)");
  }
  if (has_jsonl && fs::exists(ws.ledger_index(task), ec) && !ledger.read_index()) {
    v.warnings.push_back("the ledger index fails its check (edited, or written with another workspace key): it is "
                         "ignored and rebuilt from idea-log.jsonl");
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
  {
    std::vector<std::string> w;
    (void)ledger.read_attempts(&w);
    for (auto& s : w) {
      if (s.find("torn") != std::string::npos) v.warnings.push_back(s);
      else v.errors.push_back(s);
    }
  }
  try {
    (void)ledger.reservations();
  } catch (const Error& e) {
    v.errors.push_back(e.what());
  }
  for (ArtifactKind kind : {ArtifactKind::logs, ArtifactKind::checkpoints, ArtifactKind::memory}) {
    for (const auto& p : stale_temp_files(ws.kind_dir(task, kind))) {
      v.warnings.push_back(fmt::format("{}: a temporary file left by an interrupted write (`session clean --invalid-only` "
                                       "removes it)", ws.display(p)));
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

namespace {

// The lines of a JSONL file that `keep` accepts, verbatim, and how many were dropped.
struct KeptLines {
  std::string content;
  int dropped = 0;
};

}  // namespace

std::vector<std::string> clean_task_invalid(const Workspace& ws, const TaskRef& task, std::chrono::milliseconds lock_timeout) {
  std::vector<std::string> actions;
  Ledger ledger(ws, task);
  FileLock guard = ledger.lock(lock_timeout, "session clean");
  const std::string stamp = std::to_string(::time(nullptr));
  auto set_aside = [&](const fs::path& path, const std::string& content) {
    atomic_write(path.string() + ".bak." + stamp, content, /*durable=*/true, ws.root());
  };

  // idea-log.jsonl: keep every line that is a round record, verbatim, dropping unreadable lines
  // (a torn last line included) and repeats of a round, iteration or attempt (the first is kept).
  auto text = read_file(ws.idea_log(task));
  std::vector<RoundRecord> records;
  std::optional<Reservations> res = reservations_or_null(ledger);
  if (text) {
    KeptLines kept;
    std::map<std::string, bool> seen;
    int invalid = 0, dups = 0;
    const Strays strays = find_strays(parse_idea_log(*text).records, ledger.read_attempts(nullptr), res);
    std::vector<std::string> stray_kernels;
    for (const auto& line : split_lines(*text)) {
      if (trim(line).empty()) continue;
      auto j = try_parse_json(line);
      std::optional<RoundRecord> r;
      if (j) r = RoundRecord::from_json(*j);
      if (!r) {
        ++invalid;
        continue;
      }
      if (strays.record(*r)) {
        stray_kernels.push_back(r->kernel);
        continue;
      }
      std::string key = r->iter_number() && !is_failure(r->decision) ? r->iter : (r->attempt_index() ? r->iter : "");
      std::string rkey = r->round >= 1 ? "round" + std::to_string(r->round) : "";
      if ((!key.empty() && seen[key]) || (!rkey.empty() && seen[rkey])) {
        ++dups;
        continue;
      }
      if (!key.empty()) seen[key] = true;
      if (!rkey.empty()) seen[rkey] = true;
      kept.content += line + "\n";
      records.push_back(std::move(*r));
    }
    if (kept.content != *text) {
      set_aside(ws.idea_log(task), *text);
      atomic_write(ws.idea_log(task), kept.content, /*durable=*/true, ws.root());
      actions.push_back(fmt::format("idea-log.jsonl: dropped {} unreadable and {} repeated line(s){}; old file kept as "
                                    "idea-log.jsonl.bak.{}",
                                    invalid, dups,
                                    stray_kernels.empty()
                                        ? std::string()
                                        : fmt::format(" and {} record(s) far out of sequence ({})", stray_kernels.size(),
                                                      fmt::join(stray_kernels, ", ")),
                                    stamp));
    }
  } else {
    std::vector<std::string> w;
    records = ledger.read_tsv(&w);
    if (!records.empty()) {
      std::string out;
      for (auto& r : records) {
        r.extra["source"] = "tsv-import";
        r.extra["schema"] = k_round_schema;
        out += dump_compact(r.to_json()) + "\n";
      }
      atomic_write(ws.idea_log(task), out, /*durable=*/true, ws.root());
      actions.push_back(fmt::format("idea-log.jsonl: imported {} row(s) from results.tsv{}", records.size(),
                                    w.empty() ? "" : fmt::format(" ({} unreadable row(s) left out)", w.size())));
    }
  }

  // results.tsv: the view of the records.
  if (!records.empty() || text) {
    auto old_tsv = read_file(ws.results_tsv(task));
    std::string fresh = std::string(k_tsv_header) + "\n";
    for (const auto& r : records) fresh += tsv_row(r) + "\n";
    if (!old_tsv || *old_tsv != fresh) {
      // A view that only fell behind is simply completed; anything else is kept aside.
      if (old_tsv && fresh.rfind(*old_tsv, 0) != 0) set_aside(ws.results_tsv(task), *old_tsv);
      atomic_write(ws.results_tsv(task), fresh, /*durable=*/true, ws.root());
      actions.push_back("results.tsv: rebuilt from idea-log.jsonl");
    }
  }

  // attempt-log.jsonl: unreadable lines set aside the same way.
  if (auto attempts = read_file(ws.attempt_log(task))) {
    KeptLines kept;
    for (const auto& line : split_lines(*attempts)) {
      if (trim(line).empty()) continue;
      auto j = try_parse_json(line);
      if (!j || !j->is_object()) {
        ++kept.dropped;
        continue;
      }
      kept.content += line + "\n";
    }
    if (kept.dropped > 0) {
      set_aside(ws.attempt_log(task), *attempts);
      atomic_write(ws.attempt_log(task), kept.content, /*durable=*/true, ws.root());
      actions.push_back(fmt::format("attempt-log.jsonl: dropped {} unreadable line(s); old file kept as "
                                    "attempt-log.jsonl.bak.{}",
                                    kept.dropped, stamp));
    }
  }

  // reservations.json: unreadable means the ids handed out are unknown; set it aside (stored ids
  // stay taken, so nothing stored can be handed out again).
  if (!res) {
    fs::path p = ws.reservations(task);
    std::error_code ec;
    if (fs::exists(p, ec)) {
      fs::rename(p, p.string() + ".bak." + stamp, ec);
      actions.push_back("reservations.json: damaged file set aside as reservations.json.bak." + stamp);
    }
  } else {
    // Ids handed out far past everything else (they would use up the task's ids) are dropped.
    const Strays strays = find_strays(records, ledger.read_attempts(nullptr), res);
    Reservations fixed = *res;
    if (strays.iter) {
      IntSet live;
      for (const auto& [lo, hi] : res->live_iters.ranges()) {
        for (int v = lo; v <= std::min<long long>(hi, *strays.iter - 1); ++v) live.insert(v);
      }
      fixed.live_iters = live;
    }
    if (strays.attempt && res->max_attempt >= *strays.attempt) {
      // Back to the highest attempt id in use below the gap (stored or logged).
      fixed.max_attempt = -1;
      auto keep = [&](int a) {
        if (a < *strays.attempt) fixed.max_attempt = std::max(fixed.max_attempt, a);
      };
      for (const auto& r : records) {
        if (auto a = r.attempt_index()) keep(*a);
      }
      for (const auto& a : ledger.read_attempts(nullptr)) {
        if (auto id = get_string(a, "attempt"); id && id->size() == 11) {
          if (auto i = parse_attempt_letters(id->substr(7))) keep(*i);
        }
      }
    }
    if (fixed.to_json() != res->to_json()) {
      const fs::path p = ws.reservations(task);
      if (auto old = read_file(p)) set_aside(p, *old);
      atomic_write(p, dump_compact(fixed.to_json()) + "\n", /*durable=*/false, ws.root());
      actions.push_back(fmt::format("reservations.json: dropped ids handed out far out of sequence; old file kept as "
                                    "reservations.json.bak.{}",
                                    stamp));
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
  for (ArtifactKind kind : {ArtifactKind::logs, ArtifactKind::checkpoints, ArtifactKind::memory}) {
    for (const auto& p : stale_temp_files(ws.kind_dir(task, kind))) {
      if (fs::remove(p, ec)) actions.push_back("removed " + p.filename().string() + " (left by an interrupted write)");
    }
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
