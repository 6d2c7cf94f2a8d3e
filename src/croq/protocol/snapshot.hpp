// One view of a task's state for one step of the loop: the ledger (its index, records and failed
// attempts), the evidence log, the checkpoint and protocol.json, each read from disk at most once
// and only when the step asks for it. A step — a guard with the wording of its refusal, `croq
// state`, one step of `croq tune` — answers every question from one snapshot instead of
// re-reading the same files for each question (util/read_count.hpp counts the reads; tests hold a
// step to one read of each file). A snapshot is not refreshed: after a verb changes the task, the
// next step takes a new one.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "croq/ledger/documents.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/protocol/evidence.hpp"
#include "croq/protocol/history.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

class TaskSnapshot {
 public:
  TaskSnapshot(const Workspace& ws, TaskRef task);
  // With protocol.json already read (a guard reads it first: an advisory task needs no more).
  TaskSnapshot(const Workspace& ws, TaskRef task, std::optional<ProtocolConfig> protocol);

  const Workspace& workspace() const { return *m_ws; }
  const TaskRef& task() const { return m_task; }

  // protocol.json (nullopt: an advisory task without one); a damaged one throws (Error corrupt).
  const std::optional<ProtocolConfig>& protocol() const;
  // protocol.json, or the defaults (advisory) without one.
  const ProtocolConfig& config() const;
  bool enforced() const { return protocol() && protocol()->enforced; }

  // The ledger's index: folded from records() when they are loaded already, else the ledger's
  // incremental index.
  const LedgerIndex& index() const;
  const std::vector<RoundRecord>& records() const;  // idea-log.jsonl, oldest first
  const History& history() const;                   // of records()
  const std::vector<json>& attempts() const;        // attempt-log.jsonl
  const std::vector<Evidence>& evidence() const;    // evidence.jsonl, oldest first
  // checkpoint.json as it is (open or closed); nullopt if none or damaged (checkpoint_error()).
  const std::optional<Checkpoint>& checkpoint() const;
  const std::string& checkpoint_error() const;     // why checkpoint.json could not be read ("")
  int next_iter() const;                           // what `croq next-iter` would hand out now

  std::optional<Checkpoint> open_checkpoint() const;
  // Failed attempts logged for `planned_iter` at or after `since`.
  int attempts_for(const std::string& planned_iter, const std::string& since) const;
  // The newest evidence of `kind` (for `kernel`, any when empty) at or after `since`.
  std::optional<Evidence> latest(EvidenceKind kind, const std::string& kernel = {}, const std::string& since = {}) const;
  // The same, counting only entries whose file is still there with the recorded hash.
  std::optional<Evidence> latest_valid(EvidenceKind kind, const std::string& kernel = {}) const;
  // The newest stored record of `kernel` (nullptr if none).
  const RoundRecord* record_of(const std::string& kernel) const;

 private:
  const Workspace* m_ws;
  TaskRef m_task;
  mutable bool m_protocol_read = false;
  mutable std::optional<ProtocolConfig> m_protocol;
  mutable std::optional<ProtocolConfig> m_config;
  mutable std::optional<LedgerIndex> m_index;
  mutable std::optional<std::vector<RoundRecord>> m_records;
  mutable std::optional<History> m_history;
  mutable std::optional<std::vector<json>> m_attempts;
  mutable std::optional<std::vector<Evidence>> m_evidence;
  mutable bool m_checkpoint_read = false;
  mutable std::optional<Checkpoint> m_checkpoint;
  mutable std::string m_checkpoint_error;
  mutable std::optional<int> m_next_iter;
};

}  // namespace croq
