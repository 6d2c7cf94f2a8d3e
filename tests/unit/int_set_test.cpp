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

TEST(IntSet, JsonRoundTripAndStrictReading) {
  IntSet s;
  for (int v : {0, 1, 2, 250, 252, 253}) s.insert(v);
  json j = s.to_json();
  EXPECT_EQ(dump_compact(j), "[[0,2],[250,250],[252,253]]");
  auto back = IntSet::from_json(j, 1000);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->ranges(), s.ranges());

  // Overlapping and unsorted ranges are normalised.
  auto t = IntSet::from_json(json::parse(R"([[5,9],[1,3],[4,4],[8,12]])"), 1000);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->ranges().size(), 1u);
  EXPECT_EQ(t->ranges()[0], std::make_pair(1, 12));
  // Anything else is refused with the reason, never repaired by guessing.
  std::string why;
  for (const char* bad : {R"([[7,"x"]])", R"([[3]])", R"([[9,2]])", R"(["a"])", R"({})", R"([[-1,4]])"}) {
    EXPECT_FALSE(IntSet::from_json(json::parse(bad), 1000, &why)) << bad;
    EXPECT_FALSE(why.empty());
  }
}

// Issue 25: an index holding [[0,99999999999]] gave next_iter_number 1215752192 (the value cut to
// 32 bits). A value past the range is refused, whatever its width.
TEST(IntSet, AValuePastTheRangeIsRefusedNotTruncated) {
  std::string why;
  EXPECT_FALSE(IntSet::from_json(json::parse("[[0,99999999999]]"), 999999, &why));
  EXPECT_NE(why.find("99999999999"), std::string::npos) << why;
  EXPECT_FALSE(IntSet::from_json(json::parse("[[0,1000000]]"), 999999));
  EXPECT_FALSE(IntSet::from_json(json::parse("[[0,18446744073709551615]]"), 999999));
  auto ok = IntSet::from_json(json::parse("[[0,999999]]"), 999999);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->max(), 999999);
}

}  // namespace
}  // namespace croq
