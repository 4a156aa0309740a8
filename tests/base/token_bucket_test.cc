#include "base/token_bucket.h"

#include <gtest/gtest.h>

namespace statlet {
namespace {

using Clock = TokenBucket::Clock;
using std::chrono::milliseconds;

TEST(TokenBucket, BurstThenRate) {
  TokenBucket b(10, 20);
  Clock::time_point t{};
  int taken = 0;
  while (b.TryTake(t)) ++taken;
  EXPECT_EQ(taken, 20);
  EXPECT_FALSE(b.TryTake(t + milliseconds(99)));
  EXPECT_TRUE(b.TryTake(t + milliseconds(100)));  // one token per 100 ms
  EXPECT_FALSE(b.TryTake(t + milliseconds(100)));
  // Never more than the burst saved up, however long it rested.
  t += std::chrono::hours(1);
  taken = 0;
  while (b.TryTake(t)) ++taken;
  EXPECT_EQ(taken, 20);
}

TEST(TokenBucket, TimeGoingBackwardsGivesNothing) {
  TokenBucket b(1, 1);
  Clock::time_point t = Clock::time_point() + std::chrono::seconds(10);
  EXPECT_TRUE(b.TryTake(t));
  EXPECT_FALSE(b.TryTake(t - std::chrono::seconds(5)));
  EXPECT_FALSE(b.TryTake(t + milliseconds(999)));
  EXPECT_TRUE(b.TryTake(t + milliseconds(1000)));
}

}  // namespace
}  // namespace statlet
