// Counts of state-document reads (read_count.hpp).
#include "croq/util/read_count.hpp"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

namespace croq {

namespace {

std::atomic<long> g_reads[6];
thread_local int t_paused = 0;

}  // namespace

std::string StateReads::describe() const {
  return fmt::format("ledger index {}, ledger records {}, attempts {}, evidence {}, checkpoint {}, protocol {}",
                     ledger_index, ledger_records, attempts, evidence, checkpoint, protocol);
}

long StateReads::max() const {
  return std::max({ledger_index, ledger_records, attempts, evidence, checkpoint, protocol});
}

void count_state_read(StateDoc doc) {
  if (t_paused > 0) return;
  g_reads[static_cast<int>(doc)].fetch_add(1, std::memory_order_relaxed);
}

StateReads state_reads() {
  auto at = [](StateDoc d) { return g_reads[static_cast<int>(d)].load(std::memory_order_relaxed); };
  return {at(StateDoc::ledger_index), at(StateDoc::ledger_records), at(StateDoc::attempts), at(StateDoc::evidence), at(StateDoc::checkpoint),
          at(StateDoc::protocol)};
}

StateReadsPaused::StateReadsPaused() { ++t_paused; }
StateReadsPaused::~StateReadsPaused() { --t_paused; }

}  // namespace croq
