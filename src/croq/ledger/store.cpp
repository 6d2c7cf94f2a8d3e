// store_round: request validation and the write (store.hpp).
#include "croq/ledger/store.hpp"

#include <cmath>
#include <fmt/format.h>

#include "croq/ledger/documents.hpp"
#include "croq/util/error.hpp"
#include "croq/util/text.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

namespace {

void check_text(const std::string& value, const char* field, size_t max_bytes) {
  if (value.size() > max_bytes) {
    throw_usage(fmt::format("--{} is {} bytes; the limit is {}", field, value.size(), max_bytes),
                fmt::format("summarise the {} in a few sentences; details belong in the source and memory/", field));
  }
  if (!is_valid_utf8(value)) {
    throw_usage(fmt::format("--{} is not valid UTF-8 text", field), "pass text, not binary data");
  }
  if (value.find('\0') != std::string::npos) throw_usage(fmt::format("--{} contains a NUL byte", field));
}

// The fields a plan gives its round (checkpoint write): copied into the record by store_round.
const char* const k_plan_fields[] = {"base", "params", "structural", "change_kind", "combination", "structure",
                                     "family", "levers"};

}  // namespace

namespace {

void refuse_reserved(const json& extra, std::initializer_list<const char*> reserved, const char* hint) {
  if (!extra.is_object()) throw_usage("--extra must be a JSON object");
  std::string list;
  int n = 0;
  for (const char* f : reserved) {
    if (!extra.contains(f)) continue;
    list += (list.empty() ? "" : ", ") + std::string(f);
    ++n;
  }
  if (n > 0) throw_usage(fmt::format("--extra may not set {}: croq writes {} itself", list, n == 1 ? "it" : "them"), hint);
}

}  // namespace

void check_extra_fields(const json& extra) {
  refuse_reserved(extra,
                  {"round", "iter", "kernel", "tflops", "decision", "bottleneck", "idea", "idea_summary", "category",
                   "expected_gain", "timestamp", "schema", "source", "measurement", "planned_iter", "task_uid",
                   "closed_by", "protocol"},
                  "pass the figure with --measurement and the fields with their own options (--iter, --decision, "
                  "--idea, ...); a failure of a planned iteration is stored with --iter iter<NNN>");
}

void check_attempt_extra_fields(const json& extra) {
  refuse_reserved(extra, {"attempt", "kernel", "reason", "idea", "planned_iter", "build_log", "timestamp"},
                  "use the options --reason, --idea, --planned-iter and --build-log");
}

RoundRecord make_round_record(const StoreRequest& q) {
  RoundRecord r;
  auto decision = parse_decision(q.decision);
  if (!decision) {
    throw_usage(fmt::format("unknown decision '{}'", preview(q.decision)),
                "use KEEP, DISCARD, COMPILE_FAIL, VERIFY_FAIL, RUNTIME_FAIL, SEGFAULT, HANG (BASELINE for iter000)");
  }
  r.decision = *decision;

  // Identity: iter and kernel.
  std::string iter = q.iter;
  std::string tag;
  if (iter.empty() && !q.kernel.empty()) iter = q.kernel;
  if (iter.empty()) throw_usage("--iter is required", "e.g. --iter iter012 --kernel iter012_stages4");
  if (auto a = try_parse_attempt_id(iter)) {
    r.iter = "attempt" + a->letters();
    tag = a->tag;
  } else if (iter.rfind("attempt", 0) == 0 && iter.size() == 11 && parse_attempt_letters(iter.substr(7))) {
    r.iter = iter;
  } else {
    int n = parse_iter_number(iter);
    r.iter = iter_number_name(n);
    if (auto id = try_parse_iter_id(iter)) tag = id->tag;
  }
  if (!q.kernel.empty()) {
    validate_path_component(q.kernel, "kernel");
    std::string ktag;
    std::string kid;
    if (auto id = try_parse_iter_id(q.kernel)) {
      ktag = id->tag;
      kid = id->number_name();
    } else if (auto a = try_parse_attempt_id(q.kernel)) {
      ktag = a->tag;
      kid = "attempt" + a->letters();
    } else {
      throw_usage(fmt::format("invalid kernel name '{}'", preview(q.kernel)),
                  "the kernel is iter<NNN>_<tag> or attempt<AAAA>_<tag> (e.g. iter012_stages4)");
    }
    if (kid != r.iter && !(is_failure(r.decision) && r.iter.rfind("iter", 0) == 0)) {
      throw_usage(fmt::format("--kernel {} does not belong to --iter {}", q.kernel, r.iter),
                  "the kernel name starts with its iteration id");
    }
    if (!tag.empty() && tag != ktag) {
      throw_usage(fmt::format("--iter {} and --kernel {} have different tags", iter, q.kernel));
    }
    tag = ktag;
  }
  if (tag.empty()) {
    throw_usage(fmt::format("no tag for {}", r.iter),
                "pass --kernel iter<NNN>_<tag>; a bare iter<NNN> without a tag is not accepted");
  }
  r.kernel = r.iter + "_" + tag;
  auto num = r.iter_number();
  if (r.decision == Decision::BASELINE && (!num || *num != 0)) {
    throw_usage("BASELINE is the decision of iter000 only", "store the library baseline as --iter iter000 --kernel iter000_cublas");
  }
  if (num && *num == 0 && r.decision != Decision::BASELINE) {
    throw_usage("iter000 is the library baseline: its decision is BASELINE");
  }
  if (!is_failure(r.decision) && r.attempt_index()) {
    throw_usage(fmt::format("{} is an attempt id; {} needs a measured iteration id", r.iter, decision_name(r.decision)),
                "attempt ids are for failures (COMPILE_FAIL, VERIFY_FAIL, RUNTIME_FAIL, SEGFAULT, HANG)");
  }

  // Round.
  if (q.round) {
    if (*q.round < 0 || *q.round > k_max_round_number) {
      throw_usage(fmt::format("--round {} is out of range", *q.round),
                  fmt::format("rounds are numbered 0 to {}; omit --round to have croq number it", k_max_round_number));
    }
    r.round = *q.round;
  }
  const bool prep = (q.round && *q.round == 0) || r.decision == Decision::BASELINE;

  // TFLOPS.
  if (q.tflops) {
    if (!std::isfinite(*q.tflops) || *q.tflops < 0 || *q.tflops > 1e6) {
      throw_usage(fmt::format("--tflops {} is not a plausible figure", *q.tflops), "give a finite, non-negative number");
    }
    r.tflops = *q.tflops;
  }
  if (is_measured(r.decision) && !r.tflops) {
    throw_usage(fmt::format("{} needs a TFLOPS figure", decision_name(r.decision)),
                "pass --measurement FILE (from `croq measure`) or --tflops for a legacy self-timed binary");
  }
  if (is_failure(r.decision)) r.tflops = 0.0;

  // Bottleneck.
  if (q.bottleneck == "unknown") {
    throw_usage("bottleneck 'unknown' is forbidden",
                "profile the current best (`croq profile`) and pass the classifier's category");
  }
  if (q.bottleneck.empty() || q.bottleneck == k_no_bottleneck) {
    if (!prep) {
      throw_usage("--bottleneck is required",
                  "memory_bound, compute_bound, latency_bound, launch_bound or mixed (from `croq classify`)");
    }
    r.bottleneck = k_no_bottleneck;
  } else if (!is_valid_bottleneck(q.bottleneck)) {
    throw_usage(fmt::format("unknown bottleneck '{}'", preview(q.bottleneck)),
                "memory_bound, compute_bound, latency_bound, launch_bound or mixed");
  } else {
    r.bottleneck = q.bottleneck;
  }

  // Texts.
  check_text(q.idea, "idea", k_max_idea_bytes);
  check_text(q.expected_gain, "expected-gain", 256);
  check_text(q.category, "category", 64);
  if (!prep && trim(q.idea).empty()) {
    throw_usage("--idea is required", "one human-readable sentence: what changed and why it should help");
  }
  r.idea = q.idea;
  if (!q.category.empty()) {
    const auto& cats = idea_categories();
    if (std::find(cats.begin(), cats.end(), q.category) == cats.end()) {
      throw_usage(fmt::format("unknown category '{}'", preview(q.category)), "tiling, pipeline, memory, compute or misc");
    }
  }
  r.category = q.category;
  r.expected_gain = q.expected_gain;
  if (!q.extra.is_object()) throw_usage("extra fields must be a JSON object");
  // A measured record carries its measurement's verdict: a failed one is never a KEEP/DISCARD.
  if (q.extra.contains("measurement") && q.extra["measurement"].is_object() && !is_failure(r.decision)) {
    const std::string verdict = get_string(q.extra["measurement"], "verdict").value_or("PASS");
    if (verdict != "PASS") {
      throw_usage(fmt::format("{} is refused: the measurement's verdict is {}", decision_name(r.decision), verdict),
                  "a failed measurement is stored as VERIFY_FAIL, RUNTIME_FAIL, SEGFAULT or HANG");
    }
  }
  r.extra = q.extra;
  r.extra["source"] = q.source;
  return r;
}

StoreRoundResult store_round(Ledger& ledger, const StoreRequest& request, std::chrono::milliseconds lock_timeout) {
  RoundRecord record = make_round_record(request);
  StoreOptions options;
  options.auto_round = !request.round.has_value();
  options.failure_to_attempt = true;  // a failure never consumes an iteration number
  // The idea plan of the round comes from its checkpoint (base, parameter set, structural change).
  // (A failure is renamed to an attempt id only inside Ledger::store; here record.iter is still
  // the planned iteration.)
  std::optional<Checkpoint> cp;
  try {
    cp = read_checkpoint(ledger.workspace(), ledger.task());
  } catch (const Error&) {
    // A damaged checkpoint does not block storing; session validate reports it.
  }
  if (cp && cp->open()) {
    std::string planned = get_string(record.extra, "planned_iter").value_or(record.iter);
    if (cp->iter == planned || cp->iter == record.iter) {
      // The plan's fields are the plan's: an extra field that says otherwise is refused.
      json plan = json::object();
      for (const char* key : k_plan_fields) {
        if (cp->extra.contains(key)) plan[key] = cp->extra[key];
      }
      if (!cp->base.empty()) plan["base"] = cp->base;
      if (!cp->levers.empty() && !plan.contains("levers")) plan["levers"] = cp->levers;
      for (auto it = plan.begin(); it != plan.end(); ++it) {
        if (record.extra.contains(it.key()) && record.extra[it.key()] != it.value()) {
          throw_usage(fmt::format("--extra's {} ({}) contradicts the plan of {} ({})", it.key(),
                                  preview(dump_compact(record.extra[it.key()])), cp->iter,
                                  preview(dump_compact(it.value()))),
                      "the plan's fields come from its checkpoint; drop them from --extra, or write a new plan");
        }
        record.extra[it.key()] = it.value();
      }
    }
  }
  StoreRoundResult result;
  result.outcome = ledger.store(record, options, lock_timeout);
  const RoundRecord& stored = result.outcome.record;

  // Read back: the record must be where it was written (other writers may have appended since).
  auto back = ledger.record_at(result.outcome.offset);
  if (!back || back->kernel != stored.kernel || back->round != stored.round || back->idea != stored.idea) {
    throw Error(ExitCode::corrupt, "the stored record could not be read back from idea-log.jsonl",
                "run `croq session validate` on this task");
  }

  // Close the checkpoint of this round.
  const Workspace& ws = ledger.workspace();
  try {
    if (auto cp = read_checkpoint(ws, ledger.task()); cp && cp->open()) {
      std::string planned = get_string(stored.extra, "planned_iter").value_or(stored.iter);
      if (cp->iter == stored.iter || cp->iter == planned) {
        cp->status = CheckpointStatus::CLOSED;
        cp->extra["closed_by"] = stored.kernel;
        write_checkpoint(ws, ledger.task(), *cp, /*durable=*/false);
        result.checkpoint_closed = true;
      }
    }
  } catch (const Error&) {
    // A damaged checkpoint does not block storing; session validate reports it.
  }
  result.line = fmt::format("[store_round] STORE complete: round {} {} {} {} TFLOPS {}", stored.round, stored.kernel,
                            decision_name(stored.decision), format_tflops(stored.tflops), stored.bottleneck);
  return result;
}

}  // namespace croq
