// Map entries of removed cgroups are deleted at Collect; those of existing but untracked
// cgroups survive while the maps have room.
#include <sys/mman.h>
#include <sys/wait.h>

#include "tests/bpf/child_process.h"
#include "tests/bpf/probe_test_support.h"

namespace statlet::testing {
namespace {

// Runs a child that faults in 1,000 pages inside `cg`.
void FaultPagesIn(TestCgroup& cg) {
  pid_t pid = SpawnInCgroup(cg, [] {
    size_t len = 1000 * 4096;
    auto* p = static_cast<volatile char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) return 3;
    for (size_t i = 0; i < len; i += 4096) p[i] = 1;
    return 0;
  });
  ASSERT_GT(pid, 0);
  int status = WaitForExit(pid, std::chrono::seconds(30));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

uint64_t CollectNone(BpfProbes& probes) {
  std::unordered_map<uint64_t, BpfCgroupStats> by_id;
  std::vector<OomEvent> ooms;
  probes.Collect({}, &by_id, &ooms);
  return by_id.size();
}

TEST(BpfPruning, RemovedCgroupsAreDroppedExistingOnesKept) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  TestCgroup removed(UniqueName("prune-gone"));
  TestCgroup kept(UniqueName("prune-kept"));
  ASSERT_TRUE(removed.ok()) << removed.error();
  ASSERT_TRUE(kept.ok()) << kept.error();
  FaultPagesIn(removed);
  FaultPagesIn(kept);
  const uint64_t removed_id = removed.id();
  ASSERT_GE(*CollectOne(*probes, removed_id).minor_faults, 1000u);
  ASSERT_GE(*CollectOne(*probes, kept.id()).minor_faults, 1000u);

  removed.Destroy();
  EXPECT_EQ(CollectNone(*probes), 0u);  // neither is live: prunes, reports nothing

  BpfCgroupStats gone = CollectOne(*probes, removed_id);
  EXPECT_EQ(*gone.minor_faults, 0u) << "entry of the removed cgroup survived";
  EXPECT_TRUE(gone.runq_latency_log2_us.size() > 0);
  EXPECT_EQ(probes->PerCpuNs(removed_id)->at(0) + probes->PerCpuNs(removed_id)->back(), 0u);
  EXPECT_GE(*CollectOne(*probes, kept.id()).minor_faults, 1000u) << "entry of an existing cgroup was dropped";
}

}  // namespace
}  // namespace statlet::testing
