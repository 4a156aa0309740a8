// The value path on its own: every family yields samples where the snapshot has data for
// it, value kinds match the family's unit, and the rules (interfaces, network carrier,
// unlimited, device names) hold.
#include "metrics/snapshot_samples.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/snapshot_builder.h"

namespace statlet::metrics {
namespace {

struct Recorded {
  size_t cgroup = SIZE_MAX;  // SIZE_MAX for an event
  std::vector<std::string> labels;
  Value value;
  bool histogram = false;
};

class Recorder final : public SampleSink {
 public:
  void Add(size_t cgroup, const LabelValues& l, Value v) override {
    samples.push_back({cgroup, {l.values().begin(), l.values().end()}, v, false});
  }
  void AddHistogram(size_t cgroup, const Histogram& h) override {
    Recorded r;
    r.cgroup = cgroup;
    r.histogram = true;
    r.value = h.sum;
    samples.push_back(r);
  }
  void AddEvent(const OomEvent&, const LabelValues& l, Value v) override {
    samples.push_back({SIZE_MAX, {l.values().begin(), l.values().end()}, v, false});
  }
  std::vector<Recorded> samples;
};

// A snapshot with data for every family: the test node plus the fields it leaves empty.
Snapshot FullSnapshot() {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 2, .containers_per_pod = 2});
  for (CgroupStats& c : s.cgroups) {
    c.cpu.quota_us = 50000;
    c.cpu.nr_bursts = 2;
    c.cpu.burst_ns = 3000;
    MemoryStats& m = c.memory;
    m.kernel_bytes = 4096;
    m.active_file = 8192;
    m.inactive_file = 4096;
    m.file_dirty_bytes = 12288;
    m.file_writeback_bytes = 0;
    m.sock_bytes = 4096;
    m.vmalloc_bytes = 8192;
    m.percpu_bytes = 1024;
    m.zswap_bytes = 2048;
    m.zswapped_bytes = 8192;
    m.pgscan = 30;
    m.pgsteal = 20;
    m.soft_limit_bytes = 1 << 20;
    m.hugetlb.push_back({"2MB", 2 << 20, 4 << 20, 8 << 20, 1});
    c.process.file_descriptors = 12;
    c.process.sockets = 2;
    c.process.max_open_files_soft = 1024;
    if (c.id.kind == CgroupKind::kContainer) c.exit = ExitInfo{s.timestamp_ns - 1000000000, 4000000000, {}};
    for (IoDeviceStats& d : c.io.devices) {
      d.cost_usage_us = 100;
      d.cost_wait_us = 10;
      d.cost_indebt_us = 1;
      d.cost_indelay_us = 2;
    }
    if (c.id.kind == CgroupKind::kContainer && c.id.meta && !c.id.meta->is_sandbox) {
      auto meta = std::make_shared<ContainerMetadata>(*c.id.meta);
      meta->writable_layer = {s.timestamp_ns, "/var/lib/containerd", "/dev/vda1", 1000, 10, 1 << 30, 100, 90};
      meta->memory_resources = {true, uint64_t{1} << 30, uint64_t{256} << 20, std::nullopt, uint64_t{900} << 20};
      c.id.meta = meta;
      c.memory_qos.request_bytes = uint64_t{256} << 20;
      c.memory_qos.request_source = MemoryRequestSource::kRuntime;
      c.memory_qos.expected_min_bytes = uint64_t{256} << 20;
      c.memory_qos.expected_low_bytes = 0;
      c.memory_qos.expected_high_bytes = kUnlimited;
      c.memory_qos.low_capped = false;
      c.memory_qos.zone = MemoryZone::kThrottling;
      c.memory_qos.high_stall_evaluated = true;
      c.memory_qos.high_stalled = true;
      c.memory_qos.high_stalled_since_ns = s.timestamp_ns - 5000000000;
    }
    if (c.id.kind == CgroupKind::kKubepods) {
      m.min_bytes = uint64_t{512} << 20;
      m.max_bytes = uint64_t{8} << 30;
      s.memory_qos.kubepods_path = c.id.cgroup_path;
    }
  }
  s.memory_qos.applied = true;
  auto basis = std::make_shared<MemoryQosBasis>();
  basis->rules.generation = MemoryQosGeneration::kV1_36;
  basis->rules.enabled = true;
  basis->rules.throttling_factor = 0.9;
  basis->rules.reservation = MemoryReservationPolicy::kTieredReservation;
  basis->kubelet_version = "v1.36.2";
  s.memory_qos.basis = basis;
  s.memory_qos.min_total_bytes = uint64_t{512} << 20;
  s.memory_qos.low_total_bytes = 0;
  s.memory_qos.kernel_release = "6.1.0-13-amd64";
  return s;
}

std::string Dev(uint32_t a, uint32_t b) { return "/dev/test" + std::to_string(a) + "_" + std::to_string(b); }

TEST(SnapshotSamples, EveryFamilyYieldsSamplesWhereTheSnapshotHasData) {
  Snapshot s = FullSnapshot();
  SnapshotSamples samples({}, Dev);
  samples.Bind(s);
  for (const MetricFamily& f : AllMetricFamilies()) {
    Recorder r;
    if (f.scope == MetricScope::kCgroup) {
      for (size_t i = 0; i < samples.cgroup_count(); ++i) samples.ForEachSample(f.id, i, r);
    } else {
      samples.ForEachEventSample(f.id, r);
    }
    EXPECT_FALSE(r.samples.empty()) << f.name << " yields nothing";
    for (const Recorded& x : r.samples) {
      if (!x.histogram) {
        EXPECT_EQ(x.labels.size(), f.labels.size()) << f.name;
      }
      // A `_seconds` family yields durations or time points (exact integer units), any
      // other family no durations.
      const bool seconds_name = f.name.find("_seconds") != std::string_view::npos;
      if (!x.histogram) {
        EXPECT_EQ(x.value.is_time(), seconds_name) << f.name;
      }
    }
  }
}

// Memory QoS: one-hot zones, expected knobs only where computed, the stall time only while
// stalled, "applied" on containers with runtime metadata only.
TEST(SnapshotSamples, MemoryQosView) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  const size_t i = s.cgroups.size() - 1;
  CgroupStats& c = s.cgroups[i];
  ASSERT_EQ(c.id.kind, CgroupKind::kContainer);
  ASSERT_TRUE(c.id.meta && !c.id.meta->is_sandbox);
  c.memory_qos.zone = MemoryZone::kAboveRequest;
  c.memory_qos.high_stall_evaluated = true;
  SnapshotSamples samples({}, Dev);
  samples.Bind(s);
  auto one = [&](FamilyId f) {
    Recorder r;
    samples.ForEachSample(f, i, r);
    return r.samples;
  };
  std::map<std::string, uint64_t> zones;
  for (const Recorded& x : one(FamilyId::kStatletContainerMemoryQosZone)) zones[x.labels[0]] = x.value.u;
  EXPECT_EQ(zones, (std::map<std::string, uint64_t>{
                       {"above_request", 1}, {"at_limit", 0}, {"below_request", 0}, {"throttling", 0}}));
  ASSERT_EQ(one(FamilyId::kStatletContainerMemoryHighStalled).size(), 1u);
  EXPECT_EQ(one(FamilyId::kStatletContainerMemoryHighStalled)[0].value.u, 0u);
  EXPECT_TRUE(one(FamilyId::kStatletContainerMemoryHighStalledSinceSeconds).empty());
  EXPECT_TRUE(one(FamilyId::kStatletContainerMemoryQosExpectedBytes).empty()) << "not applied: no numbers";
  ASSERT_EQ(one(FamilyId::kStatletContainerMemoryQosApplied).size(), 1u);
  EXPECT_EQ(one(FamilyId::kStatletContainerMemoryQosApplied)[0].value.u, 0u);
  EXPECT_TRUE(one(FamilyId::kStatletContainerMemoryQosResourceBytes).empty()) << "the runtime reported none";

  c.memory_qos.high_stalled = true;
  c.memory_qos.high_stalled_since_ns = 1700000000123456789;
  c.memory_qos.expected_min_bytes = 100;
  c.memory_qos.expected_high_bytes = kUnlimited;
  s.memory_qos.applied = true;
  samples.Bind(s);
  EXPECT_EQ(one(FamilyId::kStatletContainerMemoryHighStalled)[0].value.u, 1u);
  ASSERT_EQ(one(FamilyId::kStatletContainerMemoryHighStalledSinceSeconds).size(), 1u);
  EXPECT_EQ(one(FamilyId::kStatletContainerMemoryHighStalledSinceSeconds)[0].value.AsNanos(), 1700000000123456789u);
  auto expected = one(FamilyId::kStatletContainerMemoryQosExpectedBytes);
  ASSERT_EQ(expected.size(), 2u);
  EXPECT_EQ(expected[0].labels[0], "min");
  EXPECT_EQ(expected[0].value.u, 100u);
  EXPECT_TRUE(std::isinf(expected[1].value.d)) << "high = max";
  EXPECT_EQ(one(FamilyId::kStatletContainerMemoryQosApplied)[0].value.u, 1u);
  // The pod cgroup: no container view.
  Recorder pod;
  for (size_t k = 0; k < i; ++k) {
    samples.ForEachSample(FamilyId::kStatletContainerMemoryQosApplied, k, pod);
    samples.ForEachSample(FamilyId::kStatletContainerMemoryQosZone, k, pod);
  }
  EXPECT_TRUE(pod.samples.empty());
}

// The node's Memory QoS facts hang on its kubepods cgroup only; the info series names the
// rules; capped protection on any cgroup that configures it.
TEST(SnapshotSamples, MemoryQosNodeFactsOnTheKubepodsCgroup) {
  Snapshot s = FullSnapshot();
  SnapshotSamples samples({}, Dev);
  samples.Bind(s);
  size_t kubepods = SIZE_MAX;
  for (size_t k = 0; k < s.cgroups.size(); ++k) {
    if (s.cgroups[k].id.kind == CgroupKind::kKubepods) kubepods = k;
  }
  ASSERT_NE(kubepods, SIZE_MAX);
  for (FamilyId f : {FamilyId::kStatletNodeMemoryQosInfo, FamilyId::kStatletNodeMemoryQosMinBytes,
                     FamilyId::kStatletNodeMemoryQosLowBytes, FamilyId::kStatletNodeMemoryQosProtectedRatio,
                     FamilyId::kStatletNodeMemoryQosLivelockRisk}) {
    for (size_t k = 0; k < s.cgroups.size(); ++k) {
      Recorder r;
      samples.ForEachSample(f, k, r);
      EXPECT_EQ(r.samples.empty(), k != kubepods) << Family(f).name << " on " << s.cgroups[k].id.cgroup_path;
    }
  }
  Recorder info;
  samples.ForEachSample(FamilyId::kStatletNodeMemoryQosInfo, kubepods, info);
  ASSERT_EQ(info.samples.size(), 1u);
  EXPECT_EQ(info.samples[0].labels, (std::vector<std::string>{"v1.36.2", "TieredReservation", "v1.36", "0.9"}));
  Recorder ratio;
  samples.ForEachSample(FamilyId::kStatletNodeMemoryQosProtectedRatio, kubepods, ratio);
  ASSERT_EQ(ratio.samples.size(), 2u);
  EXPECT_EQ(ratio.samples[0].labels[0], "min");
  EXPECT_EQ(ratio.samples[0].value.d, 512.0 / 8192.0);
  EXPECT_EQ(ratio.samples[1].value.d, 0.0);
  // Unknown rules: the info says so, without a factor or a policy.
  auto unknown = std::make_shared<MemoryQosBasis>();
  s.memory_qos.basis = unknown;
  samples.Bind(s);
  Recorder u;
  samples.ForEachSample(FamilyId::kStatletNodeMemoryQosInfo, kubepods, u);
  ASSERT_EQ(u.samples.size(), 1u);
  EXPECT_EQ(u.samples[0].labels, (std::vector<std::string>{"", "", "unknown", ""}));
}

TEST(SnapshotSamples, InterfacesCountedAsCadvisorCountsThem) {
  SampleRules rules;
  for (const char* ignored : {"lo", "LO", "veth1234", "docker0", "nerdctl0"}) {
    EXPECT_FALSE(CountsInterface(rules, ignored)) << ignored;
  }
  for (const char* counted : {"eth0", "net1", "bond0", "vlan7"})
    EXPECT_TRUE(CountsInterface(rules, counted)) << counted;
  rules.ignored_interface_prefixes.clear();
  EXPECT_TRUE(CountsInterface(rules, "lo"));
}

// The pod's network namespace goes out once: on the named sandbox, else on the pod cgroup;
// always on the pod cgroup for the CRI's pod-level series; loopback never in
// container_network_*, always in statlet_pod_network_*.
TEST(SnapshotSamples, NetworkHangsOnOneCgroupPerPod) {
  for (bool metadata : {true, false}) {
    for (NetworkCarrier carrier : {NetworkCarrier::kSandboxOrPod, NetworkCarrier::kPod}) {
      Snapshot s = testing::MakeNodeSnapshot({.pods = 2, .containers_per_pod = 2, .with_metadata = metadata});
      SnapshotSamples samples({.network_carrier = carrier}, Dev);
      samples.Bind(s);
      std::map<std::string, int> carriers_per_pod;  // pod cgroup path -> cgroups carrying eth0
      for (size_t i = 0; i < samples.cgroup_count(); ++i) {
        Recorder r;
        samples.ForEachSample(FamilyId::kContainerNetworkReceiveBytesTotal, i, r);
        const CgroupStats& c = s.cgroups[i];
        for (const Recorded& x : r.samples) EXPECT_NE(x.labels[0], "lo") << c.id.cgroup_path;
        if (r.samples.empty() || c.id.kind == CgroupKind::kRoot) continue;
        const std::string pod = c.id.kind == CgroupKind::kPod ? c.id.cgroup_path : c.id.parent_path;
        ++carriers_per_pod[pod];
        const bool on_sandbox = c.id.kind == CgroupKind::kContainer;
        EXPECT_EQ(on_sandbox, metadata && carrier == NetworkCarrier::kSandboxOrPod) << c.id.cgroup_path;
      }
      EXPECT_EQ(carriers_per_pod.size(), 2u);
      for (const auto& [pod, n] : carriers_per_pod) EXPECT_EQ(n, 1) << pod;
      // statlet's own family lists every interface of the pod's namespace.
      bool lo_seen = false;
      for (size_t i = 0; i < samples.cgroup_count(); ++i) {
        Recorder r;
        samples.ForEachSample(FamilyId::kStatletPodNetworkBytesTotal, i, r);
        for (const Recorded& x : r.samples) lo_seen |= x.labels[1] == "lo";
      }
      EXPECT_TRUE(lo_seen);
    }
  }
}

TEST(SnapshotSamples, UnlimitedAndAbsent) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  CgroupStats& c = s.cgroups.back();
  c.memory.max_bytes = kUnlimited;
  c.memory.high_bytes = kUnlimited;
  c.memory.swap_bytes.reset();
  c.process.max_open_files_soft = kUnlimited;
  SnapshotSamples samples({}, Dev);
  samples.Bind(s);
  const size_t i = s.cgroups.size() - 1;
  auto one = [&](FamilyId f) {
    Recorder r;
    samples.ForEachSample(f, i, r);
    return r.samples;
  };
  ASSERT_EQ(one(FamilyId::kContainerSpecMemoryLimitBytes).size(), 1u);
  EXPECT_EQ(one(FamilyId::kContainerSpecMemoryLimitBytes)[0].value.u, 0u) << "cAdvisor: unlimited is 0";
  ASSERT_EQ(one(FamilyId::kStatletMemoryHighBytes).size(), 1u);
  EXPECT_TRUE(std::isinf(one(FamilyId::kStatletMemoryHighBytes)[0].value.d)) << "statlet: +Inf";
  EXPECT_TRUE(one(FamilyId::kContainerMemorySwap).empty()) << "absent: no sample, never 0";
  ASSERT_EQ(one(FamilyId::kContainerUlimitsSoft).size(), 1u);
  EXPECT_EQ(one(FamilyId::kContainerUlimitsSoft)[0].value.d, -1.0);
  // Device names: the namer's, else major:minor (never empty).
  SnapshotSamples unnamed({}, [](uint32_t, uint32_t) { return BlockDeviceName(4095, 4095); });
  unnamed.Bind(s);
  Recorder r;
  unnamed.ForEachSample(FamilyId::kContainerFsReadsBytesTotal, i, r);
  ASSERT_FALSE(r.samples.empty());
  EXPECT_EQ(r.samples[0].labels[0], "4095:4095");
}

}  // namespace
}  // namespace statlet::metrics

namespace statlet::metrics {
namespace {

// A pod in the host's network namespace: by default none of the host's interfaces in its
// container_network_* (its own traffic is the net probe's statlet_container_network_*);
// with host_network_interfaces, cAdvisor's copy of the host's. The other pod's own
// namespace is served the same either way.
TEST(SnapshotSamples, HostNetworkPodGetsTheHostsInterfacesOnlyWhenAsked) {
  constexpr uint64_t kHostNetns = 4026531840;  // the root's: lo and eth0 (5000 bytes received)
  Snapshot s = testing::MakeNodeSnapshot({.pods = 2, .containers_per_pod = 2});
  ASSERT_EQ(s.netns.count(kHostNetns), 1u);
  std::string host_pod;
  size_t host_cgroups = 0;
  for (CgroupStats& c : s.cgroups) {
    if (host_pod.empty() && c.id.kind == CgroupKind::kPod) host_pod = c.id.cgroup_path;
    if (host_pod.empty() || (c.id.cgroup_path != host_pod && c.id.parent_path != host_pod)) continue;
    c.host_network = true;
    c.netns_inode = kHostNetns;  // read by the collector for cAdvisor's behaviour
    c.bpf.net_rx_bytes = 5000;
    ++host_cgroups;
  }
  ASSERT_FALSE(host_pod.empty());
  auto series = [&](bool host_interfaces, FamilyId family) {
    SnapshotSamples samples({.host_network_interfaces = host_interfaces}, Dev);
    samples.Bind(s);
    std::map<std::string, std::vector<Recorded>> by_pod;  // pod path -> samples of its cgroups
    for (size_t i = 0; i < samples.cgroup_count(); ++i) {
      const CgroupStats& c = s.cgroups[i];
      if (c.id.kind != CgroupKind::kPod && c.id.kind != CgroupKind::kContainer) continue;
      Recorder r;
      samples.ForEachSample(family, i, r);
      auto& out = by_pod[c.id.kind == CgroupKind::kPod ? c.id.cgroup_path : c.id.parent_path];
      out.insert(out.end(), r.samples.begin(), r.samples.end());
    }
    return by_pod;
  };
  auto off = series(false, FamilyId::kContainerNetworkReceiveBytesTotal);
  auto on = series(true, FamilyId::kContainerNetworkReceiveBytesTotal);
  EXPECT_TRUE(off[host_pod].empty());
  ASSERT_EQ(on[host_pod].size(), 1u);
  EXPECT_EQ(on[host_pod][0].labels[0], "eth0");
  EXPECT_EQ(on[host_pod][0].value.AsDouble(), 5000);
  size_t other_pods = 0;
  for (const auto& [pod, samples] : off) {
    if (pod == host_pod) continue;
    ++other_pods;
    EXPECT_FALSE(samples.empty()) << pod;
    ASSERT_EQ(samples.size(), on[pod].size()) << pod;
    for (size_t i = 0; i < samples.size(); ++i) EXPECT_EQ(samples[i].labels, on[pod][i].labels) << pod;
  }
  EXPECT_GT(other_pods, 0u);
  // The probe's own count is there either way, on each of the pod's cgroups.
  EXPECT_EQ(series(false, FamilyId::kStatletContainerNetworkReceiveBytesTotal)[host_pod].size(), host_cgroups);
}

}  // namespace
}  // namespace statlet::metrics
