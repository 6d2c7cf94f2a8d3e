// Checkpoint and task-config documents (documents.hpp).
#include "croq/ledger/documents.hpp"

#include <fmt/format.h>
#include <random>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/read_count.hpp"
#include "croq/util/text.hpp"
#include "croq/util/time.hpp"

namespace croq {

const char* checkpoint_status_name(CheckpointStatus s) {
  switch (s) {
    case CheckpointStatus::PLANNED: return "PLANNED";
    case CheckpointStatus::IMPLEMENTING: return "IMPLEMENTING";
    case CheckpointStatus::VERIFIED: return "VERIFIED";
    case CheckpointStatus::DRIFT: return "DRIFT";
    case CheckpointStatus::CLOSED: return "CLOSED";
  }
  return "?";
}

std::optional<CheckpointStatus> parse_checkpoint_status(const std::string& s) {
  for (auto v : {CheckpointStatus::PLANNED, CheckpointStatus::IMPLEMENTING, CheckpointStatus::VERIFIED,
                 CheckpointStatus::DRIFT, CheckpointStatus::CLOSED}) {
    if (s == checkpoint_status_name(v)) return v;
  }
  return std::nullopt;
}

json Checkpoint::to_json() const {
  json j;
  j["schema"] = k_checkpoint_schema;
  j["status"] = checkpoint_status_name(status);
  j["iter"] = iter;
  j["round"] = round;
  j["bottleneck"] = bottleneck;
  j["idea"] = idea;
  j["expected_gain"] = expected_gain;
  j["levers"] = levers;
  j["base"] = base;
  j["created_at"] = created_at;
  j["updated_at"] = updated_at;
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    if (!j.contains(it.key())) j[it.key()] = it.value();
  }
  return j;
}

std::optional<Checkpoint> Checkpoint::from_json(const json& j, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<Checkpoint> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (!j.is_object()) return fail("not a JSON object");
  auto schema = get_string(j, "schema");
  if (schema && *schema != k_checkpoint_schema) return fail("unknown schema '" + *schema + "'");
  Checkpoint c;
  auto st = parse_checkpoint_status(get_string(j, "status").value_or("PLANNED"));
  if (!st) return fail("unknown status '" + get_string(j, "status").value_or("") + "'");
  c.status = *st;
  c.iter = get_string(j, "iter").value_or("");
  c.round = static_cast<int>(get_integer(j, "round").value_or(0));
  c.bottleneck = get_string(j, "bottleneck").value_or("");
  c.idea = get_string(j, "idea").value_or("");
  c.expected_gain = get_string(j, "expected_gain").value_or("");
  if (j.contains("levers")) {
    if (j["levers"].is_array()) {
      for (const auto& l : j["levers"]) {
        if (l.is_string()) c.levers.push_back(l.get<std::string>());
      }
    } else if (j["levers"].is_string()) {
      std::string s = j["levers"].get<std::string>();
      size_t p = 0;
      while (p <= s.size()) {
        size_t e = s.find(',', p);
        std::string item = s.substr(p, e == std::string::npos ? std::string::npos : e - p);
        while (!item.empty() && item.front() == ' ') item.erase(item.begin());
        while (!item.empty() && item.back() == ' ') item.pop_back();
        if (!item.empty()) c.levers.push_back(item);
        if (e == std::string::npos) break;
        p = e + 1;
      }
    }
  }
  c.base = get_string(j, "base").value_or("");
  c.created_at = get_string(j, "created_at").value_or("");
  c.updated_at = get_string(j, "updated_at").value_or(c.created_at);
  static const char* known[] = {"schema", "status", "iter", "round", "bottleneck", "idea", "expected_gain",
                                "levers", "base", "created_at", "updated_at"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool k = false;
    for (const char* f : known) k = k || it.key() == f;
    if (!k) c.extra[it.key()] = it.value();
  }
  return c;
}

std::optional<Checkpoint> read_checkpoint(const Workspace& ws, const TaskRef& task) {
  count_state_read(StateDoc::checkpoint);
  const auto path = ws.checkpoint(task);
  auto text = read_file(path);
  if (!text) return std::nullopt;
  std::string err;
  auto j = try_parse_json(*text, &err);
  std::string why = "not valid JSON: " + preview(err, 120);
  std::optional<Checkpoint> c;
  if (j) c = Checkpoint::from_json(*j, &why);
  if (!c) {
    throw_corrupt(fmt::format("checkpoint {} cannot be read: {}", ws.display(path), why),
                  "write a new plan with `croq checkpoint write` (the damaged file is replaced)");
  }
  return c;
}

void write_checkpoint(const Workspace& ws, const TaskRef& task, const Checkpoint& cp, bool durable) {
  atomic_write(ws.checkpoint(task), dump_pretty(cp.to_json()), durable, ws.root());
}

std::optional<json> read_task_config(const Workspace& ws, const TaskRef& task) {
  const auto path = ws.task_config(task);
  auto text = read_file(path);
  if (!text) return std::nullopt;
  auto j = try_parse_json(*text);
  if (!j || !j->is_object()) {
    throw_corrupt(fmt::format("{} is not a JSON object", ws.display(path)),
                  "restore it from version control or delete it and pass --task-uid again");
  }
  return j;
}

std::string new_task_uid() {
  std::random_device rd;
  std::mt19937_64 rng(rd() ^ (static_cast<uint64_t>(rd()) << 32));
  return fmt::format("{:016x}", rng()).substr(0, 12);
}

json ensure_task_config(const Workspace& ws, const TaskRef& task, const std::string& task_uid,
                        const json& extra) {
  if (auto existing = read_task_config(ws, task)) {
    auto uid = get_string(*existing, "task_uid").value_or("");
    if (!task_uid.empty() && !uid.empty() && uid != task_uid) {
      throw Error(ExitCode::conflict,
                  fmt::format("task {} already has task_uid {} (asked for {})", task.id(), uid, task_uid),
                  "use the task_uid already recorded, or start a different task (other model name)");
    }
    if (uid.empty() && !task_uid.empty()) {
      (*existing)["task_uid"] = task_uid;
      atomic_write(ws.task_config(task), dump_pretty(*existing), /*durable=*/true, ws.root());
    }
    return *existing;
  }
  json j;
  j["schema"] = k_task_schema;
  j["task_uid"] = task_uid.empty() ? new_task_uid() : task_uid;
  j["gpu"] = task.gpu;
  j["dsl"] = task.dsl;
  j["shape_key"] = task.shape.text;
  j["model"] = task.model;
  j["created_at"] = now_iso8601();
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    if (!j.contains(it.key())) j[it.key()] = it.value();
  }
  atomic_write(ws.task_config(task), dump_pretty(j), /*durable=*/true, ws.root());
  return j;
}

}  // namespace croq
