// Round history for the rules (history.hpp).
#include "croq/protocol/history.hpp"

#include "croq/util/text.hpp"

#include <algorithm>

namespace croq {

json ActiveBase::to_json() const {
  return {{"structure", structure}, {"kernel", kernel}, {"tflops", tflops}, {"discard_streak", discard_streak}};
}

History History::load(const Ledger& ledger) { return from_records(ledger.read_all().records); }

History History::from_records(const std::vector<RoundRecord>& records) {
  History h;
  for (const auto& r : records) {
    if (r.decision == Decision::BASELINE) continue;
    RoundView v;
    v.round = r.round;
    v.kernel = r.kernel;
    v.decision = r.decision;
    v.tflops = r.tflops;
    v.timestamp = r.timestamp;
    v.plan = IdeaPlan::from_json(r.extra);
    // Structure: recorded, else inherited from the base, else (the starting kernel) its own name.
    if (!v.plan.base.empty()) {
      auto it = h.m_structure.find(v.plan.base);
      v.base_structure = it != h.m_structure.end() ? it->second : v.plan.base;
    }
    std::string s = v.plan.structure;
    if (s.empty() && !v.plan.base.empty()) {
      auto it = h.m_structure.find(v.plan.base);
      if (it != h.m_structure.end()) s = v.plan.is_structural() ? r.kernel : it->second;
    }
    if (s.empty()) s = v.plan.is_structural() || v.plan.base.empty() ? r.kernel : v.plan.base;
    v.structure = s;
    if (r.decision == Decision::KEEP) h.m_structure[r.kernel] = s;
    if (r.round >= 1 && (!v.plan.base.empty() || !v.plan.params.empty() || !v.plan.structural.empty())) {
      h.m_combinations.insert(v.plan.combination_key());
    }
    h.m_rounds.push_back(std::move(v));
  }
  return h;
}

std::string History::structure_of(const std::string& kernel) const {
  auto it = m_structure.find(kernel);
  return it == m_structure.end() ? "" : it->second;
}

std::optional<RoundView> History::find(const std::string& kernel) const {
  for (auto it = m_rounds.rbegin(); it != m_rounds.rend(); ++it) {
    if (it->kernel == kernel) return *it;
  }
  return std::nullopt;
}

std::vector<ActiveBase> History::active_bases(size_t limit) const {
  std::map<std::string, ActiveBase> best;
  for (const auto& r : m_rounds) {
    if (r.decision != Decision::KEEP || !r.tflops) continue;
    auto& b = best[r.structure];
    if (b.kernel.empty() || *r.tflops > b.tflops) {
      b.structure = r.structure;
      b.kernel = r.kernel;
      b.tflops = *r.tflops;
      b.timestamp = r.timestamp;
    }
  }
  // Discard streaks per structure: rounds whose base has that structure, since its last KEEP.
  for (auto& [s, b] : best) {
    int streak = 0;
    std::string seventh;
    for (const auto& r : m_rounds) {
      if (r.round < 1 || r.base_structure != s) continue;
      if (r.decision == Decision::KEEP) {
        streak = 0;
        seventh.clear();
      } else {
        ++streak;
        if (streak == 7) seventh = r.timestamp;
      }
    }
    b.discard_streak = streak;
    b.streak_since = seventh;
  }
  std::vector<ActiveBase> out;
  for (auto& [s, b] : best) out.push_back(b);
  std::sort(out.begin(), out.end(), [](const ActiveBase& a, const ActiveBase& b) { return a.tflops > b.tflops; });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::optional<ActiveBase> History::base_of_structure(const std::string& structure) const {
  for (const auto& b : active_bases(1000)) {
    if (b.structure == structure) return b;
  }
  return std::nullopt;
}

int History::macro_streak() const {
  int n = 0;
  for (auto it = m_rounds.rbegin(); it != m_rounds.rend(); ++it) {
    if (it->round < 1) break;
    // The starting kernel (iter001, no base) is where tuning begins, not a macro change, wherever
    // its round number (agents often store it as round 1).
    if (it->plan.base.empty() && starts_with(it->kernel, "iter001_")) break;
    if (it->plan.is_structural()) break;
    ++n;
  }
  return n;
}

int History::discard_streak() const {
  int n = 0;
  for (auto it = m_rounds.rbegin(); it != m_rounds.rend(); ++it) {
    if (it->round < 1 || it->decision == Decision::KEEP) break;
    ++n;
  }
  return n;
}

}  // namespace croq
