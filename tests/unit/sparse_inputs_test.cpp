// The 2:4 sparse inputs croq makes (croq/measure/portable.hpp), the same formulas on the host and
// the GPU: every one of the six patterns occurs, the metadata names exactly the kept positions,
// groups with fewer than two non-zeros occur, a candidate's A holds non-zero poison outside the
// pattern (a library's and the reference's hold zeros), and a fresh seed gives a fresh pattern.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>

#include "croq/measure/portable.hpp"

namespace croq {
namespace {

constexpr uint64_t k_m = 48, k_k = 64;

TEST(SparseInputs, EveryPatternOccursEvenInATinyMatrix) {
  std::set<int> seen;
  for (uint64_t g = 0; g < 6; ++g) seen.insert(sparse24_pattern(99, g));
  EXPECT_EQ(seen.size(), 6u) << "the first six groups take the six patterns";
  std::array<int, 6> count{};
  for (uint64_t g = 0; g < k_m * k_k / 4; ++g) ++count[static_cast<size_t>(sparse24_pattern(99, g))];
  for (int c : count) EXPECT_GT(c, static_cast<int>(k_m * k_k / 4 / 6 / 2)) << "roughly uniform";
  // The nibbles, as PTX's mma.sp metadata spells them for 16-bit types.
  EXPECT_EQ(sparse24_nibble(0), 0x4u);
  EXPECT_EQ(sparse24_nibble(1), 0x8u);
  EXPECT_EQ(sparse24_nibble(2), 0xCu);
  EXPECT_EQ(sparse24_nibble(3), 0x9u);
  EXPECT_EQ(sparse24_nibble(4), 0xDu);
  EXPECT_EQ(sparse24_nibble(5), 0xEu);
}

TEST(SparseInputs, TheMetadataNamesTheKeptPositionsAndOnlyThose) {
  const uint64_t seed = 7;
  int zero_groups = 0, poisoned = 0;
  for (uint64_t i = 0; i < k_m; ++i) {
    for (uint64_t g = 0; g < k_k / 4; ++g) {
      const unsigned char byte = sparse24_meta_byte(seed, i * (k_k / 8) + g / 2, k_k);
      const unsigned nibble = (byte >> (4 * (g % 2))) & 0xFu;
      const unsigned idx0 = nibble & 3u, idx1 = nibble >> 2;
      ASSERT_LT(idx0, idx1) << "two distinct positions, in order";
      int nonzero_kept = 0;
      for (unsigned pos = 0; pos < 4; ++pos) {
        const uint64_t col = 4 * g + pos;
        const float dense = random_uniform(seed, k_stream_a, i * k_k + col);
        const bool kept = pos == idx0 || pos == idx1;
        EXPECT_EQ(sparse24_kept(seed, i, col, k_k), kept);
        const float library = sparse24_value(seed, i, col, k_k, dense, false);
        const float candidate = sparse24_value(seed, i, col, k_k, dense, true);
        if (kept) {
          EXPECT_EQ(library, candidate) << "kept values are the same for everyone";
          nonzero_kept += library != 0.0f;
        } else {
          EXPECT_EQ(library, 0.0f) << "the reference's and the library's A is pruned";
          EXPECT_GE(std::abs(candidate), 0.25f) << "a candidate's A holds poison there";
          ++poisoned;
        }
      }
      zero_groups += nonzero_kept < 2;
    }
  }
  EXPECT_EQ(poisoned, static_cast<int>(k_m * k_k / 2));
  EXPECT_GT(zero_groups, 0) << "groups with fewer than two non-zeros occur";
  EXPECT_LT(zero_groups, static_cast<int>(k_m * k_k / 4 / 5));
}

TEST(SparseInputs, AFreshSeedGivesAFreshPattern) {
  int same = 0;
  const uint64_t groups = k_m * k_k / 4;
  for (uint64_t g = 6; g < groups; ++g) same += sparse24_pattern(1, g) == sparse24_pattern(second_seed(1), g);
  EXPECT_LT(same, static_cast<int>(groups / 3)) << "about one group in six by chance";
}

}  // namespace
}  // namespace croq
