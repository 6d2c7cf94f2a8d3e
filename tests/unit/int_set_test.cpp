// The range-compressed integer set behind the ledger index (stored ids and rounds).
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "croq/ledger/int_set.hpp"

namespace croq {
namespace {

TEST(IntSet, MergesAdjacentValuesIntoRanges) {
  IntSet s;
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.max().has_value());
  for (int v : {1, 2, 3, 7, 5, 6, 4, 10}) s.insert(v);
  ASSERT_EQ(s.ranges().size(), 2u);
  EXPECT_EQ(s.ranges()[0], std::make_pair(1, 7));
  EXPECT_EQ(s.ranges()[1], std::make_pair(10, 10));
  EXPECT_EQ(s.size(), 8u);
  EXPECT_EQ(s.max(), 10);
  EXPECT_TRUE(s.contains(4));
  EXPECT_FALSE(s.contains(8));
  EXPECT_FALSE(s.contains(0));
  s.insert(4);  // already there
  EXPECT_EQ(s.size(), 8u);
  s.insert(9);
  s.insert(8);
  ASSERT_EQ(s.ranges().size(), 1u);
  EXPECT_EQ(s.ranges()[0], std::make_pair(1, 10));
}

TEST(IntSet, AgreesWithStdSetOnRandomInserts) {
  std::mt19937 rng(12345);
  IntSet s;
  std::set<int> ref;
  for (int i = 0; i < 5000; ++i) {
    int v = static_cast<int>(rng() % 700);
    s.insert(v);
    ref.insert(v);
  }
  EXPECT_EQ(s.size(), ref.size());
  for (int v = -1; v < 710; ++v) EXPECT_EQ(s.contains(v), ref.count(v) == 1) << v;
  EXPECT_EQ(*s.max(), *ref.rbegin());
  for (size_t i = 1; i < s.ranges().size(); ++i) {
    EXPECT_GT(s.ranges()[i].first, s.ranges()[i - 1].second + 1) << "ranges are disjoint and not adjacent";
  }
}

TEST(IntSet, JsonRoundTripAndTolerantReading) {
  IntSet s;
  for (int v : {0, 1, 2, 250, 252, 253}) s.insert(v);
  json j = s.to_json();
  EXPECT_EQ(dump_compact(j), "[[0,2],[250,250],[252,253]]");
  IntSet back = IntSet::from_json(j);
  EXPECT_EQ(back.ranges(), s.ranges());

  // Overlapping, unsorted and malformed entries are normalised or dropped.
  IntSet t = IntSet::from_json(json::parse(R"([[5,9],[1,3],[4,4],[8,12],[7,"x"],[3],[9,2],"a"])"));
  ASSERT_EQ(t.ranges().size(), 1u);
  EXPECT_EQ(t.ranges()[0], std::make_pair(1, 12));
  EXPECT_TRUE(IntSet::from_json(json::object()).empty());
}

}  // namespace
}  // namespace croq
