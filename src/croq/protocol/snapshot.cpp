// The task snapshot (snapshot.hpp).
#include "croq/protocol/snapshot.hpp"

#include "croq/util/error.hpp"

namespace croq {

TaskSnapshot::TaskSnapshot(const Workspace& ws, TaskRef task) : m_ws(&ws), m_task(std::move(task)) {}

TaskSnapshot::TaskSnapshot(const Workspace& ws, TaskRef task, std::optional<ProtocolConfig> protocol)
    : m_ws(&ws), m_task(std::move(task)), m_protocol_read(true), m_protocol(std::move(protocol)) {}

const std::optional<ProtocolConfig>& TaskSnapshot::protocol() const {
  if (!m_protocol_read) {
    m_protocol = read_protocol(*m_ws, m_task);
    m_protocol_read = true;
  }
  return m_protocol;
}

const ProtocolConfig& TaskSnapshot::config() const {
  if (!m_config) {
    if (protocol()) {
      m_config = *protocol();
    } else {
      m_config = ProtocolConfig{};
      m_config->enforced = false;
    }
  }
  return *m_config;
}

const LedgerIndex& TaskSnapshot::index() const {
  if (!m_index) {
    std::error_code ec;
    if (m_records && std::filesystem::file_size(m_ws->idea_log(m_task), ec) > 0 && !ec) {
      LedgerIndex idx;
      for (const auto& r : *m_records) idx.fold(r, m_ws);
      m_index = std::move(idx);
    } else {
      m_index = Ledger(*m_ws, m_task).index();
    }
  }
  return *m_index;
}

const std::vector<RoundRecord>& TaskSnapshot::records() const {
  if (!m_records) m_records = Ledger(*m_ws, m_task).read_all().records;
  return *m_records;
}

const History& TaskSnapshot::history() const {
  if (!m_history) m_history = History::from_records(records());
  return *m_history;
}

const std::vector<json>& TaskSnapshot::attempts() const {
  if (!m_attempts) m_attempts = Ledger(*m_ws, m_task).read_attempts(nullptr);
  return *m_attempts;
}

const std::vector<Evidence>& TaskSnapshot::evidence() const {
  if (!m_evidence) m_evidence = read_evidence(*m_ws, m_task);
  return *m_evidence;
}

const std::optional<Checkpoint>& TaskSnapshot::checkpoint() const {
  if (!m_checkpoint_read) {
    m_checkpoint_read = true;
    try {
      m_checkpoint = read_checkpoint(*m_ws, m_task);
    } catch (const Error& e) {
      m_checkpoint_error = e.what();  // reported by derive_state (`croq state`), treated as no plan
    }
  }
  return m_checkpoint;
}

const std::string& TaskSnapshot::checkpoint_error() const {
  checkpoint();
  return m_checkpoint_error;
}

int TaskSnapshot::next_iter() const {
  if (!m_next_iter) m_next_iter = Ledger(*m_ws, m_task).peek_next_iter(index(), records());
  return *m_next_iter;
}

std::optional<Checkpoint> TaskSnapshot::open_checkpoint() const {
  if (checkpoint() && checkpoint()->open()) return checkpoint();
  return std::nullopt;
}

int TaskSnapshot::attempts_for(const std::string& planned_iter, const std::string& since) const {
  int n = 0;
  for (const auto& a : attempts()) {
    if (get_string(a, "planned_iter").value_or("") == planned_iter && get_string(a, "timestamp").value_or("") >= since) ++n;
  }
  return n;
}

std::optional<Evidence> TaskSnapshot::latest(EvidenceKind kind, const std::string& kernel, const std::string& since) const {
  const auto& all = evidence();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->kind == kind && (kernel.empty() || it->kernel == kernel) && it->timestamp >= since) return *it;
  }
  return std::nullopt;
}

std::optional<Evidence> TaskSnapshot::latest_valid(EvidenceKind kind, const std::string& kernel) const {
  const auto& all = evidence();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->kind != kind || (!kernel.empty() && it->kernel != kernel)) continue;
    if (intact_file(*m_ws, *it)) return *it;
  }
  return std::nullopt;
}

const RoundRecord* TaskSnapshot::record_of(const std::string& kernel) const {
  const auto& all = records();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->kernel == kernel) return &*it;
  }
  return nullptr;
}

}  // namespace croq
