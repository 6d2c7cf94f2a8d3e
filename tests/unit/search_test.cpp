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
  EXPECT_TRUE(f->violation(c, p).has_value());  // not a legal value
  c = f->default_config(p);
  c["UNKNOWN"] = "1";
  EXPECT_TRUE(f->violation(c, p).has_value());
  FamilyProblem half = p;
  half.dtype = *parse_dtype_pair("f16f32");
  EXPECT_FALSE(f->supports(half));
}

TEST(Search, FollowsTheBottleneckAndNeverRepeats) {
  auto f = find_family("cpp_tiled");
  auto p = f32_problem();
  Search s(f, p, 42);
  SearchRules rules;
  rules.explore = 0;
  std::set<std::string> tried;
  auto is_tried = [&](const std::string& c) { return tried.count(c) > 0; };
  auto base = f->default_config(p);
  auto first = s.propose("iter001_start", base, "compute_bound", is_tried, rules);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->changed.front(), "VEC");  // the compute-bound lever comes first
  EXPECT_FALSE(f->violation(first->config, p).has_value());
  // Every proposal is new until the neighbourhood is exhausted.
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    auto prop = s.propose("iter001_start", base, "compute_bound", is_tried, rules);
    if (!prop) break;
    std::string key = prop->plan.combination_key();
    EXPECT_TRUE(seen.insert(key).second) << "repeated " << prop->from_to;
    EXPECT_FALSE(f->violation(prop->config, p).has_value()) << prop->from_to;
    tried.insert(key);
  }
  EXPECT_FALSE(s.propose("iter001_start", base, "compute_bound", is_tried, rules).has_value());
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
