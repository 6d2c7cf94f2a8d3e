// Sample statistics and the stopping rule of the measurement procedure.
#include <gtest/gtest.h>

#include "croq/measure/statistics.hpp"

namespace croq {
namespace {

TEST(MeasureStatistics, SummaryOfAnOddSampleUsesTheMiddleValue) {
  SampleSummary s = summarize({5.0, 1.0, 3.0, 2.0, 4.0});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);  // linear interpolation: position 0.9 * 4 = 3.6
  EXPECT_NEAR(s.stddev, 1.5811388300841898, 1e-12);
  EXPECT_NEAR(s.cv, 1.5811388300841898 / 3.0, 1e-12);
}

TEST(MeasureStatistics, MedianOfAnEvenSampleIsTheMeanOfTheMiddlePair) {
  EXPECT_DOUBLE_EQ(summarize({4.0, 1.0, 2.0, 3.0}).median, 2.5);
}

TEST(MeasureStatistics, SingleAndEmptySamplesAreHandled) {
  SampleSummary one = summarize({2.0});
  EXPECT_DOUBLE_EQ(one.median, 2.0);
  EXPECT_DOUBLE_EQ(one.p90, 2.0);
  EXPECT_DOUBLE_EQ(one.cv, 0.0);
  EXPECT_EQ(summarize({}).n, 0);
}

TEST(MeasureStatistics, AnOutlierMovesTheMeanButNotTheMedian) {
  SampleSummary s = summarize({1.0, 1.0, 1.0, 1.0, 100.0});
  EXPECT_DOUBLE_EQ(s.median, 1.0);
  EXPECT_GT(s.mean, 20.0);
  EXPECT_GT(s.cv, 1.0);
}

TEST(MeasureStatistics, TheRobustCvIsTheScaledMedianAbsoluteDeviation) {
  // Median 3, deviations {2, 1, 0, 1, 2}: MAD 1.
  EXPECT_NEAR(summarize({5.0, 1.0, 3.0, 2.0, 4.0}).robust_cv, 1.4826 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(robust_cv({}), 0.0);
  EXPECT_DOUBLE_EQ(robust_cv({2.0}), 0.0);
}

// The H200 case (12288x8192x12288: 464 repetitions of 3.33-3.37 ms and 36 of 5-8.5 ms): the plain
// CV says 16 %, the robust one what the other 464 say.
TEST(MeasureStatistics, AFewStrayRepetitionsMoveTheCvButNotTheRobustCv) {
  std::vector<double> v;
  for (int i = 0; i < 464; ++i) v.push_back(3.33 + 0.04 * (i % 10) / 9.0);
  for (int i = 0; i < 36; ++i) v.push_back(5.0 + 3.5 * i / 35.0);
  SampleSummary s = summarize(v);
  EXPECT_GT(s.cv, 0.10);
  EXPECT_LT(s.robust_cv, 0.01);
  EXPECT_GT(s.robust_cv, 0.003);
}

TEST(MeasureStopRule, SteadySamplesStopOnTheCvTargetAfterMinReps) {
  StopRule r;
  r.min_reps = 4;
  r.max_reps = 100;
  r.cv_target = 0.01;
  r.time_budget_ms = 1e9;
  EXPECT_EQ(r.check({1.0, 1.0, 1.0}, 0), "");
  EXPECT_EQ(r.check({1.0, 1.0, 1.0, 1.001}, 0), "cv_target");
}

TEST(MeasureStopRule, NoisySamplesRunUntilTheBudgetOrMaxReps) {
  StopRule r;
  r.min_reps = 4;
  r.max_reps = 6;
  r.cv_target = 0.01;
  r.time_budget_ms = 100;
  std::vector<double> noisy = {1.0, 2.0, 1.0, 2.0};
  EXPECT_EQ(r.check(noisy, 50), "");
  EXPECT_EQ(r.check(noisy, 100), "time_budget");
  noisy.insert(noisy.end(), {1.0, 2.0});
  EXPECT_EQ(r.check(noisy, 0), "max_reps");
}

TEST(MeasureStopRule, ASteadyKernelKeepsRepeatingUntilTheMinimumTimedSectionHasPassed) {
  StopRule r;
  r.min_reps = 4;
  r.max_reps = 1000;
  r.cv_target = 0.01;
  r.time_budget_ms = 2000;
  r.min_time_ms = 300;
  const std::vector<double> steady = {1.0, 1.0, 1.0, 1.0, 1.0};
  EXPECT_EQ(r.check(steady, 5), "") << "steady after 5 ms, but the timed section must last 300 ms";
  EXPECT_EQ(r.check(steady, 299), "");
  EXPECT_EQ(r.check(steady, 300), "cv_target");
  // max_reps and the time budget still end the section earlier.
  r.max_reps = 5;
  EXPECT_EQ(r.check(steady, 5), "max_reps");
  r.max_reps = 1000;
  r.time_budget_ms = 100;
  EXPECT_EQ(r.check(steady, 100), "time_budget");
}

TEST(MeasureStopRule, ASlowKernelStopsOnTheBudgetAfterAFewSamples) {
  StopRule r;
  r.min_reps = 20;
  r.time_budget_ms = 10;
  EXPECT_EQ(r.check({50.0, 52.0}, 102), "");
  EXPECT_EQ(r.check({50.0, 52.0, 51.0}, 153), "time_budget");
}

}  // namespace
}  // namespace croq
