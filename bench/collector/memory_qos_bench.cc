// What the Memory QoS view (requests, expected knobs at every level, capped protection,
// zones, node totals) and the memory.high stall detector add to every collection, per
// container, beside a floor: one pass over the snapshot reading the same fields.
// Run: memory_qos_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "collector/memory_high_stall.h"
#include "collector/memory_qos.h"

namespace statlet {
namespace {

// A node of `n` containers, two per Burstable pod, laid out as a v1.36 TieredReservation
// kubelet writes it (kubepods memory.min, the Burstable cgroup's and each pod's memory.low),
// each container with the v2 knobs, PSI and the runtime's resources; every fourth one
// livelocked at memory.high.
Snapshot Node(int n) {
  Snapshot s;
  auto add = [&s](std::string path, CgroupKind kind) -> CgroupStats& {
    CgroupStats& c = s.cgroups.emplace_back();
    c.id.cgroup_path = std::move(path);
    c.id.kind = kind;
    c.id.qos = QosClass::kBurstable;
    c.memory.min_bytes = 0;
    c.memory.low_bytes = 0;
    return c;
  };
  CgroupStats& kp = add("/kubepods", CgroupKind::kKubepods);
  kp.id.qos = QosClass::kUnknown;
  kp.memory.max_bytes = uint64_t{64} << 30;
  kp.memory.min_bytes = static_cast<uint64_t>(n) << 28;
  add("/kubepods/burstable", CgroupKind::kQos).memory.low_bytes = static_cast<uint64_t>(n) << 28;
  for (int i = 0; i < n; ++i) {
    const std::string pod = "/kubepods/burstable/pod" + std::to_string(1000000 + i / 2);
    if (i % 2 == 0) {
      CgroupStats& p = add(pod, CgroupKind::kPod);
      p.id.pod_uid = std::to_string(1000000 + i / 2);
      p.memory.low_bytes = uint64_t{512} << 20;
    }
    CgroupStats& c = add(pod + "/" + std::string(56, 'a') + std::to_string(10000000 + i), CgroupKind::kContainer);
    c.id.pod_uid = std::to_string(1000000 + i / 2);
    c.id.created_ns = i;
    auto meta = std::make_shared<ContainerMetadata>();
    meta->memory_resources = {true, uint64_t{1} << 30, std::nullopt, uint64_t{256} << 20, uint64_t{950} << 20};
    c.id.meta = meta;
    MemoryStats& m = c.memory;
    m.low_bytes = uint64_t{256} << 20;
    m.high_bytes = uint64_t{950} << 20;
    m.max_bytes = uint64_t{1} << 30;
    m.usage_bytes = i % 4 == 0 ? (uint64_t{951} << 20) : (uint64_t{300} << 20);
    m.events.high = 0;
    m.psi.full = PsiLine{i % 4 == 0 ? 80.0 : 1.0, 0, 0, 0};
  }
  return s;
}

void Advance(Snapshot* s, int64_t t) {
  s->monotonic_ns = t;
  s->timestamp_ns = t;
  for (CgroupStats& c : s->cgroups) {
    if (c.memory.events.high) *c.memory.events.high += 17;
  }
}

void BM_Floor(benchmark::State& state) {
  Snapshot s = Node(static_cast<int>(state.range(0)));
  int64_t t = 0;
  for (auto _ : state) {
    Advance(&s, t += 1000000000);
    uint64_t sum = 0;
    for (const CgroupStats& c : s.cgroups) {
      sum += c.memory.usage_bytes.value_or(0) + c.memory.high_bytes.value_or(0) + c.memory.events.high.value_or(0);
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_MemoryQosAndStallDetector(benchmark::State& state) {
  Snapshot s = Node(static_cast<int>(state.range(0)));
  MemoryHighStallOptions o;
  o.dwell = std::chrono::seconds(3600);  // no log lines in the loop
  MemoryHighStallDetector detector(o);
  MemoryQosInputs in;
  auto basis = std::make_shared<MemoryQosBasis>();
  basis->rules.generation = MemoryQosGeneration::kV1_36;
  basis->rules.enabled = true;
  basis->rules.throttling_factor = 0.9;
  basis->rules.reservation = MemoryReservationPolicy::kTieredReservation;
  in.basis = basis;
  in.kernel_release = "6.1.0-13-amd64";
  int64_t t = 0;
  for (auto _ : state) {
    Advance(&s, t += 1000000000);
    ApplyMemoryQos(in, &s);
    detector.Update(&s);
    benchmark::DoNotOptimize(s.cgroups.back().memory_qos.zone);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

BENCHMARK(BM_Floor)->Arg(100)->Arg(1000);
BENCHMARK(BM_MemoryQosAndStallDetector)->Arg(100)->Arg(1000);

}  // namespace
}  // namespace statlet

BENCHMARK_MAIN();
