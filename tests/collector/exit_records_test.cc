// ExitRecords: retention, the count and byte bounds, and what the totals count.
#include "collector/exit_records.h"

#include <gtest/gtest.h>

#include "metrics/exit_families.h"

namespace statlet {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

CgroupStats Exited(const std::string& path, ExitReason reason, int64_t lifetime_ns) {
  CgroupStats c;
  c.id.cgroup_path = path;
  c.id.kind = CgroupKind::kContainer;
  c.cpu.usage_ns = 42;
  ExitInfo e;
  e.exit_ns = 1000 * kSecond;
  e.lifetime_ns = lifetime_ns;
  e.reason = reason;
  c.exit = e;
  return c;
}

TEST(ExitRecords, KeepsRecordsForTheRetentionOnly) {
  ExitRecords r({.retention_ns = 120 * kSecond, .max_records = 100, .max_bytes = 1 << 20});
  r.Add(Exited("/a", ExitReason::kCompleted, kSecond), 10 * kSecond);
  r.Add(Exited("/b", ExitReason::kOomKilled, kSecond), 70 * kSecond);
  EXPECT_EQ(r.Live(130 * kSecond).size(), 2u);
  auto live = r.Live(131 * kSecond);  // /a is 121 s old
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0]->id.cgroup_path, "/b");
  EXPECT_EQ(live[0]->cpu.usage_ns, 42u);
  EXPECT_TRUE(r.Live(191 * kSecond).empty());
  const ExitTotals t = r.totals();
  EXPECT_EQ(t.records, 0u);
  EXPECT_EQ(t.bytes, 0u);
  EXPECT_EQ(t.dropped, 0u);  // expired, not dropped
  EXPECT_EQ(t.exits[static_cast<size_t>(ExitReason::kCompleted)], 1u);
  EXPECT_EQ(t.exits[static_cast<size_t>(ExitReason::kOomKilled)], 1u);
}

TEST(ExitRecords, DropsTheOldestOverTheCountBound) {
  ExitRecords r({.retention_ns = 120 * kSecond, .max_records = 3, .max_bytes = 1 << 20});
  for (int i = 0; i < 5; ++i) r.Add(Exited("/c" + std::to_string(i), ExitReason::kCompleted, kSecond), i);
  auto live = r.Live(10);
  ASSERT_EQ(live.size(), 3u);
  EXPECT_EQ(live[0]->id.cgroup_path, "/c2");
  EXPECT_EQ(r.totals().dropped, 2u);
  EXPECT_EQ(r.totals().exits[0], 5u);
}

TEST(ExitRecords, DropsTheOldestOverTheByteBound) {
  const size_t one = ExitRecords::BytesOf(Exited("/x0", ExitReason::kCompleted, kSecond));
  ExitRecords r({.retention_ns = 120 * kSecond, .max_records = 100, .max_bytes = 2 * one + one / 2});
  for (int i = 0; i < 4; ++i) r.Add(Exited("/x" + std::to_string(i), ExitReason::kCompleted, kSecond), i);
  EXPECT_EQ(r.Live(10).size(), 2u);
  EXPECT_EQ(r.totals().dropped, 2u);
  EXPECT_LE(r.totals().bytes, 2 * one + one / 2);
}

TEST(ExitRecords, LifetimesLandInTheirBuckets) {
  ExitRecords r;
  r.Add(Exited("/a", ExitReason::kCompleted, kSecond / 10), 0);      // 0.1 s: the first bucket (le 0.1)
  r.Add(Exited("/b", ExitReason::kCompleted, 3 * kSecond), 0);       // le 5
  r.Add(Exited("/c", ExitReason::kCompleted, 200000 * kSecond), 0);  // beyond the last bound
  const ExitTotals t = r.totals();
  const auto bounds = ExitRecords::LifetimeBounds();
  ASSERT_EQ(t.lifetime_buckets.size(), bounds.size() + 1);
  EXPECT_EQ(t.lifetime_buckets[0], 1u);
  EXPECT_EQ(t.lifetime_buckets[5], 1u);
  EXPECT_EQ(bounds[5], 5.0);
  EXPECT_EQ(t.lifetime_buckets.back(), 1u);
  EXPECT_DOUBLE_EQ(t.lifetime_sum_seconds, 0.1 + 3 + 200000);

  std::vector<metrics::ExtraFamily> families;
  metrics::AppendExitFamilies(t, &families);
  ASSERT_GE(families.size(), 2u);
  EXPECT_EQ(families[0].name, "statlet_container_exits_total");
  ASSERT_EQ(families[0].series.size(), kExitReasonCount);
  EXPECT_EQ(families[0].series[0].label_values[0], "completed");
  EXPECT_EQ(families[0].series[0].value.u, 3u);
  EXPECT_EQ(families[1].series[0].bucket_counts, t.lifetime_buckets);
}

}  // namespace
}  // namespace statlet
