// Scaled units and suggested command lines (issue 23, points 1 and 3).
#include <gtest/gtest.h>

#include "croq/protocol/command.hpp"
#include "croq/util/units.hpp"

using namespace croq;

TEST(Units, RatesAndTimesScaleToAUnitThatFits) {
  EXPECT_EQ(format_rate(612.04), "612.0 TFLOPS");
  EXPECT_EQ(format_rate(0.0213), "21.3 GFLOPS");  // a CPU's figure, not "0.02 TFLOPS"
  EXPECT_EQ(format_rate(2.1e-5), "21.0 MFLOPS");
  EXPECT_EQ(format_ms(1.5), "1.50 ms");
  EXPECT_EQ(format_ms(0.0123), "12.3 µs");
  EXPECT_EQ(format_ms(2500), "2.50 s");
  EXPECT_EQ(format_table({{"A", "BB"}, {"ccc", "d"}}), "A    BB\nccc  d\n");
}

TEST(CroqCommand, QuotesValuesAndLeavesPlaceholdersForTheUser) {
  TaskRef t = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "me");
  std::string c = CroqCommand("checkpoint write").task(t).opt("--idea", "halve the K panel").opt("--levers", "<macros>")
                      .opt("--idea-file", "<what changes and why>").flag("--pairs");
  EXPECT_EQ(c, "croq checkpoint write --gpu cpu_x86_64 --dsl cpp --shape-key matmul_f32_64x64x64 --model me "
               "--idea 'halve the K panel' --levers <macros> --idea-file \"<what changes and why>\" --pairs");
  EXPECT_EQ(then({"a", "b", "c"}), "a; b; then c");
  EXPECT_FALSE(is_placeholder("<a'b>"));
  EXPECT_TRUE(is_placeholder("iter002_<tag>"));
}
