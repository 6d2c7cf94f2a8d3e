// croq's search: the cpp_tiled family's constraints and the move generator's rules.
#include <gtest/gtest.h>

#include <set>

#include "croq/search/family.hpp"
#include "croq/search/search.hpp"

using namespace croq;

namespace {

FamilyProblem f32_problem() {
  FamilyProblem p;
  p.m = p.n = p.k = 512;
  p.dtype = *parse_dtype_pair("f32");
  p.arch = "cpu";
  return p;
}

}  // namespace

TEST(CppTiledFamily, DefaultIsLegalAndRendersItsDefines) {
  auto f = find_family("cpp_tiled");
  ASSERT_TRUE(f);
  auto p = f32_problem();
  auto c = f->default_config(p);
  EXPECT_FALSE(f->violation(c, p).has_value());
  std::string src = f->render_source(c, p);
  EXPECT_NE(src.find("#define CROQ_BM 64"), std::string::npos);
  EXPECT_NE(src.find("croq_matmul"), std::string::npos);
}

TEST(CppTiledFamily, RefusesImpossibleConfigurations) {
  auto f = find_family("cpp_tiled");
  auto p = f32_problem();
  auto c = f->default_config(p);
  c["MR"] = "6";  // BM=64 is not a multiple of 6
  EXPECT_TRUE(f->violation(c, p).has_value());
  c = f->default_config(p);
  c["NR"] = "8";
  c["VEC"] = "8";
  c["MR"] = "8";
  c["BM"] = "64";
  EXPECT_FALSE(f->violation(c, p).has_value());
  c["BM"] = "17";
  EXPECT_EQ(f->violation(c, p).value_or(""), "BM=17 is not one of 16, 32, 64, 128, 256");  // what to pick instead
  c = f->default_config(p);
  c["UNKNOWN"] = "1";
  EXPECT_EQ(f->violation(c, p).value_or(""), "unknown parameter UNKNOWN");
  c = f->default_config(p);
  c.erase("VEC");
  EXPECT_EQ(f->violation(c, p).value_or(""), "parameter VEC is missing");
  FamilyProblem half = p;
  half.dtype = *parse_dtype_pair("f16f32");
  EXPECT_FALSE(f->supports(half));
}

// cpp_tiled at 512^3 searched from its default without random moves; `tried` holds the combination
// keys the task has stored.
struct CppTiledSearch {
  std::shared_ptr<KernelFamily> f = find_family("cpp_tiled");
  FamilyProblem p = f32_problem();
  Search s;
  SearchRules rules;
  std::set<std::string> tried;
  FamilyConfig base;
  explicit CppTiledSearch(uint64_t seed) : s(f, p, seed), base(f->default_config(p)) { rules.explore = 0; }
  std::function<bool(const std::string&)> is_tried() {
    return [this](const std::string& c) { return tried.count(c) > 0; };
  }
  std::optional<Proposal> propose() { return s.propose("iter001_start", base, "compute_bound", is_tried(), rules); }
  std::optional<Proposal> restart() { return s.restart("iter001_start", base, "compute_bound", is_tried(), rules); }
};

TEST(Search, FollowsTheBottleneckAndNeverRepeats) {
  CppTiledSearch t(42);
  auto first = t.propose();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->changed.front(), "VEC");  // the compute-bound lever comes first
  EXPECT_FALSE(t.f->violation(first->config, t.p).has_value());
  // Every proposal is new until the neighbourhood is exhausted.
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    auto prop = t.propose();
    if (!prop) break;
    std::string key = prop->plan.combination_key();
    EXPECT_TRUE(seen.insert(key).second) << "repeated " << prop->from_to;
    EXPECT_FALSE(t.f->violation(prop->config, t.p).has_value()) << prop->from_to;
    t.tried.insert(key);
  }
  EXPECT_FALSE(t.propose().has_value());
}

// Once every step and pair around the base is tried, croq tune restarts at a random legal
// configuration near it instead of ending the task's search (a sweep's round budget is spent
// searching): each restart is legal, changes at least two parameters, and is never a repeat; with
// every configuration measured there is none.
TEST(Search, RestartsNearTheBaseOnceItsNeighbourhoodIsTried) {
  CppTiledSearch t(7);
  for (int i = 0; i < 500; ++i) {
    auto prop = t.propose();
    if (!prop) break;
    t.tried.insert(prop->plan.combination_key());
  }
  ASSERT_FALSE(t.propose().has_value());
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    auto prop = t.restart();
    ASSERT_TRUE(prop) << "restart " << i;
    EXPECT_FALSE(t.f->violation(prop->config, t.p).has_value()) << prop->from_to;
    int changed = 0;
    for (const auto& [k, v] : prop->config) changed += t.base.at(k) != v;
    EXPECT_GE(changed, 2) << prop->from_to;
    EXPECT_NE(prop->idea.find("restart"), std::string::npos) << prop->idea;
    EXPECT_TRUE(seen.insert(prop->plan.combination_key()).second) << "repeated " << prop->from_to;
    t.tried.insert(prop->plan.combination_key());
  }
  t.rules.measured = [](const FamilyConfig&) { return true; };
  EXPECT_FALSE(t.restart().has_value());
}

// The same configuration reached from another base is a repeat: a kernel one step from the default,
// kept and made the base, never gets the step back to the default (croq measure would refuse its
// source as the same code, and croq tune stopped with that error).
TEST(Search, AStepBackToAConfigurationMeasuredFromAnotherBaseIsNotProposed) {
  auto f = find_family("cpp_tiled");
  auto p = f32_problem();
  SearchRules rules;
  rules.explore = 0;
  const FamilyConfig start = f->default_config(p);
  Search first(f, p, 1);
  auto step = first.propose("iter001_start", start, "compute_bound", [](const std::string&) { return false; }, rules);
  ASSERT_TRUE(step);
  const FamilyConfig kept = step->config;  // iter002, one step from the default
  std::set<std::string> configs = {config_to_json(start).dump(), config_to_json(kept).dump()};
  rules.measured = [&](const FamilyConfig& c) { return configs.count(config_to_json(c).dump()) > 0; };
  Search s(f, p, 1);
  std::set<std::string> tried;
  for (int i = 0; i < 200; ++i) {
    auto prop = s.propose("iter002_step", kept, "compute_bound", [&](const std::string& c) { return tried.count(c) > 0; },
                          rules);
    if (!prop) break;
    EXPECT_NE(prop->config, start) << "proposed the default again: " << prop->from_to;
    tried.insert(prop->plan.combination_key());
  }
  // Without the task's measured configurations the step back is among the proposals.
  rules.measured = nullptr;
  Search again(f, p, 1);
  tried.clear();
  bool back = false;
  for (int i = 0; i < 200 && !back; ++i) {
    auto prop = again.propose("iter002_step", kept, "compute_bound",
                              [&](const std::string& c) { return tried.count(c) > 0; }, rules);
    if (!prop) break;
    back = prop->config == start;
    tried.insert(prop->plan.combination_key());
  }
  EXPECT_TRUE(back);
}

TEST(Search, MustBeStructuralOnlyMovesStructuralParameters) {
  auto f = find_family("cpp_tiled");
  auto p = f32_problem();
  Search s(f, p, 7);
  SearchRules rules;
  rules.must_be_structural = true;
  auto prop = s.propose("iter001_start", f->default_config(p), "compute_bound", [](const std::string&) { return false; },
                        rules);
  ASSERT_TRUE(prop);
  EXPECT_TRUE(prop->structural);
  EXPECT_FALSE(prop->plan.structural.empty());
}

TEST(Search, SameSeedSameProposals) {
  auto f = find_family("cpp_tiled");
  auto p = f32_problem();
  Search a(f, p, 99), b(f, p, 99);
  SearchRules rules;
  rules.explore = 0.5;
  auto none = [](const std::string&) { return false; };
  for (int i = 0; i < 10; ++i) {
    auto x = a.propose("iter001_start", f->default_config(p), "memory_bound", none, rules);
    auto y = b.propose("iter001_start", f->default_config(p), "memory_bound", none, rules);
    ASSERT_TRUE(x && y);
    EXPECT_EQ(x->from_to, y->from_to);
  }
}

namespace {

// The cpp_tiled family with two alternatives of its own, for the search's rules about them.
class FamilyWithAlternatives : public KernelFamily {
 public:
  explicit FamilyWithAlternatives(std::shared_ptr<KernelFamily> inner) : m(std::move(inner)) {}
  std::string name() const override { return m->name(); }
  std::string dsl() const override { return m->dsl(); }
  bool supports(const FamilyProblem& p) const override { return m->supports(p); }
  std::vector<ParamSpec> params() const override { return m->params(); }
  FamilyConfig default_config(const FamilyProblem& p) const override { return m->default_config(p); }
  std::optional<std::string> violation(const FamilyConfig& c, const FamilyProblem& p) const override {
    return m->violation(c, p);
  }
  std::string render_source(const FamilyConfig& c, const FamilyProblem& p) const override { return m->render_source(c, p); }
  std::vector<std::string> build_flags(const FamilyConfig& c, const FamilyProblem& p) const override {
    return m->build_flags(c, p);
  }
  std::vector<std::string> params_for_bottleneck(const std::string& b) const override { return m->params_for_bottleneck(b); }
  std::vector<Alternative> alternatives(const FamilyProblem& p) const override {
    FamilyConfig a = m->default_config(p), b = a, bad = a;
    a["BM"] = "32";
    a["MR"] = "4";
    b["NR"] = "8";
    b["VEC"] = "8";
    bad["BM"] = "17";  // illegal: never proposed
    return {{"illegal one", "bad", bad}, {"small blocks", "small", a}, {"wide registers", "wide", b}};
  }

 private:
  std::shared_ptr<KernelFamily> m;
};

}  // namespace

TEST(Search, TriesEachLegalAlternativeOnceBeforeSingleSteps) {
  auto f = std::make_shared<FamilyWithAlternatives>(find_family("cpp_tiled"));
  auto p = f32_problem();
  auto alts = f->alternatives(p);
  ASSERT_FALSE(f->violation(alts[1].config, p)) << "the test's alternative must be legal";
  ASSERT_FALSE(f->violation(alts[2].config, p)) << "the test's alternative must be legal";
  Search s(f, p, 7);
  SearchRules rules;
  rules.explore = 0;
  std::set<std::string> measured;
  rules.measured = [&](const FamilyConfig& c) { return measured.count(config_to_json(c).dump()) > 0; };
  auto never = [](const std::string&) { return false; };
  auto base = f->default_config(p);
  auto first = s.propose("iter001_start", base, "compute_bound", never, rules);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->config, alts[1].config) << "the illegal alternative is skipped, the next one proposed";
  EXPECT_TRUE(first->structural);
  EXPECT_NE(first->idea.find("small blocks"), std::string::npos) << first->idea;
  EXPECT_EQ(first->tag.rfind("alt_", 0), 0u) << first->tag;
  EXPECT_EQ(first->changed, (std::vector<std::string>{"BM", "MR"}));
  measured.insert(config_to_json(first->config).dump());
  // From another base (after a KEEP), an alternative already measured is not proposed again.
  auto second = s.propose("iter002_small", first->config, "compute_bound", never, rules);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->config, alts[2].config);
  measured.insert(config_to_json(second->config).dump());
  // Then single steps, as without alternatives.
  auto third = s.propose("iter001_start", base, "compute_bound", never, rules);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->changed.size(), 1u);
  EXPECT_EQ(third->changed.front(), "VEC");
  // Without a `measured` predicate (an agent's own search, the old behaviour), no alternatives.
  SearchRules plain;
  plain.explore = 0;
  Search s2(f, p, 7);
  auto step = s2.propose("iter001_start", base, "compute_bound", never, plain);
  ASSERT_TRUE(step);
  EXPECT_EQ(step->changed.size(), 1u);
}
