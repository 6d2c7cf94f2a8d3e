// The stop conditions (stop.hpp).
#include "croq/protocol/stop.hpp"

#include <fmt/format.h>

#include "croq/ledger/ledger.hpp"

namespace croq {

StopCheck stop_condition(const Workspace& ws, const TaskRef& task, const TaskState& state) {
  const json& b = state.details.contains("budget") ? state.details["budget"] : json::object();
  int completed = b.value("completed", 0), target = b.value("target_rounds", 50);
  int streak = state.details.value("discard_streak", 0);
  StopCheck out;
  out.stop_allowed = completed >= target;
  out.reason = out.stop_allowed ? "the round budget is met" : fmt::format("{} of {} rounds done", completed, target);
  if (!out.stop_allowed && streak >= 10) {
    History h = History::load(Ledger(ws, task));
    bool structural_tried = false;
    int seen = 0;
    for (auto it = h.rounds().rbegin(); it != h.rounds().rend() && seen < streak; ++it, ++seen) {
      structural_tried = structural_tried || it->plan.is_structural();
    }
    if (structural_tried) {
      out.stop_allowed = true;
      out.reason = fmt::format("{} consecutive rounds not kept after the escalation path (structural resets tried): a "
                               "local minimum — report it",
                               streak);
    }
  }
  return out;
}

}  // namespace croq
