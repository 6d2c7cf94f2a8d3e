// The task's JSON documents, each replaced atomically and carrying a schema:
//
// checkpoints/<key>/<model>/current_idea.json  (croq-checkpoint-v1)
//   {"schema":"croq-checkpoint-v1","status":"PLANNED","iter":"iter012","round":11,
//    "bottleneck":"latency_bound","idea":"...","expected_gain":"+5%","levers":["STAGES"],
//    "base":"iter009_bn256","created_at":"...","updated_at":"...","history":[...]}
//   status: PLANNED (written at the end of IDEA) -> IMPLEMENTING (read at the start of
//   IMPLEMENT) -> VERIFIED (verify found no significant drift) or DRIFT (it did); CLOSED once
//   the round is stored.
//
// logs/<key>/<model>/task_config.json  (croq-task-v1)
//   {"schema":"croq-task-v1","task_uid":"...","gpu":"...","dsl":"...","shape_key":"...",
//    "model":"...","created_at":"...", ...}
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

inline constexpr const char* k_checkpoint_schema = "croq-checkpoint-v1";
inline constexpr const char* k_task_schema = "croq-task-v1";

enum class CheckpointStatus { PLANNED, IMPLEMENTING, VERIFIED, DRIFT, CLOSED };
const char* checkpoint_status_name(CheckpointStatus s);
std::optional<CheckpointStatus> parse_checkpoint_status(const std::string& s);

struct Checkpoint {
  CheckpointStatus status = CheckpointStatus::PLANNED;
  std::string iter;           // planned "iterNNN"
  int round = 0;
  std::string bottleneck;
  std::string idea;
  std::string expected_gain;
  std::vector<std::string> levers;
  std::string base;           // the kernel the idea derives from
  std::string created_at;
  std::string updated_at;
  json extra = json::object();

  json to_json() const;
  static std::optional<Checkpoint> from_json(const json& j, std::string* why = nullptr);
  bool open() const { return status != CheckpointStatus::CLOSED; }
};

// nullopt if there is no checkpoint file; throws Error(corrupt) if it cannot be read.
std::optional<Checkpoint> read_checkpoint(const Workspace& ws, const TaskRef& task);
// Replaced atomically; `durable` adds the fsyncs (a plan is durable; status changes made on the
// way, such as the close by store-round, need not be: the round record is the truth).
void write_checkpoint(const Workspace& ws, const TaskRef& task, const Checkpoint& cp, bool durable = true);

// task_config.json: nullopt if absent; throws Error(corrupt) on a damaged file.
std::optional<json> read_task_config(const Workspace& ws, const TaskRef& task);
// Creates task_config.json if absent (with `task_uid`, or a fresh one if empty). If it exists
// with a different task_uid, throws Error(conflict). Returns the stored document.
json ensure_task_config(const Workspace& ws, const TaskRef& task, const std::string& task_uid,
                        const json& extra = json::object());
std::string new_task_uid();

}  // namespace croq
