// The Memory QoS view of a snapshot (collector/memory_qos.h): requests from each source,
// expected knobs at every level, node totals, zones judged by the knob that protects the
// class, capped protection (collector/memory_protection.h), and nothing judged without a
// known kubelet.
#include "collector/memory_qos.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "collector/memory_protection.h"
#include "tests/support/byte_units.h"

namespace statlet {
namespace {

using testing::kMi;

std::shared_ptr<const MemoryQosBasis> Basis(MemoryQosGeneration g, std::optional<double> factor,
                                            MemoryReservationPolicy p, bool enabled = true) {
  auto b = std::make_shared<MemoryQosBasis>();
  b->rules.generation = g;
  b->rules.enabled = enabled;
  b->rules.throttling_factor = factor;
  b->rules.reservation = p;
  b->rules.page_size = 4096;
  b->kubelet_version = "test";
  return b;
}

std::shared_ptr<ContainerMetadata> Meta(Opt<uint64_t> min, Opt<uint64_t> low, Opt<uint64_t> high, Opt<uint64_t> limit) {
  auto m = std::make_shared<ContainerMetadata>();
  m->memory_resources.reported = true;
  m->memory_resources.unified_min_bytes = min;
  m->memory_resources.unified_low_bytes = low;
  m->memory_resources.unified_high_bytes = high;
  m->memory_resources.limit_bytes = limit;
  return m;
}

// A cgroup v2 node laid out as the kubelet's systemd driver lays it: every cgroup reads
// memory.min and memory.low (0 unless set).
struct Node {
  Snapshot s;
  CgroupStats& Add(const std::string& path, CgroupKind kind, QosClass qos = QosClass::kUnknown,
                   const std::string& uid = "") {
    CgroupStats& c = s.cgroups.emplace_back();
    c.id.cgroup_path = path;
    c.id.kind = kind;
    c.id.qos = qos;
    c.id.pod_uid = uid;
    c.memory.min_bytes = 0;
    c.memory.low_bytes = 0;
    c.memory.high_bytes = kUnlimited;
    c.memory.max_bytes = kUnlimited;
    return c;
  }
  const CgroupStats& At(const std::string& path) const {
    const CgroupStats* c = s.FindByPath(path);
    EXPECT_NE(c, nullptr) << path;
    return *c;
  }
  void Sort() {
    std::sort(s.cgroups.begin(), s.cgroups.end(),
              [](const CgroupStats& a, const CgroupStats& b) { return a.id.cgroup_path < b.id.cgroup_path; });
  }
};

constexpr char kKp[] = "/kubepods.slice";
constexpr char kBu[] = "/kubepods.slice/kubepods-burstable.slice";
constexpr char kGPod[] = "/kubepods.slice/kubepods-podg.slice";
constexpr char kGCtr[] = "/kubepods.slice/kubepods-podg.slice/cri-containerd-g1.scope";
constexpr char kBPod[] = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb.slice";
constexpr char kBCtr[] =
    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb.slice/cri-containerd-b1.scope";

// A Guaranteed pod (one container, 256Mi = its limit) and a Burstable pod (one container,
// request 128Mi, limit 512Mi) under a 4Gi kubepods; the runtime reports what a v1.36
// TieredReservation kubelet passed (memory.min for the Guaranteed container, memory.low for
// the Burstable one). The cgroups carry what that kubelet writes; `kubepods_low` adds the
// kubepods memory.low v1.37 writes too.
Node TieredNode(bool kubepods_low) {
  Node n;
  CgroupStats& kp = n.Add(kKp, CgroupKind::kKubepods);
  kp.memory.max_bytes = 4096 * kMi;
  kp.memory.min_bytes = 384 * kMi;
  if (kubepods_low) kp.memory.low_bytes = 128 * kMi;
  n.Add(kBu, CgroupKind::kQos, QosClass::kBurstable).memory.low_bytes = 128 * kMi;
  n.Add(kGPod, CgroupKind::kPod, QosClass::kGuaranteed, "g").memory.min_bytes = 256 * kMi;
  CgroupStats& g = n.Add(kGCtr, CgroupKind::kContainer, QosClass::kGuaranteed, "g");
  g.id.meta = Meta(256 * kMi, std::nullopt, std::nullopt, 256 * kMi);
  g.memory.min_bytes = 256 * kMi;
  g.memory.max_bytes = 256 * kMi;
  g.memory.usage_bytes = 100 * kMi;
  n.Add(kBPod, CgroupKind::kPod, QosClass::kBurstable, "b").memory.low_bytes = 128 * kMi;
  CgroupStats& b = n.Add(kBCtr, CgroupKind::kContainer, QosClass::kBurstable, "b");
  b.id.meta = Meta(std::nullopt, 128 * kMi, 474 * kMi, 512 * kMi);
  b.memory.low_bytes = 128 * kMi;
  b.memory.high_bytes = 473 * kMi + 153 * 4096;  // floor[(128 + 0.9 × 384) MiB / 4 KiB] pages
  b.memory.max_bytes = 512 * kMi;
  b.memory.usage_bytes = 64 * kMi;
  n.Sort();
  return n;
}

TEST(ApplyMemoryQos, V136TieredReservationExpectedEqualsWhatTheKubeletWrites) {
  Node n = TieredNode(false);
  MemoryQosInputs in;
  in.basis = Basis(MemoryQosGeneration::kV1_36, 0.9, MemoryReservationPolicy::kTieredReservation);
  in.kernel_release = "6.1.0-13-amd64";
  ApplyMemoryQos(in, &n.s);
  const NodeMemoryQos& node = n.s.memory_qos;
  EXPECT_TRUE(node.applied);
  EXPECT_EQ(node.kubepods_path, kKp);
  EXPECT_EQ(node.allocatable_bytes, 4096 * kMi);
  // The kubelet's totals: Guaranteed memory.min, Burstable memory.low.
  EXPECT_EQ(node.min_total_bytes, 256 * kMi);
  EXPECT_EQ(node.low_total_bytes, 128 * kMi);
  EXPECT_FALSE(node.kernel_before_5_9);
  EXPECT_TRUE(node.memory_high_in_use);

  const MemoryQosView& g = n.At(kGCtr).memory_qos;
  EXPECT_EQ(g.request_bytes, 256 * kMi);
  EXPECT_EQ(g.request_source, MemoryRequestSource::kRuntime);
  EXPECT_EQ(g.expected_min_bytes, 256 * kMi);
  EXPECT_EQ(g.expected_low_bytes, 0u);
  EXPECT_EQ(g.expected_high_bytes, kUnlimited);
  const MemoryQosView& b = n.At(kBCtr).memory_qos;
  EXPECT_EQ(b.request_bytes, 128 * kMi);
  EXPECT_EQ(b.request_source, MemoryRequestSource::kRuntime);
  EXPECT_EQ(b.expected_min_bytes, 0u);
  EXPECT_EQ(b.expected_low_bytes, 128 * kMi);
  EXPECT_EQ(b.expected_high_bytes, n.At(kBCtr).memory.high_bytes);
  EXPECT_EQ(n.At(kGPod).memory_qos.expected_min_bytes, 256 * kMi);
  EXPECT_EQ(n.At(kBPod).memory_qos.expected_low_bytes, 128 * kMi);
  EXPECT_EQ(n.At(kBPod).memory_qos.expected_min_bytes, 0u);
  EXPECT_FALSE(n.At(kBPod).memory_qos.expected_high_bytes);  // pods: no memory.high claimed
  EXPECT_EQ(n.At(kBu).memory_qos.expected_low_bytes, 128 * kMi);
  EXPECT_EQ(n.At(kBu).memory_qos.expected_min_bytes, 0u);
  EXPECT_EQ(n.At(kKp).memory_qos.expected_min_bytes, 384 * kMi);
  EXPECT_EQ(n.At(kKp).memory_qos.expected_low_bytes, 0u);  // v1.36 sets none on kubepods
  // Each expected knob equals the cgroup's own (but memory.high, rounded above).
  for (const char* p : {kKp, kBu, kGPod, kGCtr, kBPod, kBCtr}) {
    const CgroupStats& c = n.At(p);
    EXPECT_EQ(c.memory_qos.expected_min_bytes, c.memory.min_bytes) << p;
    EXPECT_EQ(c.memory_qos.expected_low_bytes, c.memory.low_bytes) << p;
  }
  // kubepods passes no memory.low down: the Burstable tier's protection is capped to 0.
  EXPECT_EQ(n.At(kBu).memory_qos.low_capped, true);
  EXPECT_EQ(n.At(kBPod).memory_qos.low_capped, true);
  EXPECT_EQ(b.low_capped, true);
  EXPECT_EQ(g.min_capped, false);
  EXPECT_EQ(n.At(kGPod).memory_qos.min_capped, false);
  EXPECT_EQ(n.At(kKp).memory_qos.min_capped, false);  // a child of the root: nothing above it
  // Zones by the class's knob: the Guaranteed container under its memory.min; the Burstable
  // one under its memory.low, which its ancestors cap to nothing.
  EXPECT_EQ(g.zone, MemoryZone::kBelowRequest);
  EXPECT_EQ(b.zone, MemoryZone::kAboveRequest);
  EXPECT_TRUE(b.protection_judged);
}

// A collection that reads container cgroups alone (the CRI container calls) knows no
// ancestor's protection: the zone is judged against the container's own, and says so.
TEST(ApplyMemoryQos, WithoutTheAncestorsTheZoneTakesTheContainersOwnProtection) {
  Node n = TieredNode(false);
  for (CgroupStats& c : n.s.cgroups) {
    if (c.id.kind != CgroupKind::kContainer) c.memory = MemoryStats();
  }
  MemoryQosInputs in;
  in.basis = Basis(MemoryQosGeneration::kV1_36, 0.9, MemoryReservationPolicy::kTieredReservation);
  ApplyMemoryQos(in, &n.s);
  const MemoryQosView& b = n.At(kBCtr).memory_qos;
  EXPECT_FALSE(b.protection_judged);
  EXPECT_FALSE(b.low_capped);
  EXPECT_EQ(b.zone, MemoryZone::kBelowRequest);
  EXPECT_EQ(b.expected_low_bytes, 128 * kMi);
}

TEST(ApplyMemoryQos, V137TieredReservationPassesMemoryLowDown) {
  Node n = TieredNode(true);
  MemoryQosInputs in;
  in.basis = Basis(MemoryQosGeneration::kV1_37, 0.9, MemoryReservationPolicy::kTieredReservation);
  ApplyMemoryQos(in, &n.s);
  EXPECT_EQ(n.At(kKp).memory_qos.expected_low_bytes, 128 * kMi);
  EXPECT_EQ(n.At(kBCtr).memory_qos.low_capped, false);
  EXPECT_EQ(n.At(kBu).memory_qos.low_capped, false);
  EXPECT_EQ(n.At(kBCtr).memory_qos.zone, MemoryZone::kBelowRequest);  // 64Mi under a held 128Mi memory.low
  EXPECT_EQ(n.s.memory_qos.low_total_bytes, 128 * kMi);
}

// v1.37's defaults on the same requests: no knob at all, so every expected value is the
// kernel's default and no container can be throttling.
TEST(ApplyMemoryQos, V137DefaultsExpectNothingSet) {
  Node n;
  n.Add(kKp, CgroupKind::kKubepods).memory.max_bytes = 4096 * kMi;
  n.Add(kBu, CgroupKind::kQos, QosClass::kBurstable);
  n.Add(kBPod, CgroupKind::kPod, QosClass::kBurstable, "b");
  CgroupStats& b = n.Add(kBCtr, CgroupKind::kContainer, QosClass::kBurstable, "b");
  b.id.meta = Meta(std::nullopt, std::nullopt, std::nullopt, 64 * kMi);
  b.memory.max_bytes = 64 * kMi;
  b.memory.usage_bytes = 60 * kMi;  // past what factor 0.9 would throttle at
  b.id.container_id = "b1";
  n.Sort();
  // The runtime carries no request under None: the API server's pod gives it.
  auto pods = std::make_shared<PodMemorySpecs>();
  PodMemorySpec& p = pods->by_uid["b"];
  p.uid = "b";
  p.qos = QosClass::kBurstable;
  p.containers.push_back({"app", "b1", 16 * kMi, 64 * kMi});
  p.request = 16 * kMi;
  pods->uid_by_container_id["b1"] = "b";
  MemoryQosInputs in;
  const MemoryQosGeneration g = MemoryQosGeneration::kV1_37;
  in.basis = Basis(g, DefaultThrottlingFactor(g), DefaultReservationPolicy(g));
  in.pods = pods;
  ApplyMemoryQos(in, &n.s);
  const MemoryQosView& v = n.At(kBCtr).memory_qos;
  EXPECT_EQ(v.request_bytes, 16 * kMi);
  EXPECT_EQ(v.request_source, MemoryRequestSource::kApiServer);
  EXPECT_EQ(v.expected_min_bytes, 0u);
  EXPECT_EQ(v.expected_low_bytes, 0u);
  EXPECT_EQ(v.expected_high_bytes, kUnlimited);
  EXPECT_EQ(v.zone, MemoryZone::kAboveRequest);
  EXPECT_EQ(n.At(kBPod).memory_qos.request_bytes, 16 * kMi);
  EXPECT_EQ(n.At(kKp).memory_qos.expected_min_bytes, 0u);
  EXPECT_EQ(n.s.memory_qos.min_total_bytes, 0u);
  EXPECT_EQ(n.s.memory_qos.low_total_bytes, 0u);
  EXPECT_FALSE(n.s.memory_qos.memory_high_in_use);
}

// The v1.27 rules: memory.min everywhere, the requests from the runtime's unified memory.min.
TEST(ApplyMemoryQos, V127MemoryMinAtEveryLevel) {
  Node n;
  n.Add(kKp, CgroupKind::kKubepods).memory.max_bytes = 2000 * kMi;
  n.Add(kBu, CgroupKind::kQos, QosClass::kBurstable);
  n.Add(kBPod, CgroupKind::kPod, QosClass::kBurstable, "b");
  CgroupStats& c = n.Add(kBCtr, CgroupKind::kContainer, QosClass::kBurstable, "b");
  c.id.meta = Meta(500 * kMi, std::nullopt, 950 * kMi, 1000 * kMi);
  CgroupStats& d =
      n.Add(std::string(kBPod) + "/cri-containerd-b2.scope", CgroupKind::kContainer, QosClass::kBurstable, "b");
  d.id.meta = Meta(200 * kMi, std::nullopt, std::nullopt, std::nullopt);  // no limit: node allocatable
  n.Sort();
  MemoryQosInputs in;
  in.basis = Basis(MemoryQosGeneration::kV1_27, 0.9, MemoryReservationPolicy::kMinForEveryRequest);
  ApplyMemoryQos(in, &n.s);
  EXPECT_EQ(n.At(kBCtr).memory_qos.expected_min_bytes, 500 * kMi);
  EXPECT_EQ(n.At(kBCtr).memory_qos.expected_high_bytes, 950 * kMi);
  EXPECT_EQ(n.At(std::string(kBPod) + "/cri-containerd-b2.scope").memory_qos.expected_high_bytes,
            200 * kMi + 1620 * kMi);
  EXPECT_EQ(n.At(kBPod).memory_qos.request_bytes, 700 * kMi);
  EXPECT_EQ(n.At(kBPod).memory_qos.request_source, MemoryRequestSource::kRuntime);
  EXPECT_EQ(n.At(kBPod).memory_qos.expected_min_bytes, 700 * kMi);
  EXPECT_EQ(n.At(kBu).memory_qos.expected_min_bytes, 700 * kMi);
  EXPECT_EQ(n.At(kKp).memory_qos.expected_min_bytes, 700 * kMi);
  EXPECT_EQ(n.s.memory_qos.min_total_bytes, 700 * kMi);
}

// Guaranteed's request is its limit; BestEffort has none: the class says so without a source.
TEST(ApplyMemoryQos, TheQosClassImpliesRequests) {
  Node n;
  n.Add(kKp, CgroupKind::kKubepods).memory.max_bytes = 4096 * kMi;
  n.Add(kGPod, CgroupKind::kPod, QosClass::kGuaranteed, "g");
  n.Add(kGCtr, CgroupKind::kContainer, QosClass::kGuaranteed, "g").id.meta =
      Meta(std::nullopt, std::nullopt, std::nullopt, 256 * kMi);
  const std::string be_pod = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pode.slice";
  n.Add("/kubepods.slice/kubepods-besteffort.slice", CgroupKind::kQos, QosClass::kBestEffort);
  n.Add(be_pod, CgroupKind::kPod, QosClass::kBestEffort, "e");
  n.Add(be_pod + "/cri-containerd-e1.scope", CgroupKind::kContainer, QosClass::kBestEffort, "e");
  n.Sort();
  MemoryQosInputs in;
  in.basis = Basis(MemoryQosGeneration::kV1_37, 0.9, MemoryReservationPolicy::kTieredReservation);
  ApplyMemoryQos(in, &n.s);
  EXPECT_EQ(n.At(kGCtr).memory_qos.request_bytes, 256 * kMi);
  EXPECT_EQ(n.At(kGCtr).memory_qos.request_source, MemoryRequestSource::kQosClass);
  EXPECT_EQ(n.At(kGCtr).memory_qos.expected_min_bytes, 256 * kMi);
  const MemoryQosView& e = n.At(be_pod + "/cri-containerd-e1.scope").memory_qos;
  EXPECT_EQ(e.request_bytes, 0u);
  EXPECT_EQ(e.request_source, MemoryRequestSource::kQosClass);
  // v1.37 with a factor: BestEffort gets floor(0.9 × 4Gi / page) × page.
  EXPECT_EQ(e.expected_high_bytes, 3686u * kMi + 102u * 4096u);
  EXPECT_EQ(n.s.memory_qos.min_total_bytes, 256 * kMi);
  EXPECT_EQ(n.s.memory_qos.low_total_bytes, 0u);
}

// A Burstable container whose request nobody carries: no expected values, and no totals.
TEST(ApplyMemoryQos, UnknownRequestsClaimNothing) {
  Node n;
  n.Add(kKp, CgroupKind::kKubepods).memory.max_bytes = 4096 * kMi;
  n.Add(kBu, CgroupKind::kQos, QosClass::kBurstable);
  n.Add(kBPod, CgroupKind::kPod, QosClass::kBurstable, "b");
  n.Add(kBCtr, CgroupKind::kContainer, QosClass::kBurstable, "b").id.meta =
      Meta(std::nullopt, std::nullopt, std::nullopt, 512 * kMi);
  n.Sort();
  MemoryQosInputs in;
  in.basis = Basis(MemoryQosGeneration::kV1_36, 0.9, MemoryReservationPolicy::kTieredReservation);
  ApplyMemoryQos(in, &n.s);
  EXPECT_TRUE(n.s.memory_qos.applied);
  const MemoryQosView& v = n.At(kBCtr).memory_qos;
  EXPECT_FALSE(v.request_bytes);
  EXPECT_EQ(v.limit_bytes, 512 * kMi);
  EXPECT_FALSE(v.expected_min_bytes);
  EXPECT_FALSE(v.expected_low_bytes);
  EXPECT_FALSE(v.expected_high_bytes);
  EXPECT_FALSE(n.At(kBPod).memory_qos.request_bytes);
  EXPECT_FALSE(n.At(kBu).memory_qos.expected_low_bytes);
  EXPECT_FALSE(n.At(kKp).memory_qos.expected_min_bytes);
  EXPECT_FALSE(n.s.memory_qos.low_total_bytes);
}

// No known kubelet (no basis, or a basis whose version is unknown), or its gate off: not
// applied, nothing expected; zones still judged against whatever protection the cgroup has.
TEST(ApplyMemoryQos, NothingJudgedWithoutAKnownKubelet) {
  for (int k = 0; k < 3; ++k) {
    Node n = TieredNode(false);
    MemoryQosInputs in;
    if (k == 1) in.basis = std::make_shared<MemoryQosBasis>();
    if (k == 2) in.basis = Basis(MemoryQosGeneration::kV1_36, 0.9, MemoryReservationPolicy::kTieredReservation, false);
    ApplyMemoryQos(in, &n.s);
    EXPECT_FALSE(n.s.memory_qos.applied) << k;
    for (const CgroupStats& c : n.s.cgroups) {
      EXPECT_FALSE(c.memory_qos.expected_min_bytes) << k << " " << c.id.cgroup_path;
      EXPECT_FALSE(c.memory_qos.expected_high_bytes) << k << " " << c.id.cgroup_path;
    }
    EXPECT_FALSE(n.s.memory_qos.min_total_bytes);
    // Requests are still found; the capped flags still hold.
    EXPECT_EQ(n.At(kBCtr).memory_qos.request_bytes, 128 * kMi);
    EXPECT_EQ(n.At(kBCtr).memory_qos.low_capped, true);
    EXPECT_EQ(n.At(kGCtr).memory_qos.zone, MemoryZone::kBelowRequest);
    EXPECT_EQ(n.At(kBCtr).memory_qos.zone, MemoryZone::kAboveRequest);  // its memory.low holds nothing
  }
}

// cgroup v1: no memory.min file; the request stands in for the protection.
TEST(ApplyMemoryQos, CgroupV1JudgesByTheRequest) {
  Snapshot s;
  CgroupStats& kp = s.cgroups.emplace_back();
  kp.id.cgroup_path = "/kubepods";
  kp.id.kind = CgroupKind::kKubepods;
  CgroupStats& c = s.cgroups.emplace_back();
  c.id.cgroup_path = "/kubepods/burstable/podb/0123456789ab";
  c.id.kind = CgroupKind::kContainer;
  c.id.qos = QosClass::kBurstable;
  c.id.meta = Meta(100 * kMi, std::nullopt, 950 * kMi, 1000 * kMi);
  c.memory.max_bytes = 1000 * kMi;
  c.memory.usage_bytes = 50 * kMi;
  MemoryQosInputs in;
  in.basis = Basis(MemoryQosGeneration::kV1_27, 0.9, MemoryReservationPolicy::kMinForEveryRequest);
  ApplyMemoryQos(in, &s);
  EXPECT_FALSE(s.memory_qos.applied);
  EXPECT_FALSE(s.cgroups[1].memory_qos.expected_high_bytes);
  EXPECT_EQ(s.cgroups[1].memory_qos.zone, MemoryZone::kBelowRequest);
}

TEST(ApplyMemoryQos, KernelBefore59WithMemoryHighIsALivelockRisk) {
  Node n = TieredNode(false);
  MemoryQosInputs in;
  in.basis = Basis(MemoryQosGeneration::kV1_36, 0.9, MemoryReservationPolicy::kTieredReservation);
  in.kernel_release = "5.4.0-150-generic";
  ApplyMemoryQos(in, &n.s);
  EXPECT_TRUE(n.s.memory_qos.kernel_before_5_9);
  EXPECT_TRUE(n.s.memory_qos.memory_high_in_use);
  EXPECT_TRUE(KernelOlderThan("5.8.18", 5, 9));
  EXPECT_FALSE(KernelOlderThan("5.9.0", 5, 9));
  EXPECT_FALSE(KernelOlderThan("6.1.0-13-amd64", 5, 9));
  EXPECT_TRUE(KernelOlderThan("4.19.0", 5, 9));
  EXPECT_FALSE(KernelOlderThan("", 5, 9));
  EXPECT_FALSE(KernelOlderThan("garbage", 5, 9));
}

TEST(MemoryZones, EachZoneFromTheKnobs) {
  const uint64_t margin = 4 * kMi;
  const Opt<uint64_t> floor = 100 * kMi, high = 200 * kMi, max = 300 * kMi, none;
  auto zone = [&](uint64_t usage) { return ZoneOf(usage, floor, high, max, margin); };
  EXPECT_EQ(zone(50 * kMi), MemoryZone::kBelowRequest);
  EXPECT_EQ(zone(100 * kMi), MemoryZone::kAboveRequest);
  EXPECT_EQ(zone(199 * kMi), MemoryZone::kAboveRequest);
  EXPECT_EQ(zone(200 * kMi), MemoryZone::kThrottling);
  EXPECT_EQ(zone(295 * kMi), MemoryZone::kThrottling);
  EXPECT_EQ(zone(296 * kMi), MemoryZone::kAtLimit);
  // No memory.high: never throttling.
  EXPECT_EQ(ZoneOf(250 * kMi, floor, kUnlimited, max, margin), MemoryZone::kAboveRequest);
  EXPECT_EQ(ZoneOf(5000 * kMi, Opt<uint64_t>(0), kUnlimited, kUnlimited, margin), MemoryZone::kAboveRequest);
  EXPECT_EQ(ZoneOf(none, floor, high, max, margin), MemoryZone::kUnknown);
  EXPECT_EQ(ZoneOf(50 * kMi, none, none, none, margin), MemoryZone::kUnknown);
  EXPECT_STREQ(MemoryZoneName(MemoryZone::kThrottling), "throttling");
  EXPECT_STREQ(MemoryZoneName(MemoryZone::kUnknown), "");
}

// The kernel's rule on its own: the smallest value an ancestor below the root configures.
TEST(MemoryProtection, CappedByTheSmallestAncestor) {
  Snapshot s;
  auto add = [&](const char* path, Opt<uint64_t> min, Opt<uint64_t> low) {
    CgroupStats& c = s.cgroups.emplace_back();
    c.id.cgroup_path = path;
    c.memory.min_bytes = min;
    c.memory.low_bytes = low;
  };
  add("/", std::nullopt, std::nullopt);
  add("/a", 1000, 0);            // a child of the root: nothing above it
  add("/a/b", 300, 50);          // min within a's 1000; low above a's 0
  add("/a/b/c", 400, 10);        // min above b's 300; low above the chain's 0
  add("/a/b/c/d", 0, 0);         // configures nothing: no verdict
  add("/a/x/y", 5, 5);           // /a/x not in the snapshot: unknown
  add("/a/z", std::nullopt, 7);  // its own min unread
  add("/a/z/w", 1, 1);           // an ancestor's min unread: min unknown, low capped by a's 0
  const ProtectionBounds b = PassedDown(s, s.NearestAncestors());
  EXPECT_EQ(b.min[1], kUnlimited);
  EXPECT_EQ(b.min[2], 1000u);
  EXPECT_EQ(b.min[3], 300u);
  EXPECT_EQ(b.low[3], 0u);
  MarkCappedProtection(b, &s);
  auto q = [&](size_t i) { return s.cgroups[i].memory_qos; };
  EXPECT_EQ(q(1).min_capped, false);
  EXPECT_FALSE(q(1).low_capped);  // configures 0
  EXPECT_EQ(q(2).min_capped, false);
  EXPECT_EQ(q(2).low_capped, true);
  EXPECT_EQ(q(3).min_capped, true);
  EXPECT_EQ(q(3).low_capped, true);
  EXPECT_FALSE(q(4).min_capped);
  EXPECT_FALSE(q(5).min_capped);
  EXPECT_FALSE(q(5).low_capped);
  EXPECT_FALSE(q(7).min_capped);
  EXPECT_EQ(q(7).low_capped, true);
  EXPECT_EQ(EffectiveProtection(400, b.min[3]), 300u);
  EXPECT_EQ(EffectiveProtection(400, std::nullopt), 400u);
}

}  // namespace
}  // namespace statlet
