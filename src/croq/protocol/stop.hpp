// The seeds' valid stop conditions, decided from evidence: the invocation's round budget is met,
// or the task is stuck in a local minimum (10 consecutive rounds not kept after the 7/8/9
// escalation path, structural resets included, was tried). Read by `croq state` and by the
// supervisor of agent sessions (`croq agent run`).
#pragma once
#include <string>

#include "croq/protocol/protocol.hpp"

namespace croq {

struct StopCheck {
  bool stop_allowed = false;
  std::string reason;
};

StopCheck stop_condition(const Workspace& ws, const TaskRef& task, const TaskState& state);

}  // namespace croq
