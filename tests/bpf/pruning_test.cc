// Map entries of removed cgroups are deleted at Collect; those of existing but untracked
// cgroups survive while the maps have room.
#include <sys/mman.h>
#include <sys/wait.h>

#include <numeric>

#include "tests/bpf/probe_test_support.h"

namespace statlet::testing {
namespace {

// Runs a child that faults in `pages` pages inside `cg`.
void FaultPagesIn(LiveCgroup& cg, size_t pages = 1000) {
  Child child(
      [pages] {
        size_t len = pages * 4096;
        auto* p =
            static_cast<volatile char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (p == MAP_FAILED) return 3;
        for (size_t i = 0; i < len; i += 4096) p[i] = 1;
        return 0;
      },
      Child::kExits);
  ASSERT_TRUE(child.StartIn(cg));
  int status = child.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Minor faults of `id` once at least `pages` are counted (or the deadline passed).
uint64_t MinorFaults(BpfProbes& probes, uint64_t id, uint64_t pages = 1000) {
  return *CollectUntil(probes, id, [&](const BpfCgroupStats& v) {
            return v.minor_faults.value_or(0) >= pages;
          }).minor_faults;
}

uint64_t CollectNone(BpfProbes& probes) {
  std::unordered_map<uint64_t, BpfCgroupStats> by_id;
  std::vector<OomEvent> ooms;
  probes.Collect({}, &by_id, &ooms, true);
  return by_id.size();
}

TEST(BpfPruning, RemovedCgroupsAreDroppedExistingOnesKept) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup removed("prune-gone");
  ProbeCgroup kept("prune-kept");
  ASSERT_TRUE(removed.ok()) << removed.error();
  ASSERT_TRUE(kept.ok()) << kept.error();
  FaultPagesIn(removed);
  FaultPagesIn(kept);
  const uint64_t removed_id = removed.id();
  ASSERT_GE(MinorFaults(*probes, removed_id), 1000u);
  ASSERT_GE(MinorFaults(*probes, kept.id()), 1000u);

  removed.Destroy();
  EXPECT_EQ(CollectNone(*probes), 0u);  // neither is live: prunes, reports nothing

  BpfCgroupStats gone = CollectOne(*probes, removed_id);
  EXPECT_EQ(*gone.minor_faults, 0u) << "entry of the removed cgroup survived";
  EXPECT_TRUE(gone.runq_latency_log2_us.size() > 0);
  EXPECT_EQ(probes->PerCpuNs(removed_id), nullptr) << "the removed cgroup still has per-CPU time";
  EXPECT_GE(*CollectOne(*probes, kept.id()).minor_faults, 1000u) << "entry of an existing cgroup was dropped";
}

// The scheduler probes (runqlat, faults) keep a cgroup's values in a slot that goes back to a free list one
// collection after the cgroup is unmapped, zeroed; the next new cgroup takes the most
// recently freed slot and must start from zero.
TEST(BpfPruning, SlotOfARemovedCgroupIsReusedFromZero) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  constexpr size_t kFirstPages = 8000;
  {
    ProbeCgroup first("reuse-first");
    ASSERT_TRUE(first.ok()) << first.error();
    FaultPagesIn(first, kFirstPages);
    ASSERT_GE(MinorFaults(*probes, first.id(), kFirstPages), kFirstPages);
  }                      // removed
  CollectNone(*probes);  // unmaps it
  CollectNone(*probes);  // zeroes its slot and frees it

  ProbeCgroup second("reuse-second");
  ASSERT_TRUE(second.ok()) << second.error();
  FaultPagesIn(second);
  BpfCgroupStats s =
      CollectUntil(*probes, second.id(), [](const BpfCgroupStats& v) { return v.minor_faults.value_or(0) >= 1000; });
  EXPECT_GE(*s.minor_faults, 1000u);
  EXPECT_LE(*s.minor_faults, 1000u + 1024) << "counts of the removed cgroup leaked into its slot's next owner";
  const double usage_ns = static_cast<double>(second.CpuUsageNs());
  const double sum_ns = static_cast<double>(SumOf(s.per_cpu_ns));
  EXPECT_LE(sum_ns, usage_ns * 1.05 + 1e6);
  for (const BpfProbeStatus& st : probes->ProbeStatus()) EXPECT_EQ(st.lost_events, 0u) << st.probe;
}

}  // namespace
}  // namespace statlet::testing
