// The runqlat probe: two CPU-bound processes per CPU must wait for each other.
#include <unistd.h>

#include <iostream>
#include <numeric>

#include "bpf/probe_abi.h"
#include "tests/bpf/probe_test_support.h"
#include "tests/support/workloads.h"

namespace statlet::testing {
namespace {

TEST(RunqLatencyProbe, ContendedCpusGivePlausibleHistogram) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup cg("runq");
  ASSERT_TRUE(cg.ok()) << cg.error();

  // Two CPU-bound processes per CPU wait for each other. Each sits asleep before it is
  // moved in and after its burn (paused): the kernel's run_delay of each, read while it
  // sleeps before and after, is exactly what the probe must count for the cgroup.
  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<Child> burners;
  uint64_t kernel_wait_ns = 0, kernel_arrivals = 0;
  for (int i = 0; i < 2 * cpus; i++) {
    burners.emplace_back([cpu = i / 2] {
      if (!PinToCpu(cpu)) return uint64_t{3};
      BurnCpu(200'000'000);
      return uint64_t{0};
    });
    ASSERT_TRUE(WaitUntilSleeping(burners.back().pid(), std::chrono::seconds(10)));
    std::optional<SchedStat> pre = ReadSchedStat(burners.back().pid());
    ASSERT_TRUE(pre.has_value());
    kernel_wait_ns -= pre->wait_ns;
    kernel_arrivals -= pre->arrivals;
  }
  for (Child& child : burners) ASSERT_TRUE(child.StartIn(cg));
  for (Child& child : burners) {
    ASSERT_EQ(child.Result(std::chrono::seconds(60)), std::optional<uint64_t>(0));
    ASSERT_TRUE(WaitUntilSleeping(child.pid(), std::chrono::seconds(10)));
    std::optional<SchedStat> post = ReadSchedStat(child.pid());
    ASSERT_TRUE(post.has_value());
    kernel_wait_ns += post->wait_ns;
    kernel_arrivals += post->arrivals;
  }

  BpfCgroupStats s = CollectUntil(
      *probes, cg.id(), [&](const BpfCgroupStats& v) { return v.runq_latency_sum_ns.value_or(0) >= kernel_wait_ns; });
  ASSERT_EQ(s.runq_latency_log2_us.size(), static_cast<size_t>(STATLET_RUNQ_SLOTS));
  ASSERT_TRUE(s.runq_latency_sum_ns.has_value());
  const uint64_t waits = std::accumulate(s.runq_latency_log2_us.begin(), s.runq_latency_log2_us.end(), uint64_t{0});
  std::cout << "probe: " << waits << " waits, " << *s.runq_latency_sum_ns << " ns; kernel: " << kernel_arrivals
            << " arrivals, " << kernel_wait_ns << " ns run_delay\n";
  // The kernel's own account, exactly: every wait that ended while the burners were here.
  EXPECT_EQ(*s.runq_latency_sum_ns, kernel_wait_ns);
  // One wait per arrival on a CPU; arrivals without a wait (a task picked again at once)
  // add nothing and are not counted.
  EXPECT_LE(waits, kernel_arrivals);
  EXPECT_GE(waits, burners.size());
  // Two CPU-bound processes sharing a CPU wait about a scheduler slice: some waits are
  // at least 256 us.
  uint64_t long_waits = 0;
  for (int i = 8; i < STATLET_RUNQ_SLOTS; i++) long_waits += s.runq_latency_log2_us[i];
  EXPECT_GT(long_waits, 0u);
  // The sum agrees with the buckets: each wait lies in [2^i, 2^(i+1)) us (slot 0 from 0).
  double lo_ns = 0, hi_ns = 0;
  for (int i = 0; i < STATLET_RUNQ_SLOTS; i++) {
    lo_ns += (i == 0 ? 0.0 : double(1ull << i) * 1000) * s.runq_latency_log2_us[i];
    hi_ns += double(2ull << i) * 1000 * s.runq_latency_log2_us[i];
  }
  EXPECT_GE(static_cast<double>(*s.runq_latency_sum_ns), lo_ns);
  EXPECT_LE(static_cast<double>(*s.runq_latency_sum_ns), hi_ns);
}

}  // namespace
}  // namespace statlet::testing
