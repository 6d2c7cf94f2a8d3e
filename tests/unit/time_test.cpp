// Timestamps: what to_iso8601 writes, parse_iso8601 reads back to the same instant.
#include <gtest/gtest.h>

#include <chrono>

#include "croq/util/time.hpp"

namespace croq {
namespace {

TEST(Iso8601, EveryWholeMillisecondReadsBackExactly) {
  using namespace std::chrono;
  const auto base = sys_days{year{2026} / 12 / 1} + hours{10} + minutes{3};
  for (int ms = 0; ms < 60 * 1000; ++ms) {  // every second of a minute, every millisecond of it
    const system_clock::time_point t = base + milliseconds{ms};
    auto back = parse_iso8601(to_iso8601(t));
    ASSERT_TRUE(back) << to_iso8601(t);
    ASSERT_EQ(*back, t) << to_iso8601(t);
    // A time two minutes later is two whole minutes later, however it is truncated.
    auto later = parse_iso8601(to_iso8601(t + seconds{120}));
    ASSERT_TRUE(later);
    ASSERT_EQ(duration_cast<seconds>(*later - t).count(), 120) << to_iso8601(t);
  }
}

TEST(Iso8601, OffsetsAndTheSpaceSeparatorAreRead) {
  using namespace std::chrono;
  auto z = parse_iso8601("2026-12-01T10:00:00.250Z");
  auto plus = parse_iso8601("2026-12-01T12:00:00.250+02:00");
  auto space = parse_iso8601("2026-12-01 10:00:00.250");
  ASSERT_TRUE(z && plus && space);
  EXPECT_EQ(*z, *plus);
  EXPECT_EQ(*z, *space);
  EXPECT_FALSE(parse_iso8601("not a time"));
}

}  // namespace
}  // namespace croq
