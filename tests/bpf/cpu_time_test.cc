// The cpu probe against the kernel's own accounting: burners pinned to each CPU in turn.
#include <unistd.h>

#include <iostream>
#include <numeric>

#include "tests/bpf/probe_test_support.h"
#include "tests/support/workloads.h"

namespace statlet::testing {
namespace {

TEST(CpuTimeProbe, PerCpuSplitFollowsPinningAndMatchesCgroupTotal) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup cg("cpu");
  ASSERT_TRUE(cg.ok()) << cg.error();

  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  // CPU c gets (c + 1) * 150 ms of work, so every CPU's share is distinct.
  auto burn_ns = [](int cpu) { return int64_t{150'000'000} * (cpu + 1); };
  std::vector<Child> burners;
  for (int cpu = 0; cpu < cpus; cpu++) {
    burners.emplace_back(
        [&, cpu] {
          if (!PinToCpu(cpu)) return 3;
          BurnCpu(burn_ns(cpu));
          return 0;
        },
        Child::kExits);
    ASSERT_TRUE(burners.back().StartIn(cg));
  }
  for (Child& burner : burners) {
    int status = burner.Wait(std::chrono::seconds(60));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "burner " << burner.pid() << " status " << status;
  }

  int64_t burnt_ns = 0;
  for (int cpu = 0; cpu < cpus; cpu++) burnt_ns += burn_ns(cpu);
  BpfCgroupStats stats = CollectUntil(*probes, cg.id(), [&](const BpfCgroupStats& s) {
    return static_cast<int64_t>(SumOf(s.per_cpu_ns)) >= burnt_ns;
  });
  const std::vector<uint64_t>* per_cpu = probes->PerCpuNs(cg.id());
  ASSERT_NE(per_cpu, nullptr);
  ASSERT_GE(per_cpu->size(), static_cast<size_t>(cpus));
  EXPECT_EQ(stats.per_cpu_ns, *per_cpu) << "the collection and PerCpuNs disagree";

  const double total_ns = static_cast<double>(cg.CpuUsageNs());
  ASSERT_GT(total_ns, 0);
  const double sum_ns = static_cast<double>(std::accumulate(per_cpu->begin(), per_cpu->end(), uint64_t{0}));
  EXPECT_NEAR(sum_ns, total_ns, total_ns * 0.05) << "per-CPU sum vs cpu.stat usage_usec";
  std::cout << "per-CPU sum " << sum_ns / 1e6 << " ms, cpu.stat usage " << total_ns / 1e6 << " ms\n";
  for (int cpu = 0; cpu < cpus; cpu++) {
    const double expected = static_cast<double>(burn_ns(cpu));
    EXPECT_NEAR(static_cast<double>((*per_cpu)[cpu]), expected, expected * 0.10) << "cpu " << cpu;
  }
}

TEST(CpuTimeProbe, LiveCgroupWithoutTasksReportsZeros) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup cg("cpu-idle");
  ASSERT_TRUE(cg.ok()) << cg.error();
  BpfCgroupStats stats = CollectOne(*probes, cg.id());
  const std::vector<uint64_t>* per_cpu = probes->PerCpuNs(cg.id());
  ASSERT_NE(per_cpu, nullptr);
  EXPECT_EQ(std::accumulate(per_cpu->begin(), per_cpu->end(), uint64_t{0}), 0u);
  EXPECT_EQ(stats.per_cpu_ns.size(), per_cpu->size());  // zeros, one per CPU
  EXPECT_EQ(probes->PerCpuNs(cg.id() + 1'000'000'000), nullptr);  // not live: nothing
}

}  // namespace
}  // namespace statlet::testing
