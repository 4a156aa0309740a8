#include "metrics/metric_selection.h"

#include <algorithm>

#include "metrics/container_oom_kills.h"
#include "metrics/machine_families.h"

namespace statlet::metrics {
namespace {

using G = MetricGroup;

constexpr GroupInfo kGroups[] = {
    {G::kCpu, "cpu", "CPU time and CFS throttling (container_cpu_*)"},
    {G::kPercpu, "percpu", "per-CPU series of container_cpu_usage_seconds_total (with --collector.per-cpu)"},
    {G::kMemory, "memory", "memory usage, memory.stat and memory.events (container_memory_*, statlet_memory_* counts)"},
    {G::kDiskIO, "diskIO", "block IO per device (container_fs_reads/writes_*, container_blkio_*, io cost)"},
    {G::kDisk, "disk", "writable layer usage and inodes (container_fs_usage_bytes, _limit_bytes, _inodes_*)"},
    {G::kNetwork, "network", "interface counters (container_network_*, statlet_pod_network_*)"},
    {G::kProcess, "process",
     "processes, threads, fds, sockets, ulimits, pids (container_processes..., statlet_pids_*)"},
    {G::kOomEvent, "oom_event",
     "OOM kills per cgroup and per container name across restarts (container_oom_events_total, "
     "statlet_container_oom_kills_total)"},
    {G::kPressure, "pressure", "PSI stall totals (container_pressure_*)"},
    {G::kHugetlb, "hugetlb", "huge page usage (container_hugetlb_*)"},
    {G::kCpuTopology, "cpu_topology",
     "NUMA, cache and thread topology of the machine (machine_cpu_cache_capacity_bytes, "
     "machine_thread_siblings_count, machine_node_*)"},
    {G::kPsiAverages, "psi", "PSI averages (statlet_pressure_stall_ratio)"},
    {G::kMemoryQos, "memory_qos",
     "Memory QoS view and knobs (statlet_container_memory_*, statlet_node_memory_qos_*, "
     "statlet_memory_min/low/high_bytes, "
     "statlet_memory_protection_capped)"},
    {G::kEbpf, "ebpf", "the eBPF probes' families (run-queue latency, TCP, page faults, OOM kills)"},
    {G::kPulls, "pulls", "image pulls (statlet_image_pull*)"},
    {G::kMachine, "machine",
     "the machine's CPUs, memory and modules (machine_cpu_*, machine_memory_bytes, machine_swap_bytes, "
     "machine_dimm_*, machine_scrape_error); served, as cAdvisor does, whatever --metrics.enable names"},
};
static_assert(std::size(kGroups) == static_cast<size_t>(G::kCount) - 1, "every group but kAlways is named");

constexpr std::string_view kUnservedCadvisor[] = {"sched",       "memory_numa", "cpuLoad", "tcp",
                                                  "advtcp",      "udp",         "app",     "perf_event",
                                                  "accelerator", "resctrl",     "cpuset",  "referenced_memory"};

const GroupInfo* FindGroup(std::string_view name) {
  for (const GroupInfo& g : kGroups) {
    if (g.name == name) return &g;
  }
  return nullptr;
}
bool IsUnservedCadvisor(std::string_view name) {
  return std::find(std::begin(kUnservedCadvisor), std::end(kUnservedCadvisor), name) != std::end(kUnservedCadvisor);
}
bool IsPullFamily(std::string_view name) { return name.substr(0, kPullFamilyPrefix.size()) == kPullFamilyPrefix; }
// Extra families named by name in the lists: image pulls, machine families, the OOM kills
// per container name.
bool IsExtraFamily(std::string_view name) {
  return IsPullFamily(name) || FindMachineFamily(name) != nullptr || name == kContainerOomKillsFamily;
}

constexpr std::string_view kLabels[] = {"id", "image"};  // CgroupLabel order

}  // namespace

std::span<const GroupInfo> NamedGroups() { return kGroups; }

std::string_view GroupName(MetricGroup g) {
  for (const GroupInfo& i : kGroups) {
    if (i.group == g) return i.name;
  }
  return "";
}

std::span<const std::string_view> UnservedCadvisorGroups() { return kUnservedCadvisor; }

MetricGroup GroupOf(FamilyId id) {
  using F = FamilyId;
  switch (id) {
    case F::kContainerLastSeen:
    case F::kContainerCreationTimeSeconds:
    case F::kContainerStartTimeSeconds:
    case F::kContainerSpecCpuPeriod:
    case F::kContainerSpecCpuQuota:
    case F::kContainerSpecCpuShares:
    case F::kContainerSpecMemoryLimitBytes:
    case F::kContainerSpecMemorySwapLimitBytes:
    case F::kContainerSpecMemoryReservationLimitBytes:
    // An exited container's time and lifetime go with its final series, as the start time
    // goes with a live one's.
    case F::kStatletContainerExitTimeSeconds:
    case F::kStatletContainerLifetimeSeconds: return G::kAlways;
    case F::kContainerCpuUsageSecondsTotal:
    case F::kContainerCpuUserSecondsTotal:
    case F::kContainerCpuSystemSecondsTotal:
    case F::kContainerCpuCfsPeriodsTotal:
    case F::kContainerCpuCfsThrottledPeriodsTotal:
    case F::kContainerCpuCfsThrottledSecondsTotal:
    case F::kContainerCpuCfsBurstPeriodsTotal:
    case F::kContainerCpuCfsBurstSecondsTotal: return G::kCpu;
    case F::kContainerMemoryUsageBytes:
    case F::kContainerMemoryMaxUsageBytes:
    case F::kContainerMemoryWorkingSetBytes:
    case F::kContainerMemoryRss:
    case F::kContainerMemoryCache:
    case F::kContainerMemoryMappedFile:
    case F::kContainerMemorySwap:
    case F::kContainerMemoryKernelUsage:
    case F::kContainerMemoryTotalActiveFileBytes:
    case F::kContainerMemoryTotalInactiveFileBytes:
    case F::kContainerMemoryFileDirtyBytes:
    case F::kContainerMemoryFileWritebackBytes:
    case F::kContainerMemoryFailcnt:
    case F::kContainerMemoryFailuresTotal:
    case F::kContainerMemoryPgscanTotal:
    case F::kContainerMemoryPgstealTotal:
    case F::kContainerMemoryWorkingsetRefaultAnonTotal:
    case F::kContainerMemoryWorkingsetRefaultFileTotal:
    case F::kContainerMemoryEventsHighTotal:
    case F::kContainerMemoryEventsMaxTotal:
    case F::kStatletMemoryEventsTotal:
    case F::kStatletMemoryReclaimScannedPagesTotal:
    case F::kStatletMemoryReclaimStolenPagesTotal:
    case F::kStatletMemorySockBytes:
    case F::kStatletMemoryVmallocBytes:
    case F::kStatletMemoryPercpuBytes:
    case F::kStatletMemoryZswapBytes:
    case F::kStatletMemoryZswappedBytes: return G::kMemory;
    case F::kContainerOomEventsTotal: return G::kOomEvent;
    case F::kContainerProcesses:
    case F::kContainerThreads:
    case F::kContainerThreadsMax:
    case F::kContainerFileDescriptors:
    case F::kContainerSockets:
    case F::kContainerUlimitsSoft:
    case F::kStatletPidsCurrent:
    case F::kStatletPidsMax:
    case F::kStatletPidsLimitHitsTotal: return G::kProcess;
    case F::kContainerFsReadsBytesTotal:
    case F::kContainerFsWritesBytesTotal:
    case F::kContainerFsReadsTotal:
    case F::kContainerFsWritesTotal:
    case F::kContainerBlkioDeviceUsageTotal:
    case F::kContainerFsIoCostUsageSecondsTotal:
    case F::kContainerFsIoCostWaitSecondsTotal:
    case F::kContainerFsIoCostIndebtSecondsTotal:
    case F::kContainerFsIoCostIndelaySecondsTotal: return G::kDiskIO;
    case F::kContainerFsUsageBytes:
    case F::kContainerFsLimitBytes:
    case F::kContainerFsInodesFree:
    case F::kContainerFsInodesTotal: return G::kDisk;
    case F::kContainerHugetlbUsageBytes:
    case F::kContainerHugetlbMaxUsageBytes:
    case F::kContainerHugetlbFailcnt: return G::kHugetlb;
    case F::kContainerNetworkReceiveBytesTotal:
    case F::kContainerNetworkReceivePacketsTotal:
    case F::kContainerNetworkReceiveErrorsTotal:
    case F::kContainerNetworkReceivePacketsDroppedTotal:
    case F::kContainerNetworkTransmitBytesTotal:
    case F::kContainerNetworkTransmitPacketsTotal:
    case F::kContainerNetworkTransmitErrorsTotal:
    case F::kContainerNetworkTransmitPacketsDroppedTotal:
    case F::kStatletPodNetworkBytesTotal:
    case F::kStatletPodNetworkPacketsTotal:
    case F::kStatletPodNetworkErrorsTotal:
    case F::kStatletPodNetworkDroppedPacketsTotal: return G::kNetwork;
    case F::kContainerPressureCpuWaitingSecondsTotal:
    case F::kContainerPressureCpuStalledSecondsTotal:
    case F::kContainerPressureMemoryWaitingSecondsTotal:
    case F::kContainerPressureMemoryStalledSecondsTotal:
    case F::kContainerPressureIoWaitingSecondsTotal:
    case F::kContainerPressureIoStalledSecondsTotal: return G::kPressure;
    case F::kStatletPressureStallRatio: return G::kPsiAverages;
    case F::kStatletMemoryMinBytes:
    case F::kStatletMemoryLowBytes:
    case F::kStatletMemoryHighBytes:
    case F::kStatletContainerMemoryQosResourceBytes:
    case F::kStatletContainerMemoryQosRequestBytes:
    case F::kStatletContainerMemoryQosExpectedBytes:
    case F::kStatletContainerMemoryQosApplied:
    case F::kStatletContainerMemoryQosZone:
    case F::kStatletContainerMemoryHighStalled:
    case F::kStatletContainerMemoryHighStalledSinceSeconds:
    case F::kStatletMemoryProtectionCapped:
    case F::kStatletNodeMemoryQosInfo:
    case F::kStatletNodeMemoryQosMinBytes:
    case F::kStatletNodeMemoryQosLowBytes:
    case F::kStatletNodeMemoryQosProtectedRatio:
    case F::kStatletNodeMemoryQosLivelockRisk: return G::kMemoryQos;
    case F::kStatletCpuRunqueueLatencySeconds:
    case F::kStatletTcpRetransmitsTotal:
    case F::kStatletTcpDropsTotal:
    case F::kStatletPageFaultsTotal:
    case F::kStatletOomKillsTotal:
    case F::kStatletContainerNetworkReceiveBytesTotal:
    case F::kStatletContainerNetworkReceivePacketsTotal:
    case F::kStatletContainerNetworkTransmitBytesTotal:
    case F::kStatletContainerNetworkTransmitPacketsTotal:
    case F::kStatletOomKillTimestampSeconds: return G::kEbpf;
    case F::kCount: break;
  }
  return G::kAlways;
}

MetricSelection::MetricSelection() {
  families_.set();
  groups_.set();
}

Status MetricSelection::CheckName(const std::string& name) {
  if (FindGroup(name) || IsUnservedCadvisor(name) || FindFamily(name) || IsExtraFamily(name)) return Status::Ok();
  std::string groups;
  for (const GroupInfo& g : kGroups) groups += (groups.empty() ? "" : ", ") + std::string(g.name);
  return InvalidArgument("unknown group or family \"" + name + "\" (groups: " + groups + "; or a family name)");
}

Status MetricSelection::CheckLabel(const std::string& name) {
  for (std::string_view l : kLabels) {
    if (l == name) return Status::Ok();
  }
  return InvalidArgument("cannot drop label \"" + name + "\": only id and image (the others tell series apart)");
}

StatusOr<MetricSelection> MetricSelection::Make(const std::vector<std::string>& enable,
                                                const std::vector<std::string>& disable,
                                                const std::vector<std::string>& drop_labels) {
  MetricSelection s;
  for (const auto* list : {&enable, &disable}) {
    for (const std::string& n : *list) {
      if (Status st = CheckName(n); !st.ok()) return st;
    }
  }
  for (const std::string& l : drop_labels) {
    if (Status st = CheckLabel(l); !st.ok()) return st;
    for (size_t k = 0; k < std::size(kLabels); ++k) {
      if (kLabels[k] == l) s.dropped_labels_ |= static_cast<uint8_t>(1u << k);
    }
  }
  auto set = [&](const std::string& n, bool on) {
    if (const GroupInfo* g = FindGroup(n)) {
      s.groups_.set(static_cast<size_t>(g->group), on);
      for (const MetricFamily& f : AllMetricFamilies()) {
        if (GroupOf(f.id) == g->group) s.families_.set(static_cast<size_t>(f.id), on);
      }
    } else if (const MetricFamily* f = FindFamily(n)) {
      s.families_.set(static_cast<size_t>(f->id), on);
    } else if (IsExtraFamily(n)) {
      (on ? s.extra_on_ : s.extra_off_).push_back(n);
    }
  };
  if (!enable.empty()) {
    // Only what the list names; the families every cAdvisor serves stay (name them in
    // --metrics.disable to leave them out).
    s.groups_.reset();
    s.groups_.set(static_cast<size_t>(G::kAlways));
    // cAdvisor's machine collector serves its families whatever --enable_metrics says
    // (prometheus_machine.go): only cpu_topology is one of its kinds.
    s.groups_.set(static_cast<size_t>(G::kMachine));
    for (const MetricFamily& f : AllMetricFamilies())
      s.families_.set(static_cast<size_t>(f.id), GroupOf(f.id) == G::kAlways);
    s.extra_listed_only_ = true;
    for (const std::string& n : enable) set(n, true);
  }
  for (const std::string& n : disable) set(n, false);
  return s;
}

bool MetricSelection::ServesExtra(std::string_view name) const {
  if (std::find(extra_off_.begin(), extra_off_.end(), name) != extra_off_.end()) return false;
  if (IsPullFamily(name)) {
    if (groups_[static_cast<size_t>(G::kPulls)]) return true;
    return extra_listed_only_ && std::find(extra_on_.begin(), extra_on_.end(), name) != extra_on_.end();
  }
  if (name == kContainerOomKillsFamily) {
    if (groups_[static_cast<size_t>(G::kOomEvent)]) return true;
    return extra_listed_only_ && std::find(extra_on_.begin(), extra_on_.end(), name) != extra_on_.end();
  }
  if (const MachineFamily* m = FindMachineFamily(name)) {
    if (groups_[static_cast<size_t>(m->group)]) return true;
    return extra_listed_only_ && std::find(extra_on_.begin(), extra_on_.end(), name) != extra_on_.end();
  }
  return true;
}

bool MetricSelection::ServesGroup(MetricGroup g) const {
  if (g == G::kMachine || g == G::kCpuTopology) {
    for (const MachineFamily& m : MachineFamilies()) {
      if (m.group == g && ServesExtra(m.name)) return true;
    }
    return false;
  }
  if (g == G::kPercpu || g == G::kPulls) {
    if (g == G::kPulls && std::any_of(extra_on_.begin(), extra_on_.end(), IsPullFamily)) return true;
    return groups_[static_cast<size_t>(g)];
  }
  for (const MetricFamily& f : AllMetricFamilies()) {
    if (GroupOf(f.id) == g && Serves(f.id)) return true;
  }
  return false;
}

bool DropsIdOf(const MetricSelection& s, const Identity& id) {
  if (!s.Drops(CgroupLabel::kId)) return false;
  switch (id.kind) {
    case CgroupKind::kContainer: return !id.container_id.empty() || (id.meta && !id.meta->container_id.empty());
    case CgroupKind::kPod: return id.meta && !id.meta->pod_name.empty();
    default: return false;
  }
}

ReadNeeds ReadNeedsOf(const MetricSelection& s) {
  ReadNeeds n;
  n.pressure_files = s.ServesGroup(G::kPressure) || s.ServesGroup(G::kPsiAverages) || s.ServesGroup(G::kMemoryQos);
  n.io_files = s.ServesGroup(G::kDiskIO);
  n.hugetlb_files = s.ServesGroup(G::kHugetlb);
  n.pids_files = s.Serves(FamilyId::kContainerThreads) || s.Serves(FamilyId::kContainerThreadsMax) ||
                 s.Serves(FamilyId::kStatletPidsCurrent) || s.Serves(FamilyId::kStatletPidsMax) ||
                 s.Serves(FamilyId::kStatletPidsLimitHitsTotal);
  n.process_fds = s.Serves(FamilyId::kContainerFileDescriptors) || s.Serves(FamilyId::kContainerSockets) ||
                  s.Serves(FamilyId::kContainerUlimitsSoft);
  n.network = s.ServesGroup(G::kNetwork);
  n.machine_topology = s.ServesGroup(G::kCpuTopology);
  n.machine = n.machine_topology || s.ServesGroup(G::kMachine);
  return n;
}

}  // namespace statlet::metrics
