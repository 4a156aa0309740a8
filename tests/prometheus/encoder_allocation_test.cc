// Steady-state encoding must not allocate: every series is written into a buffer whose
// capacity is reused, from cached label blocks. Counts global allocations around Encode().
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "exporters/prometheus_encoder.h"
#include "tests/support/snapshot_builder.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace statlet {
namespace {

TEST(EncoderAllocation, SecondEncodeOfTheSameCgroupsDoesNotAllocate) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 50, .containers_per_pod = 3});
  PrometheusEncoder enc({}, [](uint32_t a, uint32_t b) { return std::to_string(a) + ":" + std::to_string(b); });
  std::string out;
  enc.Encode(s, ExpositionFormat::kText004, &out);  // warms caches and the buffer
  ASSERT_GT(testing::CountSamples(out), 1000u);
  Snapshot next = s;  // a later collection: new values, same cgroups
  next.sequence++;
  for (auto& c : next.cgroups) *c.cpu.usage_ns += 1000;
  for (ExpositionFormat f : {ExpositionFormat::kText004, ExpositionFormat::kOpenMetrics100}) {
    enc.Encode(next, f, &out);  // first encode in this format may grow the buffer
    g_allocations = 0;
    g_counting = true;
    enc.Encode(next, f, &out);
    g_counting = false;
    EXPECT_EQ(g_allocations.load(), 0u) << "heap allocations during a steady-state encode";
  }
}

TEST(EncoderAllocation, KeptEncodesOfChangingValuesDoNotAllocate) {
  Snapshot a = testing::MakeNodeSnapshot({.pods = 50, .containers_per_pod = 3});
  Snapshot b = a;  // the next collection: a tenth of the cgroups' CPU time moved
  b.sequence++;
  for (size_t i = 0; i < b.cgroups.size(); i += 10) *b.cgroups[i].cpu.usage_ns += 1000;
  PrometheusEncoder enc({}, [](uint32_t x, uint32_t y) { return std::to_string(x) + ":" + std::to_string(y); });
  std::shared_ptr<const TextRope> rope;
  // Warm up: the chunks, their spares and every index reach their steady size.
  for (int round = 0; round < 8; ++round) {
    for (ExpositionFormat f : {ExpositionFormat::kText004, ExpositionFormat::kOpenMetrics100}) {
      enc.EncodeKept(round % 2 ? b : a, f, &rope);
    }
  }
  ASSERT_GT(enc.kept_stats().series_spliced, 1000u);
  for (int round = 0; round < 4; ++round) {
    for (ExpositionFormat f : {ExpositionFormat::kText004, ExpositionFormat::kOpenMetrics100}) {
      g_allocations = 0;
      g_counting = true;
      enc.EncodeKept(round % 2 ? b : a, f, &rope);
      g_counting = false;
      EXPECT_EQ(g_allocations.load(), 0u) << "heap allocations during a steady-state kept encode, round " << round;
      // The first format renders what moved; the second shares those segments.
      if (f == ExpositionFormat::kText004) {
        EXPECT_GT(enc.kept_stats().series_rendered, 0u);
      }
    }
  }
}

}  // namespace
}  // namespace statlet
