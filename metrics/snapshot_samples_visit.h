// The body of the value path's per-cgroup visit, as a template over the sink: the edges that
// run it for every series (the Prometheus encoder) instantiate it with their own final sink
// type, so each Add is a direct, inlinable call instead of a virtual one per sample; the
// others use SnapshotSamples::ForEachSample (SampleSink&). Include only where a visit is
// instantiated.
#pragma once

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/attributes.h"
#include "collector/memory_qos.h"
#include "metrics/derived_values.h"
#include "metrics/family_rows.h"
#include "metrics/snapshot_samples.h"

namespace statlet::metrics {
namespace visit_detail {

// cAdvisor reports limits above 2^62 (the kernel's rounded "max") as 0.
inline constexpr uint64_t kCadvisorUnlimited = uint64_t{1} << 62;
inline Value CadvisorLimit(uint64_t v) { return Value::Count(v > kCadvisorUnlimited ? 0 : v); }
// statlet's own limit families: +Inf when unlimited.
inline Value StatletLimit(uint64_t v) {
  return Value::Double(v == kUnlimited || v > kCadvisorUnlimited ? std::numeric_limits<double>::infinity()
                                                                 : static_cast<double>(v));
}
inline bool Limited(const Opt<uint64_t>& v) { return v.has_value() && *v != kUnlimited; }

// "cpu00", "cpu01"... (cAdvisor's per-CPU label values), from a table built once.
std::string_view CpuLabel(size_t cpu);
// A device number as a label value: from a table built once, or rendered into *buf.
std::string_view Decimal(uint32_t v, std::string* buf);

// memory.events' keys, the `event` label, and their fields (snapshot/memory_events.def).
struct MemoryEventField {
  std::string_view name;
  Opt<uint64_t> MemoryEvents::*field;
};
inline constexpr MemoryEventField kMemoryEventFields[] = {
#define STATLET_MEMORY_EVENT(field, key, kernel_item) {key, &MemoryEvents::field},
#include "snapshot/memory_events.def"
};

}  // namespace visit_detail

template <class Sink, FamilyId kFixed>
STATLET_ALWAYS_INLINE inline void SnapshotSamples::VisitCgroup(FamilyId id, size_t i, Sink& sink) {
  using namespace visit_detail;
  using F = FamilyId;
  const Snapshot& s = *snap_;
  const CgroupStats& c = s.cgroups[i];
  const CpuStats& cpu = c.cpu;
  const MemoryStats& mem = c.memory;
  // Read only by the CFS families: other families do not touch the quota's cache line.
  auto cfs_set = [&] { return Limited(cpu.quota_us); };
  auto count = [&](const Opt<uint64_t>& v, LabelValues l = {}) STATLET_ALWAYS_INLINE {
    if (v) sink.Add(i, l, Value::Count(*v));
  };
  auto nanos = [&](const Opt<uint64_t>& v, LabelValues l = {}) STATLET_ALWAYS_INLINE {
    if (v) sink.Add(i, l, Value::Nanos(*v));
  };
  auto psi_total = [&](const Psi& p, bool full) STATLET_ALWAYS_INLINE {
    const Opt<PsiLine>& line = full ? p.full : p.some;
    if (line) sink.Add(i, {}, Value::Micros(line->total_us));
  };
  auto network = [&](auto field) STATLET_ALWAYS_INLINE {
    const NetNamespaceStats* ns = container_net_[i];
    if (!ns) return;
    size_t n = 0;
    for (const NetInterfaceStats& itf : ns->interfaces) {
      if (rules_.max_interfaces && n++ >= rules_.max_interfaces) break;
      if (!CountsInterface(rules_, itf.name)) continue;
      sink.Add(i, {itf.name}, Value::Count(itf.*field));
    }
  };
  auto pod_network = [&](auto rx, auto tx) STATLET_ALWAYS_INLINE {
    const NetNamespaceStats* ns = pod_net_[i];
    if (!ns) return;
    size_t n = 0;
    for (const NetInterfaceStats& itf : ns->interfaces) {
      if (rules_.max_interfaces && n++ >= rules_.max_interfaces) break;
      sink.Add(i, {"receive", itf.name}, Value::Count(itf.*rx));
      sink.Add(i, {"transmit", itf.name}, Value::Count(itf.*tx));
    }
  };
  auto per_device = [&](auto field) STATLET_ALWAYS_INLINE {
    for (const IoDeviceStats& d : c.io.devices) {
      if (const Opt<uint64_t>& v = d.*field) sink.Add(i, {devices_.Name(d.major, d.minor)}, Value::Count(*v));
    }
  };
  auto io_cost = [&](auto field) STATLET_ALWAYS_INLINE {
    for (const IoDeviceStats& d : c.io.devices) {
      if (const Opt<uint64_t>& v = d.*field) sink.Add(i, {devices_.Name(d.major, d.minor)}, Value::Micros(*v));
    }
  };
  auto writable_layer = [&](auto field) STATLET_ALWAYS_INLINE {
    // The writable layer as the runtime reports it: containers only (a pod cgroup carries
    // its sandbox's metadata, and the sandbox has no layer of its own here).
    if (c.id.kind != CgroupKind::kContainer || !c.id.meta || c.id.meta->writable_layer.timestamp_ns == 0) return;
    const auto& layer = c.id.meta->writable_layer;
    if (const Opt<uint64_t>& v = layer.*field) {
      sink.Add(i, {layer.device.empty() ? std::string_view(layer.mountpoint) : std::string_view(layer.device)},
               Value::Count(*v));
    }
  };
  // The kubepods cgroup the snapshot's node-wide Memory QoS facts are of.
  auto node_kubepods = [&] {
    return c.id.kind == CgroupKind::kKubepods && c.id.cgroup_path == s.memory_qos.kubepods_path;
  };
  auto hugetlb = [&](auto field) STATLET_ALWAYS_INLINE {
    for (const MemoryStats::Hugetlb& h : mem.hugetlb) {
      if (const Opt<uint64_t>& v = h.*field) sink.Add(i, {h.page_size}, Value::Count(*v));
    }
  };

  // A family whose row names its field (FieldValue) needs no rule.
  if (const FieldValue& field = family_rows::kFamilies[static_cast<size_t>(id)].value; field.set()) {
    if (const Opt<uint64_t>& v = field.get(c))
      sink.Add(i, {}, field.kind == FieldValue::Kind::kNanos ? Value::Nanos(*v) : Value::Count(*v));
    return;
  }
  // The rules of the other families; a family with neither yields nothing, which
  // tests/metrics/snapshot_samples_test.cc catches.
  // A constant in FamilyLoop's instances: the switch is one case there from the start. With
  // a run-time id folded only after this body was inlined into every family's loop, the
  // sink's Add was first inlined into every case of every loop: 70-90 s for each
  // Prometheus encoder's file at -O3 (docs/testing.md, "CI time").
  switch (kFixed == FamilyId::kCount ? id : kFixed) {
    case F::kContainerLastSeen:
      sink.Add(i, {}, Value::Count(static_cast<uint64_t>(std::max<int64_t>(0, s.timestamp_ns) / 1000000000)));
      return;
    case F::kContainerCreationTimeSeconds:
      if (c.id.created_ns && *c.id.created_ns > 0)
        sink.Add(i, {}, Value::Nanos(static_cast<uint64_t>(*c.id.created_ns)));
      return;
    case F::kContainerStartTimeSeconds:
      if (std::optional<int64_t> start = StartTimeNs(c)) sink.Add(i, {}, Value::Nanos(static_cast<uint64_t>(*start)));
      return;
    case F::kContainerCpuUsageSecondsTotal:
      if (rules_.per_cpu && !cpu.per_cpu_ns.empty()) {
        for (size_t k = 0; k < cpu.per_cpu_ns.size(); ++k) {
          if (cpu.per_cpu_ns[k] > 0) sink.Add(i, {CpuLabel(k)}, Value::Nanos(cpu.per_cpu_ns[k]));
        }
      } else {
        nanos(cpu.usage_ns, {"total"});
      }
      return;
    // CFS counters mean something only with a quota.
    case F::kContainerCpuCfsPeriodsTotal:
      if (cfs_set()) count(cpu.nr_periods);
      return;
    case F::kContainerCpuCfsThrottledPeriodsTotal:
      if (cfs_set()) count(cpu.nr_throttled);
      return;
    case F::kContainerCpuCfsThrottledSecondsTotal:
      if (cfs_set()) nanos(cpu.throttled_ns);
      return;
    case F::kContainerCpuCfsBurstPeriodsTotal:
      if (cfs_set()) count(cpu.nr_bursts);
      return;
    case F::kContainerCpuCfsBurstSecondsTotal:
      if (cfs_set()) nanos(cpu.burst_ns);
      return;
    case F::kContainerSpecCpuQuota:
      if (cfs_set()) count(cpu.quota_us);
      return;
    case F::kContainerSpecMemoryLimitBytes:
      if (mem.max_bytes) sink.Add(i, {}, CadvisorLimit(*mem.max_bytes));
      return;
    case F::kContainerSpecMemorySwapLimitBytes:
      if (mem.swap_max_bytes) sink.Add(i, {}, CadvisorLimit(*mem.swap_max_bytes));
      return;
    case F::kContainerSpecMemoryReservationLimitBytes: {
      const Opt<uint64_t>& r = mem.soft_limit_bytes ? mem.soft_limit_bytes : mem.min_bytes;
      if (r) sink.Add(i, {}, CadvisorLimit(*r));
      return;
    }
    case F::kContainerMemoryFailuresTotal:
      // statlet reads one (hierarchical) fault count; like cAdvisor on cgroup v2 it is
      // reported for both scopes.
      count(mem.pgfault, {"pgfault", "container"});
      count(mem.pgfault, {"pgfault", "hierarchy"});
      count(mem.pgmajfault, {"pgmajfault", "container"});
      count(mem.pgmajfault, {"pgmajfault", "hierarchy"});
      return;
    case F::kContainerOomEventsTotal: count(OomKillsOf(c)); return;
    case F::kContainerThreads: count(c.process.threads ? c.process.threads : c.process.pids_current); return;
    case F::kContainerThreadsMax:
      if (c.process.pids_max)
        sink.Add(i, {}, Value::Count(*c.process.pids_max == kUnlimited ? 0 : *c.process.pids_max));
      return;
    case F::kContainerFsReadsBytesTotal: per_device(&IoDeviceStats::read_bytes); return;
    case F::kContainerFsWritesBytesTotal: per_device(&IoDeviceStats::write_bytes); return;
    case F::kContainerFsReadsTotal: per_device(&IoDeviceStats::read_ios); return;
    case F::kContainerFsWritesTotal: per_device(&IoDeviceStats::write_ios); return;
    case F::kContainerBlkioDeviceUsageTotal:
      for (const IoDeviceStats& d : c.io.devices) {
        const std::string& dev = devices_.Name(d.major, d.minor);
        const std::string_view major = Decimal(d.major, &major_buf_), minor = Decimal(d.minor, &minor_buf_);
        if (d.read_bytes) sink.Add(i, {dev, major, minor, "Read"}, Value::Count(*d.read_bytes));
        if (d.write_bytes) sink.Add(i, {dev, major, minor, "Write"}, Value::Count(*d.write_bytes));
      }
      return;
    case F::kContainerFsIoCostUsageSecondsTotal: io_cost(&IoDeviceStats::cost_usage_us); return;
    case F::kContainerFsIoCostWaitSecondsTotal: io_cost(&IoDeviceStats::cost_wait_us); return;
    case F::kContainerFsIoCostIndebtSecondsTotal: io_cost(&IoDeviceStats::cost_indebt_us); return;
    case F::kContainerFsIoCostIndelaySecondsTotal: io_cost(&IoDeviceStats::cost_indelay_us); return;
    case F::kContainerFsUsageBytes: writable_layer(&ContainerMetadata::WritableLayer::used_bytes); return;
    case F::kContainerFsLimitBytes: writable_layer(&ContainerMetadata::WritableLayer::capacity_bytes); return;
    case F::kContainerFsInodesFree: writable_layer(&ContainerMetadata::WritableLayer::inodes_free); return;
    case F::kContainerFsInodesTotal: writable_layer(&ContainerMetadata::WritableLayer::inodes_total); return;
    case F::kContainerUlimitsSoft:
      if (const auto& v = c.process.max_open_files_soft) {
        sink.Add(i, {"max_open_files"}, *v == kUnlimited ? Value::Double(-1.0) : Value::Count(*v));
      }
      return;
    case F::kContainerHugetlbUsageBytes: hugetlb(&MemoryStats::Hugetlb::usage_bytes); return;
    case F::kContainerHugetlbMaxUsageBytes: hugetlb(&MemoryStats::Hugetlb::max_usage_bytes); return;
    case F::kContainerHugetlbFailcnt: hugetlb(&MemoryStats::Hugetlb::failcnt); return;
    case F::kContainerNetworkReceiveBytesTotal: network(&NetInterfaceStats::rx_bytes); return;
    case F::kContainerNetworkReceivePacketsTotal: network(&NetInterfaceStats::rx_packets); return;
    case F::kContainerNetworkReceiveErrorsTotal: network(&NetInterfaceStats::rx_errors); return;
    case F::kContainerNetworkReceivePacketsDroppedTotal: network(&NetInterfaceStats::rx_dropped); return;
    case F::kContainerNetworkTransmitBytesTotal: network(&NetInterfaceStats::tx_bytes); return;
    case F::kContainerNetworkTransmitPacketsTotal: network(&NetInterfaceStats::tx_packets); return;
    case F::kContainerNetworkTransmitErrorsTotal: network(&NetInterfaceStats::tx_errors); return;
    case F::kContainerNetworkTransmitPacketsDroppedTotal: network(&NetInterfaceStats::tx_dropped); return;
    case F::kContainerPressureCpuWaitingSecondsTotal: psi_total(cpu.psi, false); return;
    case F::kContainerPressureCpuStalledSecondsTotal: psi_total(cpu.psi, true); return;
    case F::kContainerPressureMemoryWaitingSecondsTotal: psi_total(mem.psi, false); return;
    case F::kContainerPressureMemoryStalledSecondsTotal: psi_total(mem.psi, true); return;
    case F::kContainerPressureIoWaitingSecondsTotal: psi_total(c.io.psi, false); return;
    case F::kContainerPressureIoStalledSecondsTotal: psi_total(c.io.psi, true); return;
    case F::kStatletMemoryEventsTotal:
      for (int scope = 0; scope < 2; ++scope) {
        const MemoryEvents& e = scope == 0 ? mem.events : mem.events_local;
        for (const MemoryEventField& k : kMemoryEventFields)
          count(e.*k.field, {k.name, scope == 0 ? "hierarchy" : "local"});
      }
      return;
    case F::kStatletMemoryMinBytes:
      if (mem.min_bytes) sink.Add(i, {}, StatletLimit(*mem.min_bytes));
      return;
    case F::kStatletMemoryLowBytes:
      if (mem.low_bytes) sink.Add(i, {}, StatletLimit(*mem.low_bytes));
      return;
    case F::kStatletMemoryHighBytes:
      if (mem.high_bytes) sink.Add(i, {}, StatletLimit(*mem.high_bytes));
      return;
    case F::kStatletMemoryReclaimScannedPagesTotal:
      count(mem.pgscan_direct, {"direct"});
      count(mem.pgscan_kswapd, {"kswapd"});
      return;
    case F::kStatletMemoryReclaimStolenPagesTotal:
      count(mem.pgsteal_direct, {"direct"});
      count(mem.pgsteal_kswapd, {"kswapd"});
      return;
    case F::kStatletPressureStallRatio: {
      static constexpr std::string_view kRes[3] = {"cpu", "memory", "io"};
      static constexpr std::string_view kWin[3] = {"10s", "60s", "300s"};
      const Psi* psis[3] = {&cpu.psi, &mem.psi, &c.io.psi};
      for (int r = 0; r < 3; ++r) {
        for (int full = 0; full < 2; ++full) {
          const Opt<PsiLine>& line = full ? psis[r]->full : psis[r]->some;
          if (!line) continue;
          const double avgs[3] = {line->avg10, line->avg60, line->avg300};
          for (int w = 0; w < 3; ++w) {
            sink.Add(i, {kRes[r], full ? "full" : "some", kWin[w]}, Value::Double(avgs[w] / 100.0));
          }
        }
      }
      return;
    }
    case F::kStatletPidsMax:
      if (c.process.pids_max) sink.Add(i, {}, StatletLimit(*c.process.pids_max));
      return;
    case F::kStatletPodNetworkBytesTotal:
      pod_network(&NetInterfaceStats::rx_bytes, &NetInterfaceStats::tx_bytes);
      return;
    case F::kStatletPodNetworkPacketsTotal:
      pod_network(&NetInterfaceStats::rx_packets, &NetInterfaceStats::tx_packets);
      return;
    case F::kStatletPodNetworkErrorsTotal:
      pod_network(&NetInterfaceStats::rx_errors, &NetInterfaceStats::tx_errors);
      return;
    case F::kStatletPodNetworkDroppedPacketsTotal:
      pod_network(&NetInterfaceStats::rx_dropped, &NetInterfaceStats::tx_dropped);
      return;
    case F::kStatletContainerMemoryQosResourceBytes: {
      if (c.id.kind != CgroupKind::kContainer || !c.id.meta || c.id.meta->is_sandbox) return;
      const auto& r = c.id.meta->memory_resources;
      if (!r.reported) return;
      if (r.limit_bytes) sink.Add(i, {"limit"}, Value::Count(*r.limit_bytes));
      if (r.unified_min_bytes) sink.Add(i, {"min"}, Value::Count(*r.unified_min_bytes));
      if (r.unified_low_bytes) sink.Add(i, {"low"}, Value::Count(*r.unified_low_bytes));
      if (r.unified_high_bytes) sink.Add(i, {"high"}, StatletLimit(*r.unified_high_bytes));
      return;
    }
    case F::kStatletContainerMemoryQosRequestBytes:
      if (c.memory_qos.request_bytes) {
        sink.Add(i, {MemoryRequestSourceName(c.memory_qos.request_source)}, Value::Count(*c.memory_qos.request_bytes));
      }
      return;
    case F::kStatletContainerMemoryQosExpectedBytes:
      if (c.memory_qos.expected_min_bytes) sink.Add(i, {"min"}, Value::Count(*c.memory_qos.expected_min_bytes));
      if (c.memory_qos.expected_low_bytes) sink.Add(i, {"low"}, Value::Count(*c.memory_qos.expected_low_bytes));
      if (c.memory_qos.expected_high_bytes) sink.Add(i, {"high"}, StatletLimit(*c.memory_qos.expected_high_bytes));
      return;
    case F::kStatletContainerMemoryQosApplied:
      if (c.id.kind == CgroupKind::kContainer && !(c.id.meta && c.id.meta->is_sandbox)) {
        sink.Add(i, {}, Value::Count(s.memory_qos.applied ? 1 : 0));
      }
      return;
    case F::kStatletContainerMemoryQosZone:
      if (c.memory_qos.zone == MemoryZone::kUnknown) return;
      for (MemoryZone z : kMemoryZones) sink.Add(i, {MemoryZoneName(z)}, Value::Count(c.memory_qos.zone == z ? 1 : 0));
      return;
    case F::kStatletContainerMemoryHighStalled:
      if (c.memory_qos.high_stall_evaluated) sink.Add(i, {}, Value::Count(c.memory_qos.high_stalled ? 1 : 0));
      return;
    case F::kStatletContainerMemoryHighStalledSinceSeconds:
      if (c.memory_qos.high_stalled && c.memory_qos.high_stalled_since_ns > 0) {
        sink.Add(i, {}, Value::Nanos(static_cast<uint64_t>(c.memory_qos.high_stalled_since_ns)));
      }
      return;
    case F::kStatletMemoryProtectionCapped:
      if (c.memory_qos.min_capped) sink.Add(i, {"min"}, Value::Count(*c.memory_qos.min_capped ? 1 : 0));
      if (c.memory_qos.low_capped) sink.Add(i, {"low"}, Value::Count(*c.memory_qos.low_capped ? 1 : 0));
      return;
    case F::kStatletNodeMemoryQosInfo:
      if (node_kubepods() && s.memory_qos.basis) {
        const MemoryQosBasis& b = *s.memory_qos.basis;
        const bool known = b.rules.generation != MemoryQosGeneration::kUnknown;
        factor_buf_.clear();
        if (known) factor_buf_ = ThrottlingFactorLabel(b.rules.throttling_factor);
        sink.Add(i,
                 {b.kubelet_version, known ? MemoryReservationPolicyName(b.rules.reservation) : "",
                  MemoryQosRulesLabel(b.rules), factor_buf_},
                 Value::Count(1));
      }
      return;
    case F::kStatletNodeMemoryQosMinBytes:
      if (node_kubepods()) count(s.memory_qos.min_total_bytes);
      return;
    case F::kStatletNodeMemoryQosLowBytes:
      if (node_kubepods()) count(s.memory_qos.low_total_bytes);
      return;
    case F::kStatletNodeMemoryQosProtectedRatio:
      if (node_kubepods() && Limited(mem.max_bytes) && *mem.max_bytes > 0) {
        const double alloc = static_cast<double>(*mem.max_bytes);
        if (Limited(mem.min_bytes)) sink.Add(i, {"min"}, Value::Double(static_cast<double>(*mem.min_bytes) / alloc));
        if (Limited(mem.low_bytes)) sink.Add(i, {"low"}, Value::Double(static_cast<double>(*mem.low_bytes) / alloc));
      }
      return;
    case F::kStatletNodeMemoryQosLivelockRisk:
      if (node_kubepods() && !s.memory_qos.kernel_release.empty()) {
        sink.Add(i, {}, Value::Count(s.memory_qos.kernel_before_5_9 && s.memory_qos.memory_high_in_use ? 1 : 0));
      }
      return;
    case F::kStatletCpuRunqueueLatencySeconds: {
      const std::vector<uint64_t>& b = c.bpf.runq_latency_log2_us;
      if (b.empty()) return;
      Histogram h;
      h.counts = b;
      h.upper_bounds = RunqueueLatencyBounds().first(std::min(b.size() - 1, RunqueueLatencyBounds().size()));
      if (c.bpf.runq_latency_sum_ns) {
        h.has_sum = true;
        h.sum = Value::Nanos(*c.bpf.runq_latency_sum_ns);
      }
      sink.AddHistogram(i, h);
      return;
    }
    case F::kStatletTcpDropsTotal:
      // One series per reason seen; the reasons sum to tcp_drops.
      for (const auto& [reason, n] : c.bpf.tcp_drop_reasons) sink.Add(i, {reason}, Value::Count(n));
      return;
    case F::kStatletPageFaultsTotal:
      count(c.bpf.minor_faults, {"minor"});
      count(c.bpf.major_faults, {"major"});
      return;
    case F::kStatletContainerExitTimeSeconds:
      if (c.exit && c.exit->exit_ns > 0) sink.Add(i, {}, Value::Nanos(static_cast<uint64_t>(c.exit->exit_ns)));
      return;
    case F::kStatletContainerLifetimeSeconds:
      if (c.exit && c.exit->lifetime_ns) sink.Add(i, {}, Value::Nanos(static_cast<uint64_t>(*c.exit->lifetime_ns)));
      return;
    case F::kStatletOomKillTimestampSeconds: return;  // event scope: ForEachEventSample
    default: return;
  }
}

template <FamilyId kId, class Sink>
void SnapshotSamples::FamilyLoop(SnapshotSamples& self, size_t begin, size_t end, Sink& sink) {
  constexpr FieldValue kField = family_rows::kFamilies[static_cast<size_t>(kId)].value;
  if constexpr (kField.set()) {
    // The row's accessor, a constant: a direct call the compiler inlines.
    const std::vector<CgroupStats>& cgroups = self.snap_->cgroups;
    for (size_t i = begin; i < end; ++i) {
      if (const Opt<uint64_t>& v = kField.get(cgroups[i])) {
        sink.Add(i, {}, kField.kind == FieldValue::Kind::kNanos ? Value::Nanos(*v) : Value::Count(*v));
      }
    }
  } else {
    // The rule's switch is its one case here (the id is a template argument of the visit).
    for (size_t i = begin; i < end; ++i) self.VisitCgroup<Sink, kId>(kId, i, sink);
  }
}

template <class Sink>
void SnapshotSamples::ForEachSampleIn(FamilyId id, size_t begin, size_t end, Sink& sink) {
  // One small loop per family, chosen once per call: no dispatch per cgroup, and each loop is
  // small enough for the compiler to inline the sink's whole Add into it (one function for
  // every family exceeded its inlining budget, leaving calls per piece of every series).
  using Loop = void (*)(SnapshotSamples&, size_t, size_t, Sink&);
  static constexpr auto kLoops = []<size_t... I>(std::index_sequence<I...>) {
    return std::array<Loop, sizeof...(I)>{&FamilyLoop<static_cast<FamilyId>(I), Sink>...};
  }
  (std::make_index_sequence<kFamilyCount>{});
  const size_t k = static_cast<size_t>(id);
  if (k < kLoops.size() && Serves(id)) kLoops[k](*this, begin, end, sink);
}

}  // namespace statlet::metrics
