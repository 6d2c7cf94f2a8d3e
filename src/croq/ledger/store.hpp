// Storing a round from a driver's request (the seeds' store_round arguments): validation of every
// field with a clear error before anything is written, the failure-to-attempt rule, and closing
// the checkpoint of the stored iteration. Shared by `croq store-round`, `croq baseline`,
// `croq prepare` and `croq tune`.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "croq/ledger/ledger.hpp"

namespace croq {

struct StoreRequest {
  std::string iter;            // "iter012", "iter012_tag", "attemptAAAB", "attemptAAAB_tag"
  std::string kernel;          // "iter012_tag" (optional when iter carries the tag)
  std::optional<double> tflops;
  std::string decision;
  std::string bottleneck;
  std::string idea;
  std::optional<int> round;    // nullopt: the next round (0 for BASELINE)
  std::string category;
  std::string expected_gain;
  std::string source = "reported";  // "measured" when the figure comes from a measurement file
  json extra = json::object();      // croq's own fields (measurement, base, params, ...)
};

inline constexpr size_t k_max_idea_bytes = 16 * 1024;

// A driver's --extra fields: refused (Error usage, naming them) if any is a field croq writes
// itself — the seeds' fields, schema, source, measurement, planned_iter, task_uid, closed_by — so
// that extra fields add to a record and never change what it says. The plan's fields (base,
// params, structural, ...) come from the round's checkpoint; store_round refuses an --extra value
// that contradicts it.
void check_extra_fields(const json& extra);
// The same for `croq attempt --extra`: attempt, kernel, reason, idea, planned_iter, build_log, timestamp.
void check_attempt_extra_fields(const json& extra);

// Validates and converts; throws Error(usage) naming the bad field. Nothing is written.
RoundRecord make_round_record(const StoreRequest& request);

struct StoreRoundResult {
  StoreOutcome outcome;
  bool checkpoint_closed = false;
  std::string line;  // "[store_round] STORE complete: ..."
};

// Validates, converts a failure with an iteration id into an attempt, stores under the lock,
// reads the record back to check it landed, and closes a matching checkpoint.
StoreRoundResult store_round(Ledger& ledger, const StoreRequest& request, std::chrono::milliseconds lock_timeout);

}  // namespace croq
