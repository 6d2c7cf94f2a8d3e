// The SVG figures: one point per measured round coloured by decision, failures as crosses, the
// best-so-far staircase and the baseline line, shares that add up, and escaped text.
#include <gtest/gtest.h>

#include <regex>

#include "croq/web/charts.hpp"

using namespace croq::web;

namespace {

ChartRound r(int round, std::optional<double> tflops, const std::string& decision, const std::string& bottleneck = "mixed",
             const std::string& idea = "idea", const std::string& iter = "") {
  ChartRound c;
  c.round = round;
  c.seq = round;
  c.iter = iter.empty() ? "iter" + std::to_string(100 + round).substr(1) : iter;
  c.kernel = c.iter + "_k";
  c.tflops = tflops;
  c.decision = decision;
  c.bottleneck = bottleneck;
  c.category = "tiling";
  c.idea = idea;
  return c;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

std::vector<ChartRound> sample() {
  return {r(0, 100, "BASELINE", "n/a", "", "iter000"), r(1, 110, "KEEP"), r(2, 90, "DISCARD"),
          r(3, std::nullopt, "COMPILE_FAIL"), r(4, 130, "KEEP"), r(5, 120, "DISCARD")};
}

}  // namespace

TEST(WebCharts, ConvergenceHasAPointPerMeasuredRoundColouredByDecision) {
  std::string svg = convergence_svg(sample());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(count(svg, "class=\"pt\""), 5u);
  EXPECT_EQ(count(svg, "data-decision=\"KEEP\""), 2u);
  EXPECT_EQ(count(svg, "class=\"pt-fail\""), 1u);
  EXPECT_NE(svg.find("fill=\"" + decision_colour("DISCARD") + "\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"baseline\""), std::string::npos);
  EXPECT_NE(svg.find("baseline 100"), std::string::npos);
  EXPECT_NE(svg.find("class=\"best\""), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 6), "</svg>");
}

TEST(WebCharts, BestSoFarIsAStaircaseOfKeepsAboveTheBest) {
  auto best = best_so_far(sample());
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0], (std::pair<int, double>{1, 110}));
  EXPECT_EQ(best[1], (std::pair<int, double>{4, 130}));
  EXPECT_EQ(*baseline_tflops(sample()), 100);
}

TEST(WebCharts, TextFromTheLedgerIsEscaped) {
  auto rounds = sample();
  rounds[1].idea = "<script>alert('x')</script> & \"quotes\"";
  std::string svg = convergence_svg(rounds) + progression_svg(rounds);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&amp;"), std::string::npos);
}

TEST(WebCharts, AnEmptyTaskSaysSo) {
  EXPECT_NE(convergence_svg({}).find("no measured rounds yet"), std::string::npos);
  EXPECT_NE(bottleneck_svg({}).find("no rounds yet"), std::string::npos);
  EXPECT_NE(progression_svg({}).find("no rounds yet"), std::string::npos);
}

TEST(WebCharts, BottleneckSharesOfEachWindowAddUpToTheWholeBar) {
  std::vector<ChartRound> rounds;
  for (int i = 1; i <= 20; ++i) rounds.push_back(r(i, 100, "DISCARD", i <= 10 ? "memory_bound" : (i % 2 ? "compute_bound" : "latency_bound")));
  std::string svg = bottleneck_svg(rounds, 10);
  // Window 1: all memory_bound; window 2: half compute, half latency.
  EXPECT_NE(svg.find("rounds 1–10: memory_bound 10 of 10 (100%)"), std::string::npos);
  EXPECT_NE(svg.find("rounds 11–20: compute_bound 5 of 10 (50%)"), std::string::npos);
  EXPECT_NE(svg.find("rounds 11–20: latency_bound 5 of 10 (50%)"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"bn\""), 3u);
}

TEST(WebCharts, ProgressionPlacesEachRoundInItsCategoryLane) {
  auto rounds = sample();
  rounds[2].category = "pipeline";
  rounds[4].category = "something else";
  std::string svg = progression_svg(rounds);
  EXPECT_EQ(count(svg, "class=\"pg\""), 5u);  // rounds 1..5, the baseline excluded
  EXPECT_NE(svg.find(">other</text>"), std::string::npos);
}

TEST(WebCharts, OverlayNormalisesEachTaskByItsBaseline) {
  OverlaySeries a{"a", sample()};
  auto b_rounds = sample();
  for (auto& x : b_rounds) {
    if (x.tflops) *x.tflops *= 2;
  }
  OverlaySeries b{"b", b_rounds};
  std::string svg = overlay_svg({a, b});
  EXPECT_EQ(count(svg, "<path d=\"M"), 2u);
  EXPECT_NE(svg.find("best ÷ baseline"), std::string::npos);
}

TEST(WebCharts, NiceTicksCoverTheRange) {
  auto t = nice_ticks(0, 97, 6);
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.front(), 0);
  EXPECT_GE(t.back(), 97);
  EXPECT_EQ(t[1] - t[0], 20);
}
