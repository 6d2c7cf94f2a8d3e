// Checkpoint verification: what was built against what was planned (the seeds' exit-3 rule).
#include <gtest/gtest.h>

#include "croq/session/drift.hpp"

namespace croq {
namespace {

const char* k_base = R"(#define STAGES 3
#define BM 128
constexpr int kSwizzle = 64;
__global__ void kernel() {
  for (int s = 0; s < STAGES; ++s) {
    load(s);
  }
}
)";

Checkpoint plan(const std::string& iter, std::vector<std::string> levers) {
  Checkpoint c;
  c.iter = iter;
  c.idea = "more stages";
  c.bottleneck = "latency_bound";
  c.levers = std::move(levers);
  c.base = "iter003_base";
  return c;
}

std::string with(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(DiffLines, IsAMultisetDifferenceIgnoringWhitespace) {
  LineDiff d = diff_lines("a\nb\nb\n  c  d\n\n", "b\na\n c d\ne\nb\nb\n");
  EXPECT_EQ(d.added, std::vector<std::string>({"e", "b"}));
  EXPECT_TRUE(d.removed.empty());
  LineDiff same = diff_lines("x = 1;\n", "x  =  1;\r\n");
  EXPECT_TRUE(same.added.empty());
  EXPECT_TRUE(same.removed.empty());
  LineDiff r = diff_lines("one\ntwo\n", "one\n");
  EXPECT_EQ(r.removed, std::vector<std::string>({"two"}));
}

TEST(DiffLines, ChangedMacrosNamesDefinesAndConstants) {
  std::string cand = with(with(k_base, "#define STAGES 3", "#define STAGES 4"), "kSwizzle = 64", "kSwizzle = 128");
  LineDiff d = diff_lines(k_base, cand);
  auto m = changed_macros(d);
  EXPECT_NE(std::find(m.begin(), m.end(), "STAGES"), m.end());
  EXPECT_NE(std::find(m.begin(), m.end(), "kSwizzle"), m.end());
  EXPECT_EQ(std::find(m.begin(), m.end(), "BM"), m.end());
}

TEST(AssessDrift, PlannedChangeIsNotDrift) {
  std::string cand = with(k_base, "#define STAGES 3", "#define STAGES 4");
  DriftReport r = assess_drift(plan("iter004", {"STAGES"}), 4, true, cand, true, k_base);
  EXPECT_FALSE(r.significant);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.levers_found, std::vector<std::string>({"STAGES"}));
  EXPECT_EQ(r.added, 1u);
  EXPECT_EQ(r.removed, 1u);
  json j = r.to_json();
  EXPECT_EQ(j["significant"], false);
  EXPECT_EQ(j["diff"]["added"], 1);
}

TEST(AssessDrift, LeverMatchIsCaseInsensitive) {
  std::string cand = with(k_base, "#define STAGES 3", "#define STAGES 4");
  EXPECT_FALSE(assess_drift(plan("iter004", {"stages"}), 4, true, cand, true, k_base).significant);
}

TEST(AssessDrift, AnotherIterationNumberIsSignificant) {
  std::string cand = with(k_base, "#define STAGES 3", "#define STAGES 4");
  DriftReport r = assess_drift(plan("iter004", {"STAGES"}), 5, true, cand, true, k_base);
  EXPECT_TRUE(r.significant);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0], "planned iter004 but built iter005");
}

TEST(AssessDrift, MissingSourceIsSignificant) {
  DriftReport r = assess_drift(plan("iter004", {"STAGES"}), 4, false, "", true, k_base);
  EXPECT_TRUE(r.significant);
  EXPECT_NE(r.findings.back().find("no source for iter004"), std::string::npos);
}

TEST(AssessDrift, IdenticalToTheBaseIsSignificant) {
  DriftReport r = assess_drift(plan("iter004", {"STAGES"}), 4, true, k_base, true, k_base);
  EXPECT_TRUE(r.significant);
  EXPECT_NE(r.findings.back().find("identical to its base"), std::string::npos);
}

TEST(AssessDrift, NoneOfThePlannedLeversTouchedIsSignificant) {
  std::string cand = with(k_base, "#define BM 128", "#define BM 256");
  DriftReport r = assess_drift(plan("iter004", {"STAGES", "kSwizzle"}), 4, true, cand, true, k_base);
  EXPECT_TRUE(r.significant);
  EXPECT_EQ(r.levers_missing, std::vector<std::string>({"STAGES", "kSwizzle"}));
  bool unplanned = false;
  for (const auto& f : r.findings) unplanned = unplanned || f.find("changed but not in the plan: BM") != std::string::npos;
  EXPECT_TRUE(unplanned);
}

TEST(AssessDrift, SomeLeversUntouchedOrExtraMacrosAreMinorDrift) {
  std::string cand = with(with(k_base, "#define STAGES 3", "#define STAGES 4"), "#define BM 128", "#define BM 64");
  DriftReport r = assess_drift(plan("iter004", {"STAGES", "kSwizzle"}), 4, true, cand, true, k_base);
  EXPECT_FALSE(r.significant);
  EXPECT_EQ(r.levers_found, std::vector<std::string>({"STAGES"}));
  EXPECT_EQ(r.levers_missing, std::vector<std::string>({"kSwizzle"}));
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_NE(r.findings[0].find("planned levers not touched: kSwizzle"), std::string::npos);
  EXPECT_NE(r.findings[1].find("changed but not in the plan: BM"), std::string::npos);
}

TEST(AssessDrift, MissingBaseOnlyLimitsTheCheck) {
  DriftReport r = assess_drift(plan("iter004", {"STAGES"}), 4, true, k_base, false, "");
  EXPECT_FALSE(r.significant);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_NE(r.findings[0].find("base kernel's source was not found"), std::string::npos);
}

TEST(AssessDrift, APlanWithoutLeversOnlyNeedsAChange) {
  std::string cand = with(k_base, "load(s);", "load_async(s);");
  DriftReport r = assess_drift(plan("iter004", {}), 4, true, cand, true, k_base);
  EXPECT_FALSE(r.significant);
}

}  // namespace
}  // namespace croq
