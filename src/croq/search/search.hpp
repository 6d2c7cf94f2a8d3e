// croq's own idea generator: given the base kernel's configuration in a family, the classifier's
// bottleneck and the history of the task, it proposes ONE next candidate that respects the seeds'
// rules: legal for the problem, not a repeat of a stored combination, structural when the rules
// require it. First the family's alternatives (other archetypes for the problem) not yet measured,
// one each; then single parameter moves (or, when none is left, pairs), the parameters the
// bottleneck points at first; with probability `explore` a random legal move is taken instead. The
// random generator is seeded, so a run can be replayed.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "croq/ledger/idea_plan.hpp"
#include "croq/search/family.hpp"

namespace croq {

struct Proposal {
  FamilyConfig config;
  std::vector<std::string> changed;  // parameter names that differ from the base
  std::string from_to;               // "VEC 4->8, MR 2->4"
  bool structural = false;
  std::string category;              // tiling pipeline memory compute misc
  std::string idea;                  // one human-readable sentence
  std::string tag;                   // [a-z][a-z0-9_]{1,30}
  std::string expected_gain;
  IdeaPlan plan;                     // base, params, structural (as written into the checkpoint)
  json to_json() const;
};

struct SearchRules {
  bool must_be_structural = false;   // after two macro-only rounds, or the 8-9 discard reset
  double explore = 0.15;
  // Whether a configuration has been built and measured in this task already (from any base);
  // the family's alternatives are proposed only while they have not. Empty: never.
  std::function<bool(const FamilyConfig&)> measured;
};

class Search {
 public:
  Search(std::shared_ptr<KernelFamily> family, FamilyProblem problem, uint64_t seed);

  // nullopt when every neighbour of the base is illegal or already tried.
  std::optional<Proposal> propose(const std::string& base_kernel, const FamilyConfig& base, const std::string& bottleneck,
                                  const std::function<bool(const std::string& combination)>& tried,
                                  const SearchRules& rules);

  // A restart once every single step and pair around the base is illegal or tried: a legal
  // configuration the task has not measured, a random 2-4 of the family's parameters changed from
  // the base (so it stays near what was kept), else any random legal one. nullopt when a few
  // thousand draws find none (the space is measured, or almost).
  std::optional<Proposal> restart(const std::string& base_kernel, const FamilyConfig& base, const std::string& bottleneck,
                                  const std::function<bool(const std::string& combination)>& tried,
                                  const SearchRules& rules);

  const KernelFamily& family() const { return *m_family; }
  uint64_t seed() const { return m_seed; }

 private:
  std::shared_ptr<KernelFamily> m_family;
  FamilyProblem m_problem;
  uint64_t m_seed;
  std::mt19937_64 m_rng;
};

// Why a bottleneck suggests moving a parameter (for the idea sentence).
std::string rationale(const std::string& bottleneck, const ParamSpec& p, bool up);

}  // namespace croq
