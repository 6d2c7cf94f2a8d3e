// The search's move generation and ranking (search.hpp).
#include "croq/search/search.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <functional>
#include <map>

namespace croq {

json Proposal::to_json() const {
  return {{"config", config_to_json(config)}, {"changed", changed}, {"from_to", from_to}, {"structural", structural},
          {"category", category}, {"idea", idea}, {"tag", tag}, {"expected_gain", expected_gain},
          {"plan", plan.to_json()}};
}

namespace {

// Fills the proposal's changed, from_to, structural and category from the parameters it sets on
// `base`. The category is that of the first structural parameter when `structural_category`
// (a whole other archetype is named by its structure), else that of the first parameter.
void describe_changes(Proposal& p, const FamilyConfig& base, const std::vector<std::pair<std::string, std::string>>& set,
                      const std::map<std::string, ParamSpec>& by_name, bool structural_category) {
  std::vector<std::string> parts;
  std::string category;
  for (const auto& [k, v] : set) {
    const ParamSpec& spec = by_name.at(k);
    auto b = base.find(k);
    p.changed.push_back(k);
    parts.push_back(fmt::format("{} {}->{}", k, b == base.end() ? "-" : b->second, v));
    p.structural = p.structural || spec.structural;
    if (category.empty() && (spec.structural || !structural_category)) category = spec.category;
  }
  p.from_to = fmt::format("{}", fmt::join(parts, ", "));
  p.category = category.empty() ? "misc" : category;
}

}  // namespace

Search::Search(std::shared_ptr<KernelFamily> family, FamilyProblem problem, uint64_t seed)
    : m_family(std::move(family)), m_problem(std::move(problem)), m_seed(seed), m_rng(seed) {}

std::string rationale(const std::string& b, const ParamSpec& p, bool up) {
  const std::string& c = p.category;
  if (b == "memory_bound") {
    if (c == "tiling") return up ? "larger blocks raise data reuse per byte moved" : "smaller blocks fit the cache better";
    if (c == "memory") return "a better memory-hierarchy strategy cuts traffic to the slow level";
    if (c == "pipeline") return "deeper pipelining hides memory latency";
    return "more work per load raises arithmetic intensity";
  }
  if (b == "compute_bound") {
    if (c == "compute") return up ? "more independent math per instruction raises throughput" : "a smaller tile frees registers";
    if (c == "pipeline") return "more overlap keeps the math units fed";
    return "a different shape of work uses the math units better";
  }
  if (b == "latency_bound") {
    if (c == "pipeline") return "more operations in flight hide latency";
    if (c == "compute") return "more independent accumulators hide instruction latency";
    return "more parallel work hides latency";
  }
  if (b == "launch_bound") return "less fixed overhead per launch for a small problem";
  return "the profile shows no single limiter: try the most promising lever";
}

namespace {

std::map<std::string, ParamSpec> specs_by_name(const KernelFamily& family) {
  std::map<std::string, ParamSpec> by_name;
  for (const auto& s : family.params()) by_name[s.name] = s;
  return by_name;
}

// The plan exactly as it will be stored: its structural text lists the structural parameters
// that change (in name order), so the same configuration from the same base always has the same
// combination key, whichever move reached it.
IdeaPlan plan_from(const KernelFamily& family, const std::map<std::string, ParamSpec>& by_name,
                   const std::string& base_kernel, const FamilyConfig& base, const FamilyConfig& cfg) {
  IdeaPlan plan;
  plan.base = base_kernel;
  plan.params = config_to_json(cfg);
  plan.family = family.name();
  std::vector<std::string> parts;
  for (const auto& [k, v] : cfg) {
    auto spec = by_name.find(k);
    auto b = base.find(k);
    if (spec != by_name.end() && spec->second.structural && b != base.end() && b->second != v)
      parts.push_back(fmt::format("{} {}->{}", k, b->second, v));
  }
  if (!parts.empty()) plan.structural = fmt::format("change {}", fmt::join(parts, ", "));
  return plan;
}

std::string make_tag(const std::vector<std::pair<std::string, std::string>>& moves) {
  std::string tag;
  for (const auto& [k, v] : moves) {
    if (!tag.empty()) tag += "_";
    for (char c : k + v) {
      char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (std::isalnum(static_cast<unsigned char>(l))) tag += l;
      else if (!tag.empty() && tag.back() != '_') tag += '_';
    }
  }
  if (tag.empty() || !std::isalpha(static_cast<unsigned char>(tag[0]))) tag = "p" + tag;
  if (tag.size() > 31) tag.resize(31);
  while (tag.size() < 2) tag += "x";
  while (!tag.empty() && tag.back() == '_') tag.pop_back();
  return tag;
}

}  // namespace

std::optional<Proposal> Search::propose(const std::string& base_kernel, const FamilyConfig& base,
                                        const std::string& bottleneck,
                                        const std::function<bool(const std::string&)>& tried,
                                        const SearchRules& rules) {
  const auto specs = m_family->params();
  std::map<std::string, ParamSpec> by_name = specs_by_name(*m_family);
  // Priority: the bottleneck's parameters first, then the rest in the family's order.
  std::vector<std::string> order = m_family->params_for_bottleneck(bottleneck);
  for (const auto& s : specs) {
    if (std::find(order.begin(), order.end(), s.name) == order.end()) order.push_back(s.name);
  }
  struct Move {
    std::vector<std::pair<std::string, std::string>> set;  // param -> new value
    int rank = 0;
    bool up = true;
  };
  auto plan_for = [&](const FamilyConfig& cfg) { return plan_from(*m_family, by_name, base_kernel, base, cfg); };
  // A move that lands on a configuration the task has measured already (reached from another
  // base: PACK_B 0->1 from the default, then 1->0 from that kernel) is a repeat whatever its
  // combination key; croq measure refuses it (no_repeat), so it is never proposed.
  auto legal_untried = [&](const FamilyConfig& cfg, bool, std::string* combination) {
    if (m_family->violation(cfg, m_problem)) return false;
    if (rules.measured && cfg != base && rules.measured(cfg)) return false;
    *combination = plan_for(cfg).combination_key();
    return !tried(*combination);
  };
  // The family's alternatives first: each a whole configuration, measured once per task.
  if (rules.measured) {
    for (const auto& alt : m_family->alternatives(m_problem)) {
      if (alt.config == base || rules.measured(alt.config)) continue;
      std::string comb;
      if (!legal_untried(alt.config, true, &comb)) continue;
      std::vector<std::pair<std::string, std::string>> set;
      for (const auto& [k, v] : alt.config) {
        auto b = base.find(k);
        if (b == base.end() || b->second != v) set.emplace_back(k, v);
      }
      Proposal p;
      p.config = alt.config;
      describe_changes(p, base, set, by_name, true);
      if (rules.must_be_structural && !p.structural) continue;
      p.idea = fmt::format("{}: try the family's {} ({}) — another archetype for this problem, measured once before "
                           "single steps",
                           bottleneck, alt.name, p.from_to);
      std::vector<std::pair<std::string, std::string>> tag_moves;
      tag_moves.emplace_back("alt_", alt.tag.empty() ? alt.name : alt.tag);
      p.tag = make_tag(tag_moves);
      p.expected_gain = "+5% TFLOPS";
      p.plan = plan_for(alt.config);
      return p;
    }
  }
  std::vector<Move> moves;
  for (size_t r = 0; r < order.size(); ++r) {
    const ParamSpec& p = by_name[order[r]];
    if (rules.must_be_structural && !p.structural) continue;
    auto cur = base.find(p.name);
    if (cur == base.end()) continue;
    auto pos = std::find(p.values.begin(), p.values.end(), cur->second) - p.values.begin();
    for (int step : {+1, -1, +2, -2}) {
      long idx = pos + step;
      if (idx < 0 || idx >= static_cast<long>(p.values.size())) continue;
      Move m;
      m.set = {{p.name, p.values[static_cast<size_t>(idx)]}};
      // Breadth first: one step of every lever (in the bottleneck's order) before a second step
      // or a jump on any of them, so that a weak first guess of the bottleneck costs few rounds.
      const int step_order = step == 1 ? 0 : step == -1 ? 1 : step == 2 ? 2 : 3;
      m.rank = step_order * 1000 + static_cast<int>(r);
      m.up = step > 0;
      moves.push_back(m);
    }
  }
  // Pairs: a structural move combined with a macro move that makes it legal (e.g. BM with MR).
  std::vector<Move> pairs;
  for (const auto& a : moves) {
    for (const auto& b : moves) {
      if (a.set[0].first >= b.set[0].first) continue;
      Move m;
      m.set = {a.set[0], b.set[0]};
      m.rank = 100000 + a.rank + b.rank;
      m.up = a.up;
      pairs.push_back(m);
    }
  }
  std::vector<std::pair<Move, FamilyConfig>> legal;
  auto consider = [&](const std::vector<Move>& list) {
    for (const auto& m : list) {
      FamilyConfig cfg = base;
      bool structural = false;
      for (const auto& [k, v] : m.set) {
        cfg[k] = v;
        structural = structural || by_name[k].structural;
      }
      if (rules.must_be_structural && !structural) continue;
      std::string comb;
      if (legal_untried(cfg, structural, &comb)) legal.emplace_back(m, cfg);
    }
  };
  consider(moves);
  if (legal.empty()) consider(pairs);
  if (legal.empty()) return std::nullopt;
  std::sort(legal.begin(), legal.end(), [](const auto& x, const auto& y) { return x.first.rank < y.first.rank; });
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  size_t pick = 0;
  if (coin(m_rng) < rules.explore && legal.size() > 1) {
    std::uniform_int_distribution<size_t> any(1, legal.size() - 1);
    pick = any(m_rng);
  }
  const auto& [move, cfg] = legal[pick];
  Proposal p;
  p.config = cfg;
  describe_changes(p, base, move.set, by_name, false);
  const ParamSpec& first = by_name[move.set[0].first];
  p.idea = fmt::format("{}: set {} ({}) because {}", bottleneck, p.from_to, first.description,
                       rationale(bottleneck, first, move.up));
  p.tag = make_tag(move.set);
  p.expected_gain = p.structural ? "+5% TFLOPS" : "+2% TFLOPS";
  p.plan = plan_for(cfg);
  return p;
}

std::optional<Proposal> Search::restart(const std::string& base_kernel, const FamilyConfig& base,
                                        const std::string& bottleneck,
                                        const std::function<bool(const std::string&)>& tried,
                                        const SearchRules& rules) {
  std::map<std::string, ParamSpec> by_name = specs_by_name(*m_family);
  std::vector<std::string> names;
  for (const auto& s : m_family->params()) {
    if (s.values.size() > 1 && base.count(s.name)) names.push_back(s.name);
  }
  if (names.empty()) return std::nullopt;
  constexpr int k_draws = 4000;
  for (int draw = 0; draw < k_draws; ++draw) {
    // The first half of the draws stays near the base (2-4 parameters changed), the rest anywhere.
    const bool near = draw < k_draws / 2;
    std::vector<std::string> pool = names;
    std::shuffle(pool.begin(), pool.end(), m_rng);
    size_t count = pool.size();
    if (near) count = std::min(pool.size(), std::uniform_int_distribution<size_t>(2, 4)(m_rng));
    FamilyConfig cfg = base;
    std::vector<std::pair<std::string, std::string>> set;
    bool structural = false;
    for (size_t i = 0; i < count; ++i) {
      const ParamSpec& spec = by_name[pool[i]];
      const std::string& v = spec.values[std::uniform_int_distribution<size_t>(0, spec.values.size() - 1)(m_rng)];
      if (v == base.at(spec.name)) continue;
      cfg[spec.name] = v;
      set.emplace_back(spec.name, v);
      structural = structural || spec.structural;
    }
    if (set.size() < 2) continue;  // one change is a single step, already tried
    if (rules.must_be_structural && !structural) continue;
    if (m_family->violation(cfg, m_problem)) continue;
    if (rules.measured && rules.measured(cfg)) continue;
    IdeaPlan plan = plan_from(*m_family, by_name, base_kernel, base, cfg);
    if (tried(plan.combination_key())) continue;
    std::sort(set.begin(), set.end());
    Proposal p;
    p.config = cfg;
    describe_changes(p, base, set, by_name, false);
    p.idea = fmt::format("{}: every single step and pair around {} is measured: restart at a random legal configuration "
                         "near it ({})",
                         bottleneck, base_kernel, p.from_to);
    std::vector<std::pair<std::string, std::string>> tag_moves = {{"restart_", std::to_string(set.size())}};
    p.tag = make_tag(tag_moves);
    p.expected_gain = "+2% TFLOPS";
    p.plan = plan;
    return p;
  }
  return std::nullopt;
}

}  // namespace croq
