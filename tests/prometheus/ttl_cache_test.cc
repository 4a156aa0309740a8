#include "exporters/ttl_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace statlet {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

TEST(TtlCache, ExpiredEntriesAreFoundAsSuchUntilReplaced) {
  TtlCache<std::string, int> c(4);
  const Clock::time_point t0{};
  c.Put("a", 1, t0 + seconds(10));
  auto fresh = c.Get("a", t0 + seconds(9));
  ASSERT_NE(fresh.value, nullptr);
  EXPECT_TRUE(fresh.fresh);
  EXPECT_EQ(*fresh.value, 1);
  auto stale = c.Get("a", t0 + seconds(10));
  ASSERT_NE(stale.value, nullptr);
  EXPECT_FALSE(stale.fresh);
  c.Put("a", 2, t0 + seconds(20));
  EXPECT_TRUE(c.Get("a", t0 + seconds(10)).fresh);
  EXPECT_EQ(*c.Get("a", t0).value, 2);
  c.Erase("a");
  EXPECT_EQ(c.Get("a", t0).value, nullptr);
}

TEST(TtlCache, TheLeastRecentlyUsedEntryMakesRoom) {
  TtlCache<int, int> c(3);
  const Clock::time_point t{};
  c.Put(1, 1, t);
  c.Put(2, 2, t);
  c.Put(3, 3, t);
  c.Get(1, t);  // used: 2 is now the least recently used
  c.Put(4, 4, t);
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.Get(2, t).value, nullptr);
  EXPECT_NE(c.Get(1, t).value, nullptr);
  EXPECT_NE(c.Get(3, t).value, nullptr);
  EXPECT_NE(c.Get(4, t).value, nullptr);
}

}  // namespace
}  // namespace statlet
