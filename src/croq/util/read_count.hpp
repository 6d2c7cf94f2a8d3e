// How often croq read a task's state documents from disk in this process: the ledger
// (idea-log.jsonl and its index, attempt-log.jsonl), the evidence log, the checkpoint and
// protocol.json. Each reader counts itself; tests compare the counts around a piece of work to
// show that a step loads the task's state once (protocol/snapshot.hpp) instead of re-reading it.
// Counting is a relaxed atomic increment: free in production.
#pragma once
#include <string>

namespace croq {

enum class StateDoc { ledger_index, ledger_records, attempts, evidence, checkpoint, protocol };

struct StateReads {
  long ledger_index = 0;    // Ledger::index: the incremental index of idea-log.jsonl
  long ledger_records = 0;  // Ledger::read_all / tail: the records of idea-log.jsonl
  long attempts = 0;    // attempt-log.jsonl
  long evidence = 0;    // evidence.jsonl
  long checkpoint = 0;  // checkpoint.json
  long protocol = 0;    // protocol.json
  long total() const { return ledger_index + ledger_records + attempts + evidence + checkpoint + protocol; }
  StateReads operator-(const StateReads& o) const {
    return {ledger_index - o.ledger_index, ledger_records - o.ledger_records, attempts - o.attempts,
            evidence - o.evidence, checkpoint - o.checkpoint, protocol - o.protocol};
  }
  // The largest count of any one document.
  long max() const;
  std::string describe() const;
};

void count_state_read(StateDoc doc);
// The reads counted so far in this process (reads made while a StateReadsPaused lives on the same
// thread are not counted).
StateReads state_reads();

// While it lives, this thread's reads are not counted (a test's fake of croq's verbs, which
// stand for child processes, reads the task's state without adding to the driver's count).
class StateReadsPaused {
 public:
  StateReadsPaused();
  ~StateReadsPaused();
  StateReadsPaused(const StateReadsPaused&) = delete;
  StateReadsPaused& operator=(const StateReadsPaused&) = delete;
};

}  // namespace croq
