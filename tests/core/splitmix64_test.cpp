#include "chessrl/core/splitmix64.h"

#include <gtest/gtest.h>

namespace chessrl {
namespace {

// The reference sequences of Vigna's splitmix64.c (seeds 0 and 1234567).
TEST(SplitMix64, MatchesTheReferenceSequence) {
  SplitMix64 zero(0);
  EXPECT_EQ(zero.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(zero.next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(zero.next(), 0x06c45d188009454fULL);
  SplitMix64 rng(1234567);
  for (std::uint64_t want : {6457827717110365317ULL, 3203168211198807973ULL, 9817491932198370423ULL,
                             4593380528125082431ULL, 16408922859458223821ULL})
    EXPECT_EQ(rng.next(), want);
}

TEST(SplitMix64, Mix64IsOneStepFromTheGivenState) {
  for (std::uint64_t x : {0ULL, 1ULL, 1234567ULL, ~0ULL}) EXPECT_EQ(mix64(x), SplitMix64(x).next());
  static_assert(mix64(0) == 0xe220a8397b1dcdafULL, "usable in constant expressions");
}

TEST(SplitMix64, DrawsStayInTheirRanges) {
  SplitMix64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const double u = rng.uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_LT(rng.below(3), 3u);
  }
  EXPECT_EQ(rng.below(1), 0u);
}

}  // namespace
}  // namespace chessrl
