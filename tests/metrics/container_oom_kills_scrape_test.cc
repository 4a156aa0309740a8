// What a scrape of statlet_container_oom_kills_total allocates: its output (a vector of label
// values and their strings per series) and nothing per series besides, whatever the number of
// series. Counted by this binary's own operator new (its only test).
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "metrics/container_oom_kills.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<size_t> allocations{0};
}  // namespace

void* operator new(size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace statlet::metrics {
namespace {

TEST(ContainerOomKillsScrape, AllocatesItsOutputAndNoCopiesOfTheKeys) {
  constexpr size_t kSeries = 200;
  ContainerOomKills k;
  Snapshot snap;
  for (size_t i = 0; i < kSeries; ++i) {
    // Names longer than a short string's inline buffer: every copy of one allocates.
    const std::string uid = "0a1b2c3d-0000-4000-8000-" + std::to_string(100000000000 + i);
    CgroupStats pod;
    pod.id.kind = CgroupKind::kPod;
    pod.id.pod_uid = uid;
    snap.cgroups.push_back(pod);
    CgroupStats c;
    c.id.kind = CgroupKind::kContainer;
    c.id.pod_uid = uid;
    c.id.container_id = "container-id-of-pod-number-" + std::to_string(i);
    auto meta = std::make_shared<ContainerMetadata>();
    meta->container_id = c.id.container_id;
    meta->container_name = "application-container-" + std::to_string(i);
    meta->pod_name = "statefulset-web-pod-" + std::to_string(i);
    meta->pod_namespace = "a-namespace-with-a-long-name";
    meta->pod_uid = uid;
    c.id.meta = meta;
    c.memory.events.oom_kill = 1;
    snap.cgroups.push_back(c);
  }
  k.Observe(snap);

  std::vector<ExtraFamily> out;
  out.reserve(1);
  allocations = 0;
  counting = true;
  k.Collect(&out);
  counting = false;
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].series.size(), kSeries);
  // Per series: its label values' vector and three strings; a few for the family itself.
  EXPECT_LE(allocations.load(), 4 * kSeries + 4);
}

}  // namespace
}  // namespace statlet::metrics
