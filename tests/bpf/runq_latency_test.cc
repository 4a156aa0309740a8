// The runqlat probe: two CPU-bound processes per CPU must wait for each other.
#include <unistd.h>

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

  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<Child> burners;
  for (int i = 0; i < 2 * cpus; i++) {
    burners.emplace_back(
        [cpu = i / 2] {
          if (!PinToCpu(cpu)) return 3;
          BurnCpu(200'000'000);
          return 0;
        },
        Child::kExits);
    ASSERT_TRUE(burners.back().StartIn(cg));
  }
  for (Child& child : burners) {
    int status = child.Wait(std::chrono::seconds(60));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }

  BpfCgroupStats s = CollectUntil(*probes, cg.id(), [&](const BpfCgroupStats& v) {
    return SumOf(v.runq_latency_log2_us) >= burners.size();
  });
  ASSERT_EQ(s.runq_latency_log2_us.size(), static_cast<size_t>(STATLET_RUNQ_SLOTS));
  ASSERT_TRUE(s.runq_latency_sum_ns.has_value());
  const uint64_t waits = std::accumulate(s.runq_latency_log2_us.begin(), s.runq_latency_log2_us.end(), uint64_t{0});
  // Every process waited at least once (after fork and after being moved in).
  EXPECT_GE(waits, burners.size());
  // Two CPU-bound processes sharing a CPU wait about a scheduler slice: some waits are
  // at least 256 us; none took 2 s or more (each process only needs 200 ms of CPU).
  uint64_t long_waits = 0;
  for (int i = 8; i < STATLET_RUNQ_SLOTS; i++) long_waits += s.runq_latency_log2_us[i];
  EXPECT_GT(long_waits, 0u);
  for (int i = 21; i < STATLET_RUNQ_SLOTS; i++) EXPECT_EQ(s.runq_latency_log2_us[i], 0u) << "slot " << i;
  ASSERT_GT(waits, 0u);
  const double mean_us = static_cast<double>(*s.runq_latency_sum_ns) / waits / 1000;
  EXPECT_GT(mean_us, 0.0);
  EXPECT_LT(mean_us, 200'000.0);
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
