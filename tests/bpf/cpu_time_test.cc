// The cpu probe against the kernel's own accounting: burners pinned to each CPU in turn.
// The probe reads the kernel's per-CPU copies of the cgroup's CPU time (rstat), so its sum
// must be cpu.stat's usage exactly, once the cgroup is idle.
#include <unistd.h>

#include <iostream>
#include <numeric>

#include "bpf/percpu_map.h"
#include "collector/collector.h"
#include "collector/sampler.h"
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

  // A reaped child may still be on its way out of its last CPU: settled once cpu.stat,
  // read right before and right after the collection, no longer moves. Then the per-CPU
  // sum must be what cpu.stat shows (it prints microseconds).
  int64_t usage_ns = -1;
  BpfCgroupStats stats = CollectUntil(*probes, cg.id(), [&](const BpfCgroupStats&) {
    const int64_t before = cg.CpuUsageNs();
    CollectOne(*probes, cg.id());
    usage_ns = cg.CpuUsageNs();
    return before == usage_ns;
  });
  stats = CollectOne(*probes, cg.id());
  const std::vector<uint64_t>* per_cpu = probes->PerCpuNs(cg.id());
  ASSERT_NE(per_cpu, nullptr);
  ASSERT_GE(per_cpu->size(), static_cast<size_t>(cpus));
  EXPECT_EQ(stats.per_cpu_ns, *per_cpu) << "the collection and PerCpuNs disagree";

  ASSERT_GT(usage_ns, 0);
  const uint64_t sum_ns = std::accumulate(per_cpu->begin(), per_cpu->end(), uint64_t{0});
  EXPECT_EQ(sum_ns / 1000, static_cast<uint64_t>(usage_ns) / 1000) << "per-CPU sum vs cpu.stat usage_usec";
  std::cout << "per-CPU sum " << sum_ns / 1e6 << " ms, cpu.stat usage " << usage_ns / 1e6 << " ms\n";
  // Each CPU carries its pinned burner's time. Not exactly: rstat charges a running task's
  // time to the CPU that brings its clock up to date, its own or a reader's (a wakeup or a
  // /proc/<pid>/schedstat read from the other CPU), measured up to 10 % of a burner's time;
  // the sum above is exact. A CPU below 80 % of its own burn is a wrong split.
  for (int cpu = 0; cpu < cpus; cpu++) {
    const double expected = static_cast<double>(burn_ns(cpu));
    EXPECT_GE(static_cast<double>((*per_cpu)[cpu]), 0.8 * expected) << "cpu " << cpu;
  }
}

// A parent cgroup that is live gets its own time and that of its children that are not:
// the kernel's hierarchical total, split by CPU.
TEST(CpuTimeProbe, UntrackedChildrenCountInTheirLiveParent) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup parent("cpu-parent");
  ASSERT_TRUE(parent.ok()) << parent.error();
  LiveCgroup child(parent.path() + "/child", {kUnified});
  ASSERT_TRUE(child.ok()) << child.error();
  Child burner(
      [] {
        BurnCpu(100'000'000);
        return 0;
      },
      Child::kExits);
  ASSERT_TRUE(burner.StartIn(child));
  ASSERT_EQ(burner.Wait(std::chrono::seconds(60)), 0);

  int64_t usage_ns = -1;
  BpfCgroupStats s = CollectUntil(*probes, parent.id(), [&](const BpfCgroupStats& v) {
    usage_ns = parent.CpuUsageNs();
    return static_cast<int64_t>(SumOf(v.per_cpu_ns) / 1000) == usage_ns / 1000;
  });
  ASSERT_GE(usage_ns, 100'000'000);
  EXPECT_EQ(static_cast<int64_t>(SumOf(s.per_cpu_ns) / 1000), usage_ns / 1000)
      << "the child's time is not in its parent";

  // With both live, the child keeps its own time and the parent has none of its own.
  std::unordered_map<uint64_t, BpfCgroupStats> by_id;
  std::vector<OomEvent> ooms;
  probes->Collect({parent.id(), child.id()}, &by_id, &ooms, true, true);
  EXPECT_EQ(SumOf(by_id[parent.id()].per_cpu_ns), 0u);
  EXPECT_EQ(static_cast<int64_t>(SumOf(by_id[child.id()].per_cpu_ns) / 1000), usage_ns / 1000);

  // No cgroup wants the probe's per-CPU time (cgroupfs gave it): no walk, no values.
  std::unordered_map<uint64_t, BpfCgroupStats> unwanted;
  probes->Collect({parent.id(), child.id()}, &unwanted, &ooms, false, true);
  EXPECT_TRUE(unwanted[child.id()].per_cpu_ns.empty());
  EXPECT_EQ(probes->PerCpuNs(child.id()), nullptr);
}

// What the Sampler asks of the probes, passed on to them.
class RecordingBpf : public BpfSource {
 public:
  explicit RecordingBpf(BpfProbes* probes) : probes_(probes) {}
  void Collect(const std::vector<uint64_t>& live, std::unordered_map<uint64_t, BpfCgroupStats>* by_id,
               std::vector<OomEvent>* ooms, bool per_cpu_wanted, bool every_cgroup_listed) override {
    wanted.push_back(per_cpu_wanted);
    probes_->Collect(live, by_id, ooms, per_cpu_wanted, every_cgroup_listed);
  }
  std::vector<SourceState> ProbeStates() const override { return probes_->ProbeStates(); }
  std::vector<BpfRollUp> RollUps() const override { return probes_->RollUps(); }
  std::vector<bool> wanted;

 private:
  BpfProbes* probes_;
};

// On a host with v1 cpuacct beside a cgroup2 mount, cgroupfs gives each cgroup of cpuacct
// its per-CPU time: the Sampler asks the probe for none until a cgroup has no such file.
TEST(CpuTimeProbe, SamplerWantsItOnlyWhereCgroupfsHasNoPerCpuFile) {
  STATLET_REQUIRE_ROOT();
  const CgroupHierarchies& h = HostHierarchies();
  if (!h.has(kV1Cpuacct) || !h.has(kUnified)) GTEST_SKIP() << "needs v1 cpuacct beside a cgroup2 mount";
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  const std::string root = "/" + UniqueName("statlet-bpf-percpu");
  LiveCgroup both(root + "/both", {kV1Cpuacct, kUnified});
  ASSERT_TRUE(both.ok()) << both.error();
  CollectorOptions o;
  o.subtrees = {root};
  o.include_empty = true;
  auto collector = Collector::Create(o);
  ASSERT_TRUE(collector.ok()) << collector.status().ToString();
  RecordingBpf bpf(probes.get());
  Sampler sampler(std::move(*collector), nullptr, &bpf);

  auto first = sampler.Get(std::chrono::nanoseconds(0), CollectParts::All());
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(bpf.wanted.size(), 1u);
  EXPECT_FALSE(bpf.wanted[0]);
  ASSERT_FALSE((*first)->cgroups.empty());
  for (const CgroupStats& c : (*first)->cgroups) {
    EXPECT_EQ(c.cpu.per_cpu_ns.size(), static_cast<size_t>(bpf::PossibleCpus())) << c.id.cgroup_path;
    EXPECT_FALSE(c.cpu.per_cpu_from_bpf) << c.id.cgroup_path;
  }

  // A cgroup of the unified hierarchy alone has no per-CPU file: the probe stands in.
  LiveCgroup unified_only(root + "/unified-only", {kUnified});
  ASSERT_TRUE(unified_only.ok()) << unified_only.error();
  auto second = sampler.Get(std::chrono::nanoseconds(0), CollectParts::All());
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(bpf.wanted.size(), 2u);
  EXPECT_TRUE(bpf.wanted[1]);
  const CgroupStats* alone = nullptr;
  for (const CgroupStats& c : (*second)->cgroups) {
    if (c.id.cgroup_path == unified_only.path()) alone = &c;
  }
  ASSERT_NE(alone, nullptr);
  EXPECT_TRUE(alone->cpu.per_cpu_from_bpf);
  EXPECT_EQ(alone->cpu.per_cpu_ns.size(), static_cast<size_t>(bpf::PossibleCpus()));
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
  EXPECT_EQ(stats.per_cpu_ns.size(), per_cpu->size());            // zeros, one per CPU
  EXPECT_EQ(probes->PerCpuNs(cg.id() + 1'000'000'000), nullptr);  // not live: nothing
}

}  // namespace
}  // namespace statlet::testing
