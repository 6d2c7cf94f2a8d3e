// The enforced protocol of a task: the seeds' loop PREPARE -> (PROFILE -> IDEA -> IMPLEMENT ->
// VERIFY -> MEASURE -> DECIDE -> STORE)* -> SHAPE_COMPLETE, as a state machine whose state is
// derived from evidence on disk (the ledger, the checkpoint, the evidence log), and guards that
// refuse an out-of-order or evidence-free step with the reason and the next thing to do.
//
// logs/<key>/<model>/protocol.json (croq-protocol-v1) holds what evidence cannot: the mode
// (enforced or advisory), the invocation's round budget and where it started, and the decision
// rule's settings. Every guard is listed in docs/protocol.md with the verb that runs it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/idea_plan.hpp"
#include "croq/protocol/decide.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/protocol/history.hpp"
#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct TaskSnapshot;  // snapshot.hpp: the task's state, loaded once per step

enum class Step { PREPARE, PROFILE, IDEA, IMPLEMENT, VERIFY, MEASURE, DECIDE, STORE, SHAPE_COMPLETE, NEXT_SHAPE };
const char* step_name(Step s);

inline constexpr const char* k_protocol_schema = "croq-protocol-v1";

struct ProtocolConfig {
  bool enforced = true;
  int target_rounds = 50;   // rounds this invocation must complete before it may stop
  int start_round = 0;      // the last stored round when the invocation began
  std::string started_at;
  int max_attempts = 5;     // failed attempts per idea before COMPILE_FAIL
  int max_active_bases = 2;
  int macro_streak_limit = 2;
  int escalate_streak = 7;         // rounds not kept on a base before SASS comparison + fresh baseline profile
  int structural_reset_streak = 8; // rounds not kept on a base before a structural reset or the other base
  DecisionRule rule;         // enforced: at_least_as_strict of protocol.json's decision_rule
  json to_json() const;
  static ProtocolConfig from_json(const json& j);
};

// The rule an enforced task decides by: protocol.json's values where they are stricter than croq's
// (a higher noise floor, k or paired floor, a lower suspicious gain or loss, more pairs or
// repetitions, or no close calls at all), croq's where they are looser. Before, a decision_rule
// edited to k -1000 kept a 5 % slower kernel as a measured KEEP.
DecisionRule at_least_as_strict(const DecisionRule& rule);

// nullopt when the task has no protocol.json (advisory: nothing is enforced), unless its ledger
// holds a record stored under enforcement: then the task is enforced with the default settings
// (deleting protocol.json does not lift the guards from a task stored under them).
std::optional<ProtocolConfig> read_protocol(const Workspace& ws, const TaskRef& task);
// The field an enforced task's records carry ("protocol": "enforced"), set by `mark_enforced`.
inline constexpr const char* k_record_protocol_field = "protocol";
// Adds the field to a record about to be stored when the task is enforced.
void mark_enforced(const Workspace& ws, const TaskRef& task, json& record_extra);
// The task's protocol.json, or the defaults for a task without one.
ProtocolConfig config_or_default(const Workspace& ws, const TaskRef& task);
void write_protocol(const Workspace& ws, const TaskRef& task, const ProtocolConfig& cfg);
fs::path protocol_path(const Workspace& ws, const TaskRef& task);

// Where the task stands and what to do next.
struct TaskState {
  Step step = Step::PREPARE;
  std::string next_action;   // a croq command line (or a sentence) for the next step
  std::vector<std::string> notes;
  json details = json::object();
  json to_json() const;
};
TaskState derive_state(const Workspace& ws, const TaskRef& task);
TaskState derive_state(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snapshot);

// A refused step: thrown as Error(ExitCode::refused) with these fields in the JSON error.
struct Refusal {
  Step step;
  std::string rule;     // short id of the rule, e.g. "profile_before_idea"
  std::string reason;
  std::string next_action;
};
[[noreturn]] void refuse(const Refusal& r);

// Guards. Each does nothing when the task is advisory; otherwise it throws a refusal. The forms
// without a snapshot read protocol.json, and only for an enforced task load the snapshot once; the
// refusal's wording (its next action) comes from the same snapshot.
// IDEA: `plan` is the checkpoint about to be written (its extra holds the idea plan).
void guard_idea(const Workspace& ws, const TaskRef& task, const Checkpoint& plan);
void guard_idea(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snapshot, const Checkpoint& plan);
// IMPLEMENT: next-iter and build of `iter_number`.
void guard_implement(const Workspace& ws, const TaskRef& task, int iter_number, bool is_attempt);
void guard_implement(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snapshot, int iter_number,
                     bool is_attempt);
// What `croq checkpoint verify` found, as evidence: the source checked (its hash) and the status
// (VERIFIED or DRIFT). The MEASURE guard takes the plan's VERIFIED status only with it, for the
// source as it is now: a status edited into the checkpoint by hand verifies nothing.
void record_verification(const Workspace& ws, const TaskRef& task, const std::string& kernel,
                         const std::filesystem::path& source, bool verified);
// MEASURE of a candidate kernel (iter<NNN>_<tag>).
void guard_measure(const Workspace& ws, const TaskRef& task, const std::string& kernel);
void guard_measure(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snapshot, const std::string& kernel);
// STORE of a round record (after validation, before writing). `measurement` is the measurement
// document the figure came from (null when typed).
void guard_store(const Workspace& ws, const TaskRef& task, const RoundRecord& record, const json& measurement);
void guard_store(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snapshot, const RoundRecord& record,
                 const json& measurement);

// The protocol's decision for a measured candidate against the best of its base.
struct DecisionContext {
  DecisionResult result;
  std::optional<PerfSample> best;
  std::string base_kernel;
  json to_json() const;
};
DecisionContext decide_for(const Workspace& ws, const TaskRef& task, const std::string& candidate_kernel,
                           const PerfSample& candidate, bool rerun_done);
DecisionContext decide_for(const Workspace& ws, const TaskRef& task, const TaskSnapshot& snapshot,
                           const std::string& candidate_kernel, const PerfSample& candidate, bool rerun_done);

// Close calls (decide.hpp): the back-to-back pairs of `candidate` and `best` in the evidence since
// `since` (measurements whose files are unchanged; two neighbours of different kernels make a
// pair); which kernel to measure next to reach `pairs` pairs ("best" / "candidate", ABBA order);
// those measurements with the file each is written to (perf/<key>/<model>/pair_<iter>_<n>_<kernel>.json),
// and as `croq measure` commands.
std::vector<MeasuredPair> measured_pairs(const Workspace& ws, const std::vector<Evidence>& evidence,
                                         const std::string& candidate, const std::string& best, const std::string& since);
std::vector<std::string> pair_order(size_t measured, int pairs);
struct PairMeasurement {
  std::string kernel;
  fs::path out;
};
std::vector<PairMeasurement> pair_plan(const Workspace& ws, const TaskRef& task, const std::string& candidate,
                                       const std::string& best, size_t measured, int pairs);
json pair_commands(const Workspace& ws, const TaskRef& task, const std::string& candidate, const std::string& best,
                   size_t measured, int pairs);

// Fills the idea plan's structure id from the history (new structure for a structural change,
// the base's otherwise) and checks the rules; used by `checkpoint write`.
IdeaPlan complete_plan(const History& history, IdeaPlan plan, const std::string& candidate_kernel_hint);

}  // namespace croq
