// A task's round history as the seeds' rules read it: which structure each kept kernel has, the
// active bases (at most two structurally distinct top kernels), the streak of macro-only rounds,
// the DISCARD streak on each base, and the combinations already tried.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "croq/ledger/idea_plan.hpp"
#include "croq/ledger/ledger.hpp"

namespace croq {

struct RoundView {
  int round = 0;
  std::string kernel;
  Decision decision = Decision::DISCARD;
  std::optional<double> tflops;
  std::string timestamp;
  IdeaPlan plan;          // base, params, structural, structure (from the record)
  std::string structure;       // structure id this candidate has (its base's, or a new one)
  std::string base_structure;  // structure id of the base it derives from ("" for the starting kernel)
};

struct ActiveBase {
  std::string structure;  // structure id
  std::string kernel;     // the best kernel of that structure
  double tflops = 0;
  std::string timestamp;  // when that best was stored
  int discard_streak = 0; // consecutive non-KEEP rounds on this base since its last KEEP
  std::string streak_since;  // timestamp of the 7th discard, when the streak reached 7
  json to_json() const;
};

class History {
 public:
  static History load(const Ledger& ledger);
  static History from_records(const std::vector<RoundRecord>& records);

  const std::vector<RoundView>& rounds() const { return m_rounds; }
  // The structure id of a kept kernel ("" if unknown).
  std::string structure_of(const std::string& kernel) const;
  std::vector<ActiveBase> active_bases(size_t limit = 2) const;
  std::optional<ActiveBase> base_of_structure(const std::string& structure) const;
  int macro_streak() const;   // consecutive macro-only tuning rounds at the end
  int discard_streak() const; // consecutive non-KEEP tuning rounds at the end (any base)
  bool tried(const std::string& combination) const { return m_combinations.count(combination) > 0; }
  std::optional<RoundView> find(const std::string& kernel) const;

 private:
  std::vector<RoundView> m_rounds;
  std::map<std::string, std::string> m_structure;   // kept kernel -> structure
  std::set<std::string> m_combinations;
};

}  // namespace croq
