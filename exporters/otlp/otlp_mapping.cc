#include "exporters/otlp/otlp_mapping.h"

#include <vector>

namespace statlet::otlp {
namespace {

using F = FamilyId;
using A = std::array<std::string_view, 4>;
constexpr auto kC = ResourceKind::kContainer;
constexpr auto kP = ResourceKind::kPod;

OtlpMetric FromFamily(std::string_view name, std::string_view unit, Instrument inst, bool dbl, ResourceKind r,
                      std::string_view desc, F family, A attrs = {}) {
  OtlpMetric m{name, unit, inst, dbl, r, desc, attrs, {}, 0, Derived::kNone};
  m.parts[0].family = family;
  m.part_count = 1;
  return m;
}

OtlpMetric Filtered(OtlpMetric m, int8_t label, std::string_view value) {
  m.parts[0].filter_label = label;
  m.parts[0].filter_value = value;
  return m;
}

// Two families as one metric, told apart by the attribute `key`.
OtlpMetric TwoParts(std::string_view name, std::string_view unit, Instrument inst, bool dbl, ResourceKind r,
                    std::string_view desc, std::string_view key, F a, std::string_view a_value, F b,
                    std::string_view b_value, A attrs = {}) {
  OtlpMetric m{name, unit, inst, dbl, r, desc, attrs, {}, 0, Derived::kNone};
  m.parts[0] = Part{a, key, a_value, -1, {}};
  m.parts[1] = Part{b, key, b_value, -1, {}};
  m.part_count = 2;
  return m;
}

OtlpMetric FromDerived(std::string_view name, std::string_view unit, Instrument inst, bool dbl, ResourceKind r,
                       std::string_view desc, Derived d) {
  OtlpMetric m{name, unit, inst, dbl, r, desc, {}, {}, 0, Derived::kNone};
  m.derived = d;
  return m;
}

constexpr auto kSum = Instrument::kCounter;
constexpr auto kUpDown = Instrument::kUpDownCounter;
constexpr auto kGauge = Instrument::kGauge;

// The metrics both resources carry, under `prefix` ("container" or "k8s.pod").
void AddShared(std::vector<OtlpMetric>* v, ResourceKind r) {
  const bool pod = r == kP;
  auto n = [pod](std::string_view container_name, std::string_view pod_name) {
    return pod ? pod_name : container_name;
  };
  if (pod) {
    v->push_back(Filtered(FromFamily("k8s.pod.cpu.time", "s", kSum, true, r, "CPU time consumed by the pod's cgroup.",
                                     F::kContainerCpuUsageSecondsTotal),
                          0, "total"));
  } else {
    v->push_back(TwoParts("container.cpu.time", "s", kSum, true, r,
                          "CPU time consumed by the container, by mode (user/system).", "cpu.mode",
                          F::kContainerCpuUserSecondsTotal, "user", F::kContainerCpuSystemSecondsTotal, "system"));
  }
  v->push_back(FromDerived(n("container.cpu.usage", "k8s.pod.cpu.usage"), "{cpu}", kGauge, true, r,
                           "CPUs used over the last collection interval.", Derived::kCpuUsage));
  v->push_back(FromFamily(n("container.memory.usage", "k8s.pod.memory.usage"), "By", kUpDown, false, r,
                          "Memory usage, all memory regardless of when it was accessed.",
                          F::kContainerMemoryUsageBytes));
  v->push_back(FromFamily(n("container.memory.working_set", "k8s.pod.memory.working_set"), "By", kUpDown, false, r,
                          "Memory usage minus inactive file memory.", F::kContainerMemoryWorkingSetBytes));
  v->push_back(FromFamily(n("container.memory.rss", "k8s.pod.memory.rss"), "By", kUpDown, false, r,
                          "Anonymous memory (cgroup v2 anon, v1 total_rss).", F::kContainerMemoryRss));
  v->push_back(FromDerived(n("container.memory.available", "k8s.pod.memory.available"), "By", kUpDown, false, r,
                           "Memory limit minus working set; only with a limit.", Derived::kMemoryAvailable));
  v->push_back(FromDerived(n("container.paging.faults", "k8s.pod.paging.faults"), "{fault}", kSum, false, r,
                           "Page faults by type (minor = pgfault - pgmajfault).", Derived::kPagingFaults));
  v->push_back(FromDerived(n("container.uptime", "k8s.pod.uptime"), "s", kGauge, true, r,
                           "Time since the container (pod cgroup) started.", Derived::kUptime));
  if (pod) {
    // The pod families list every interface of the pod's namespace, loopback included; the
    // interfaces container_network_* leaves out (--metrics.ignored-interfaces) are left out
    // here too, as the kubeletstats receiver's figures (the kubelet's) leave them out.
    const A net = {"network.io.direction", "network.interface.name"};
    auto counted = [](OtlpMetric m) {
      m.parts[0].interface_label = 1;
      return m;
    };
    v->push_back(counted(FromFamily("k8s.pod.network.io", "By", kSum, false, r,
                                    "Bytes through the pod's network interfaces (those container_network_* counts).",
                                    F::kStatletPodNetworkBytesTotal, net)));
    v->push_back(counted(FromFamily("k8s.pod.network.errors", "{error}", kSum, false, r,
                                    "Errors on the pod's network interfaces (those container_network_* counts).",
                                    F::kStatletPodNetworkErrorsTotal, net)));
  }
  // Pressure (PSI), as the kubeletstats receiver's PSI metrics name it.
  struct Psi {
    std::string_view time_c, time_p, avg_c, avg_p, resource;
    F some, full;
  };
  static constexpr Psi kPsi[] = {
      {"container.cpu.pressure.time", "k8s.pod.cpu.pressure.time", "container.cpu.pressure.avg",
       "k8s.pod.cpu.pressure.avg", "cpu", F::kContainerPressureCpuWaitingSecondsTotal,
       F::kContainerPressureCpuStalledSecondsTotal},
      {"container.memory.pressure.time", "k8s.pod.memory.pressure.time", "container.memory.pressure.avg",
       "k8s.pod.memory.pressure.avg", "memory", F::kContainerPressureMemoryWaitingSecondsTotal,
       F::kContainerPressureMemoryStalledSecondsTotal},
      {"container.io.pressure.time", "k8s.pod.io.pressure.time", "container.io.pressure.avg", "k8s.pod.io.pressure.avg",
       "io", F::kContainerPressureIoWaitingSecondsTotal, F::kContainerPressureIoStalledSecondsTotal},
  };
  for (const Psi& p : kPsi) {
    v->push_back(TwoParts(n(p.time_c, p.time_p), "s", kSum, true, r,
                          "Total stall time (PSI total): some = some tasks waited, full = none could run.",
                          "pressure.type", p.some, "some", p.full, "full"));
    v->push_back(Filtered(FromFamily(n(p.avg_c, p.avg_p), "1", kGauge, true, r,
                                     "PSI running average of stalled time by type and window (10s/60s/300s).",
                                     F::kStatletPressureStallRatio, {"", "pressure.type", "pressure.window"}),
                          0, p.resource));
  }
}

std::vector<OtlpMetric> Build() {
  std::vector<OtlpMetric> v;
  AddShared(&v, kC);
  v.push_back(TwoParts("container.disk.io", "By", kSum, false, kC, "Bytes read and written, per block device.",
                       "disk.io.direction", F::kContainerFsReadsBytesTotal, "read", F::kContainerFsWritesBytesTotal,
                       "write", {"system.device"}));
  v.push_back(TwoParts("container.network.io", "By", kSum, false, kC,
                       "Bytes received and sent on the interfaces of the namespace the container carries "
                       "(bare runtime containers; a pod's are on k8s.pod.network.io).",
                       "network.io.direction", F::kContainerNetworkReceiveBytesTotal, "receive",
                       F::kContainerNetworkTransmitBytesTotal, "transmit", {"network.interface.name"}));
  v.push_back(FromFamily("container.filesystem.usage", "By", kUpDown, false, kC,
                         "Bytes used by the container's writable layer.", F::kContainerFsUsageBytes));
  v.push_back(FromFamily("container.filesystem.capacity", "By", kUpDown, false, kC,
                         "Capacity of the filesystem holding the writable layer.", F::kContainerFsLimitBytes));
  v.push_back(FromDerived("k8s.container.cpu.limit.current", "{cpu}", kUpDown, true, kC,
                          "CFS quota in CPUs (quota / period); only with a quota.", Derived::kCpuLimit));
  v.push_back(FromDerived("k8s.container.memory.limit.current", "By", kUpDown, false, kC,
                          "Memory limit; only with a limit.", Derived::kMemoryLimit));
  // statlet's own.
  v.push_back(FromFamily("statlet.cpu.runqueue.latency", "s", Instrument::kHistogram, true, kC,
                         "Time the container's tasks waited on a run queue (eBPF runqlat probe).",
                         F::kStatletCpuRunqueueLatencySeconds));
  v.push_back(FromFamily("statlet.cpu.throttled.time", "s", kSum, true, kC,
                         "Time the container was throttled by its CFS quota.",
                         F::kContainerCpuCfsThrottledSecondsTotal));
  v.push_back(FromFamily("statlet.memory.events", "{event}", kSum, false, kC,
                         "memory.events counts by event and scope (hierarchy/local).", F::kStatletMemoryEventsTotal,
                         {"statlet.memory.event", "statlet.memory.event.scope"}));
  // memory.stat's kinds the semantic conventions do not name.
  static constexpr struct {
    std::string_view name, description;
    F family;
  } kMemoryKinds[] = {
      {"statlet.memory.sock", "Memory of the container's network transmission buffers.", F::kStatletMemorySockBytes},
      {"statlet.memory.vmalloc", "Memory used for vmap backed memory (vmalloc).", F::kStatletMemoryVmallocBytes},
      {"statlet.memory.percpu", "Memory holding per-CPU kernel data structures.", F::kStatletMemoryPercpuBytes},
      {"statlet.memory.zswap", "Memory the zswap pool uses for the container's pages.", F::kStatletMemoryZswapBytes},
      {"statlet.memory.zswapped", "Memory swapped out to zswap, before compression.", F::kStatletMemoryZswappedBytes},
  };
  for (const auto& k : kMemoryKinds) v.push_back(FromFamily(k.name, "By", kUpDown, false, kC, k.description, k.family));
  v.push_back(FromFamily("statlet.pids.current", "{task}", kUpDown, false, kC, "Tasks charged to the cgroup.",
                         F::kStatletPidsCurrent));
  v.push_back(FromFamily("statlet.tcp.retransmits", "{segment}", kSum, false, kC,
                         "TCP retransmits of the container's sockets (eBPF tcp probe).",
                         F::kStatletTcpRetransmitsTotal));
  v.push_back(TwoParts("statlet.container.network.io", "By", kSum, false, kC,
                       "IP bytes the container's own sockets received and sent, in any network namespace (eBPF net "
                       "probe).",
                       "network.io.direction", F::kStatletContainerNetworkReceiveBytesTotal, "receive",
                       F::kStatletContainerNetworkTransmitBytesTotal, "transmit", {}));
  v.push_back(TwoParts("statlet.container.network.packets", "{packet}", kSum, false, kC,
                       "IP packets the container's own sockets received and sent, in any network namespace (eBPF net "
                       "probe).",
                       "network.io.direction", F::kStatletContainerNetworkReceivePacketsTotal, "receive",
                       F::kStatletContainerNetworkTransmitPacketsTotal, "transmit", {}));
  v.push_back(FromFamily("statlet.oom.kills", "{kill}", kSum, false, kC,
                         "Processes of the container chosen by the OOM killer (eBPF oom probe).",
                         F::kStatletOomKillsTotal));
  v.push_back(FromFamily("statlet.container.exit.time", "s", kGauge, true, kC,
                         "Time the container's cgroup emptied, seconds since the epoch (its other metrics are final).",
                         F::kStatletContainerExitTimeSeconds));
  v.push_back(FromFamily("statlet.container.lifetime", "s", kGauge, true, kC,
                         "Time from the creation of the container's cgroup to its emptying.",
                         F::kStatletContainerLifetimeSeconds));
  AddShared(&v, kP);
  return v;
}

}  // namespace

std::span<const OtlpMetric> OtlpMetrics() {
  static const std::vector<OtlpMetric>* table = new std::vector<OtlpMetric>(Build());
  return *table;
}

std::span<const OtlpNodeMetric> OtlpNodeMetrics() {
  // The image pull families (pulls/pull_metrics.cc). Pulls in flight add up across nodes:
  // UpDownCounters, as the semantic conventions count active requests.
  static constexpr A kImage = {"statlet.image.reference"};
  static constexpr A kDimm = {"statlet.machine.dimm.type"};
  static constexpr std::string_view kCoreId = "statlet.machine.cpu.core.id";
  static constexpr std::string_view kNumaNode = "statlet.machine.numa_node.id";
  static constexpr OtlpNodeMetric kTable[] = {
      {"statlet_image_pulls_in_flight", "statlet.image_pull.active", "{pull}", kUpDown, false},
      {"statlet_image_pull_clients", "statlet.image_pull.clients", "{call}", kUpDown, false},
      {"statlet_image_pull_downloaded_bytes", "statlet.image_pull.downloaded", "By", kUpDown, false, kImage},
      {"statlet_image_pull_size_bytes", "statlet.image_pull.size", "By", kUpDown, false, kImage},
      {"statlet_image_pulls_started_total", "statlet.image_pull.started", "{pull}", kSum, false},
      {"statlet_image_pulls_completed_total",
       "statlet.image_pull.completed",
       "{pull}",
       kSum,
       false,
       {"statlet.image_pull.result"}},
      {"statlet_image_pull_joins_total", "statlet.image_pull.joins", "{request}", kSum, false},
      {"statlet_image_pull_rejected_total", "statlet.image_pull.rejected", "{request}", kSum, false},
      {"statlet_image_pull_progress_errors_total", "statlet.image_pull.progress_errors", "{error}", kSum, false},
      {"statlet_image_pull_duration_seconds", "statlet.image_pull.duration", "s", Instrument::kHistogram, true},
      {"statlet_image_pull_status_writes_total",
       "statlet.image_pull.status_writes",
       "{write}",
       kSum,
       false,
       {"statlet.image_pull.status_write.result"}},
      // Pulls made straight on the runtime, followed in it (pulls/observed_pulls.h).
      {"statlet_image_pulls_observed_in_flight",
       "statlet.image_pull.observed.active",
       "{pull}",
       kUpDown,
       false,
       {"statlet.image_pull.state"}},
      {"statlet_image_pull_observed_downloaded_bytes", "statlet.image_pull.observed.downloaded", "By", kUpDown, false,
       kImage},
      {"statlet_image_pull_observed_size_bytes", "statlet.image_pull.observed.size", "By", kUpDown, false, kImage},
      {"statlet_image_pulls_observed_completed_total",
       "statlet.image_pull.observed.completed",
       "{pull}",
       kSum,
       false,
       {"statlet.image_pull.result"}},
      {"statlet_image_pull_observed_stalls_total", "statlet.image_pull.observed.stalls", "{stall}", kSum, false},
      {"statlet_image_pull_observed_poll_errors_total", "statlet.image_pull.observed.poll_errors", "{error}", kSum,
       false},
      // The machine families (metrics/machine_families.h), their own labels in name order;
      // the host's identities are the node resource's, not the points'. Capacities and
      // counts add up across nodes (UpDownCounters, as the semantic conventions'
      // system.cpu.*.count and system.memory.limit); distances, sibling counts and the error
      // flag do not (Gauges).
      {"machine_cpu_cores", "system.cpu.logical.count", "{cpu}", kUpDown, false},
      {"machine_cpu_physical_cores", "system.cpu.physical.count", "{cpu}", kUpDown, false},
      {"machine_cpu_sockets", "statlet.machine.cpu.sockets", "{socket}", kUpDown, false},
      {"machine_cpu_books", "statlet.machine.cpu.books", "{book}", kUpDown, false},
      {"machine_cpu_drawers", "statlet.machine.cpu.drawers", "{drawer}", kUpDown, false},
      {"machine_memory_bytes", "system.memory.limit", "By", kUpDown, false},
      {"machine_swap_bytes", "statlet.machine.swap.limit", "By", kUpDown, false},
      {"machine_dimm_count", "statlet.machine.dimm.count", "{dimm}", kUpDown, false, kDimm},
      {"machine_dimm_capacity_bytes", "statlet.machine.dimm.capacity", "By", kUpDown, false, kDimm},
      {"machine_scrape_error", "statlet.machine.read_error", "1", kGauge, false},
      {"machine_cpu_cache_capacity_bytes",
       "statlet.machine.cpu.cache.capacity",
       "By",
       kUpDown,
       false,
       {kCoreId, "statlet.machine.cpu.cache.level", kNumaNode, "statlet.machine.cpu.cache.type"}},
      {"machine_thread_siblings_count",
       "statlet.machine.cpu.thread_siblings",
       "{cpu}",
       kGauge,
       false,
       {kCoreId, kNumaNode, "statlet.machine.cpu.thread.id"}},
      {"machine_node_memory_capacity_bytes",
       "statlet.machine.numa_node.memory.capacity",
       "By",
       kUpDown,
       false,
       {kNumaNode}},
      {"machine_node_hugepages_count",
       "statlet.machine.numa_node.hugepages",
       "{page}",
       kUpDown,
       false,
       {kNumaNode, "statlet.machine.hugepage.size_kb"}},
      {"machine_node_distance",
       "statlet.machine.numa_node.distance",
       "1",
       kGauge,
       false,
       {kNumaNode, "statlet.machine.numa_node.target_id"}},
      // The exit records' (metrics/exit_families.cc).
      {"statlet_container_exits_total",
       "statlet.container.exits",
       "{exit}",
       kSum,
       false,
       {"statlet.container.exit.reason"}},
      {"statlet_container_exit_lifetime_seconds", "statlet.container.exit.lifetime", "s", Instrument::kHistogram, true},
      {"statlet_container_exit_records_dropped_total", "statlet.container.exit_records.dropped", "{record}", kSum,
       false},
      {"statlet_container_exit_records", "statlet.container.exit_records", "{record}", kUpDown, false},
      {"statlet_container_exit_records_bytes", "statlet.container.exit_records.size", "By", kUpDown, false},
      // OOM kills per container name across restarts (metrics/container_oom_kills.h).
      {"statlet_container_oom_kills_total",
       "statlet.container.oom_kills",
       "{kill}",
       kSum,
       false,
       {"k8s.namespace.name", "k8s.pod.name", "k8s.container.name"}},
  };
  return kTable;
}

const OtlpNodeMetric* OtlpNodeMetricOf(std::string_view family) {
  for (const OtlpNodeMetric& m : OtlpNodeMetrics()) {
    if (m.family == family) return &m;
  }
  return nullptr;
}

bool SuitsType(Instrument instrument, metrics::ExtraType type) {
  switch (type) {
    case metrics::ExtraType::kGauge:
      return instrument == Instrument::kGauge || instrument == Instrument::kUpDownCounter;
    case metrics::ExtraType::kCounter: return instrument == Instrument::kCounter;
    case metrics::ExtraType::kHistogram: return instrument == Instrument::kHistogram;
  }
  return false;
}

std::string_view DerivedAttribute(Derived d) { return d == Derived::kPagingFaults ? "system.paging.fault.type" : ""; }

FamilyId DerivedFamily(Derived d) {
  switch (d) {
    case Derived::kNone:
    case Derived::kCpuUsage: return FamilyId::kContainerCpuUsageSecondsTotal;
    case Derived::kMemoryAvailable: return FamilyId::kContainerMemoryWorkingSetBytes;
    case Derived::kUptime: return FamilyId::kContainerStartTimeSeconds;
    case Derived::kCpuLimit: return FamilyId::kContainerSpecCpuQuota;
    case Derived::kMemoryLimit: return FamilyId::kContainerSpecMemoryLimitBytes;
    case Derived::kPagingFaults: return FamilyId::kContainerMemoryFailuresTotal;
  }
  return FamilyId::kContainerCpuUsageSecondsTotal;
}

std::string_view InstrumentName(Instrument i) {
  switch (i) {
    case Instrument::kCounter: return "Sum (monotonic, cumulative)";
    case Instrument::kUpDownCounter: return "Sum (not monotonic, cumulative)";
    case Instrument::kGauge: return "Gauge";
    case Instrument::kHistogram: return "Histogram (explicit buckets, cumulative)";
  }
  return "";
}

}  // namespace statlet::otlp
