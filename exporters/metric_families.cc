#include "exporters/metric_families.h"

#include <array>

namespace statlet {
namespace {

using L = std::string_view;
constexpr L kNoLabels[] = {""};  // never read: spans below take zero elements of it
constexpr L kCpu[] = {"cpu"};
constexpr L kFailure[] = {"failure_type", "scope"};
constexpr L kDevice[] = {"device"};
constexpr L kBlkioDevice[] = {"device", "major", "minor", "operation"};
constexpr L kUlimit[] = {"ulimit"};
constexpr L kPageSize[] = {"pagesize"};
constexpr L kInterface[] = {"interface"};
constexpr L kEventScope[] = {"event", "scope"};
constexpr L kReclaimer[] = {"reclaimer"};
constexpr L kRefault[] = {"type"};
constexpr L kPressure[] = {"resource", "kind", "window"};
constexpr L kPodNet[] = {"direction", "interface"};
constexpr L kBuild[] = {"revision", "version"};
constexpr L kReadError[] = {"file", "reason"};
constexpr L kDropped[] = {"kind"};
constexpr L kLe[] = {"le"};
constexpr L kDropReason[] = {"reason"};
constexpr L kFaultType[] = {"type"};
constexpr L kOomEvent[] = {"comm", "constraint", "pid"};
constexpr L kProbe[] = {"probe"};
constexpr L kEndpoint[] = {"endpoint"};
constexpr L kRuntimeInfo[] = {"endpoint", "runtime", "version"};

constexpr std::span<const L> None() { return std::span<const L>(kNoLabels, 0); }

constexpr auto C = MetricType::kCounter;
constexpr auto G = MetricType::kGauge;
constexpr auto H = MetricType::kHistogram;
constexpr auto Cg = MetricScope::kCgroup;
constexpr auto Pr = MetricScope::kProcess;
constexpr auto Ev = MetricScope::kEvent;

// Order follows FamilyId; the static_assert below and the unit test keep them aligned.
constexpr MetricFamily kFamilies[] = {
    {FamilyId::kContainerLastSeen, "container_last_seen", G, Cg, "seconds",
     "Last time the cgroup was seen by the exporter, in seconds since the epoch.", None(), true,
     "collection time", "collection time"},
    {FamilyId::kContainerStartTimeSeconds, "container_start_time_seconds", G, Cg, "seconds",
     "Start time of the container (runtime start, else cgroup creation), seconds since the epoch.",
     None(), true, "CRI started_at, cgroup dir ctime", "CRI started_at, cgroup dir ctime"},
    {FamilyId::kContainerCpuUsageSecondsTotal, "container_cpu_usage_seconds_total", C, Cg, "seconds",
     "Cumulative CPU time consumed, in seconds (cpu=\"total\", or one series per CPU).", kCpu, true,
     "cpu.stat usage_usec", "cpuacct.usage, cpuacct.usage_percpu"},
    {FamilyId::kContainerCpuUserSecondsTotal, "container_cpu_user_seconds_total", C, Cg, "seconds",
     "Cumulative user-mode CPU time consumed, in seconds.", None(), true, "cpu.stat user_usec",
     "cpuacct.stat user"},
    {FamilyId::kContainerCpuSystemSecondsTotal, "container_cpu_system_seconds_total", C, Cg, "seconds",
     "Cumulative kernel-mode CPU time consumed, in seconds.", None(), true, "cpu.stat system_usec",
     "cpuacct.stat system"},
    {FamilyId::kContainerCpuCfsPeriodsTotal, "container_cpu_cfs_periods_total", C, Cg, "",
     "Number of elapsed CFS enforcement periods (only with a CPU quota).", None(), true,
     "cpu.stat nr_periods", "cpu.stat nr_periods"},
    {FamilyId::kContainerCpuCfsThrottledPeriodsTotal, "container_cpu_cfs_throttled_periods_total", C, Cg, "",
     "Number of CFS periods in which the cgroup was throttled (only with a CPU quota).", None(), true,
     "cpu.stat nr_throttled", "cpu.stat nr_throttled"},
    {FamilyId::kContainerCpuCfsThrottledSecondsTotal, "container_cpu_cfs_throttled_seconds_total", C, Cg,
     "seconds", "Total time the cgroup was throttled, in seconds (only with a CPU quota).", None(), true,
     "cpu.stat throttled_usec", "cpu.stat throttled_time"},
    {FamilyId::kContainerSpecCpuPeriod, "container_spec_cpu_period", G, Cg, "",
     "CFS period of the cgroup, in microseconds.", None(), true, "cpu.max (2nd field)",
     "cpu.cfs_period_us"},
    {FamilyId::kContainerSpecCpuQuota, "container_spec_cpu_quota", G, Cg, "",
     "CFS quota of the cgroup, in microseconds per period; absent when unlimited.", None(), true,
     "cpu.max (1st field)", "cpu.cfs_quota_us"},
    {FamilyId::kContainerSpecCpuShares, "container_spec_cpu_shares", G, Cg, "",
     "CPU shares of the cgroup (cgroup v2 weight converted to shares).", None(), true,
     "cpu.weight (converted)", "cpu.shares"},
    {FamilyId::kContainerSpecMemoryLimitBytes, "container_spec_memory_limit_bytes", G, Cg, "bytes",
     "Memory limit of the cgroup, in bytes; 0 when unlimited.", None(), true, "memory.max",
     "memory.limit_in_bytes"},
    {FamilyId::kContainerSpecMemorySwapLimitBytes, "container_spec_memory_swap_limit_bytes", G, Cg, "bytes",
     "Swap limit of the cgroup, in bytes; 0 when unlimited.", None(), true, "memory.swap.max",
     "memory.memsw.limit_in_bytes"},
    {FamilyId::kContainerSpecMemoryReservationLimitBytes, "container_spec_memory_reservation_limit_bytes", G,
     Cg, "bytes", "Memory reservation (soft limit) of the cgroup, in bytes; 0 when unlimited.", None(), true,
     "memory.min", "memory.soft_limit_in_bytes"},
    {FamilyId::kContainerMemoryUsageBytes, "container_memory_usage_bytes", G, Cg, "bytes",
     "Current memory usage in bytes, page cache included.", None(), true, "memory.current",
     "memory.usage_in_bytes"},
    {FamilyId::kContainerMemoryMaxUsageBytes, "container_memory_max_usage_bytes", G, Cg, "bytes",
     "Maximum memory usage recorded, in bytes.", None(), true, "memory.peak", "memory.max_usage_in_bytes"},
    {FamilyId::kContainerMemoryWorkingSetBytes, "container_memory_working_set_bytes", G, Cg, "bytes",
     "Current working set in bytes: usage minus inactive file pages.", None(), true,
     "memory.current - memory.stat inactive_file", "memory.usage_in_bytes - memory.stat total_inactive_file"},
    {FamilyId::kContainerMemoryRss, "container_memory_rss", G, Cg, "bytes",
     "Anonymous and swap cache memory, in bytes.", None(), true, "memory.stat anon", "memory.stat total_rss"},
    {FamilyId::kContainerMemoryCache, "container_memory_cache", G, Cg, "bytes", "Page cache memory, in bytes.",
     None(), true, "memory.stat file", "memory.stat total_cache"},
    {FamilyId::kContainerMemoryMappedFile, "container_memory_mapped_file", G, Cg, "bytes",
     "Memory-mapped file pages, in bytes.", None(), true, "memory.stat file_mapped",
     "memory.stat total_mapped_file"},
    {FamilyId::kContainerMemorySwap, "container_memory_swap", G, Cg, "bytes", "Swap usage, in bytes.", None(),
     true, "memory.swap.current", "memory.stat total_swap"},
    {FamilyId::kContainerMemoryFailcnt, "container_memory_failcnt", C, Cg, "",
     "Number of times memory usage hit the limit.", None(), true, "memory.events max",
     "memory.failcnt"},
    {FamilyId::kContainerMemoryFailuresTotal, "container_memory_failures_total", C, Cg, "",
     "Cumulative page faults (failure_type pgfault/pgmajfault; scope container/hierarchy).", kFailure, true,
     "memory.stat pgfault, pgmajfault", "memory.stat pgfault/total_pgfault, pgmajfault/total_pgmajfault"},
    {FamilyId::kContainerOomEventsTotal, "container_oom_events_total", C, Cg, "",
     "Count of out-of-memory kills in the cgroup.", None(), true, "memory.events.local oom_kill",
     "memory.oom_control oom_kill"},
    {FamilyId::kContainerProcesses, "container_processes", G, Cg, "", "Number of processes in the cgroup.",
     None(), true, "cgroup.procs (lines)", "cgroup.procs (lines)"},
    {FamilyId::kContainerThreads, "container_threads", G, Cg, "", "Number of threads in the cgroup.", None(),
     true, "cgroup.threads (lines), pids.current", "tasks (lines), pids.current"},
    {FamilyId::kContainerThreadsMax, "container_threads_max", G, Cg, "",
     "Maximum number of threads allowed in the cgroup; 0 when unlimited.", None(), true, "pids.max",
     "pids.max"},
    {FamilyId::kContainerFsReadsBytesTotal, "container_fs_reads_bytes_total", C, Cg, "bytes",
     "Cumulative bytes read from block devices.", kDevice, true, "io.stat rbytes",
     "blkio.throttle.io_service_bytes Read"},
    {FamilyId::kContainerFsWritesBytesTotal, "container_fs_writes_bytes_total", C, Cg, "bytes",
     "Cumulative bytes written to block devices.", kDevice, true, "io.stat wbytes",
     "blkio.throttle.io_service_bytes Write"},
    {FamilyId::kContainerFsReadsTotal, "container_fs_reads_total", C, Cg, "",
     "Cumulative read operations completed on block devices.", kDevice, true, "io.stat rios",
     "blkio.throttle.io_serviced Read"},
    {FamilyId::kContainerFsWritesTotal, "container_fs_writes_total", C, Cg, "",
     "Cumulative write operations completed on block devices.", kDevice, true, "io.stat wios",
     "blkio.throttle.io_serviced Write"},
    {FamilyId::kContainerBlkioDeviceUsageTotal, "container_blkio_device_usage_total", C, Cg, "",
     "Cumulative bytes moved to and from block devices, by operation (Read/Write).", kBlkioDevice, true,
     "io.stat rbytes, wbytes", "blkio.throttle.io_service_bytes Read, Write"},
    {FamilyId::kContainerFsUsageBytes, "container_fs_usage_bytes", G, Cg, "bytes",
     "Bytes used by the container's writable layer on its filesystem.", kDevice, true,
     "CRI ListContainerStats writable_layer.used_bytes", "CRI ListContainerStats writable_layer.used_bytes"},
    {FamilyId::kContainerFsLimitBytes, "container_fs_limit_bytes", G, Cg, "bytes",
     "Bytes the container can consume on the filesystem of its writable layer (its capacity).", kDevice, true,
     "statvfs(writable layer mountpoint)", "statvfs(writable layer mountpoint)"},
    {FamilyId::kContainerFsInodesFree, "container_fs_inodes_free", G, Cg, "",
     "Free inodes on the filesystem of the container's writable layer.", kDevice, true,
     "statvfs(writable layer mountpoint)", "statvfs(writable layer mountpoint)"},
    {FamilyId::kContainerFsInodesTotal, "container_fs_inodes_total", G, Cg, "",
     "Inodes of the filesystem of the container's writable layer.", kDevice, true,
     "statvfs(writable layer mountpoint)", "statvfs(writable layer mountpoint)"},
    {FamilyId::kContainerFileDescriptors, "container_file_descriptors", G, Cg, "",
     "Open file descriptors of all processes of the container.", None(), true, "/proc/<pid>/fd (entries)",
     "/proc/<pid>/fd (entries)"},
    {FamilyId::kContainerSockets, "container_sockets", G, Cg, "",
     "Open sockets of all processes of the container.", None(), true, "/proc/<pid>/fd (socket links)",
     "/proc/<pid>/fd (socket links)"},
    {FamilyId::kContainerUlimitsSoft, "container_ulimits_soft", G, Cg, "",
     "Soft ulimit of the container's first process (ulimit=\"max_open_files\"); -1 when unlimited.", kUlimit,
     true, "prlimit(RLIMIT_NOFILE), /proc/<pid>/limits", "prlimit(RLIMIT_NOFILE), /proc/<pid>/limits"},
    {FamilyId::kContainerHugetlbUsageBytes, "container_hugetlb_usage_bytes", G, Cg, "bytes",
     "Current huge page usage in bytes, by page size.", kPageSize, true, "hugetlb.<size>.current",
     "hugetlb.<size>.usage_in_bytes"},
    {FamilyId::kContainerHugetlbMaxUsageBytes, "container_hugetlb_max_usage_bytes", G, Cg, "bytes",
     "Maximum huge page usage recorded in bytes, by page size.", kPageSize, true, "-",
     "hugetlb.<size>.max_usage_in_bytes"},
    {FamilyId::kContainerNetworkReceiveBytesTotal, "container_network_receive_bytes_total", C, Cg, "bytes",
     "Cumulative bytes received.", kInterface, true, "/proc/<pid>/net/dev", "/proc/<pid>/net/dev"},
    {FamilyId::kContainerNetworkReceivePacketsTotal, "container_network_receive_packets_total", C, Cg, "",
     "Cumulative packets received.", kInterface, true, "/proc/<pid>/net/dev", "/proc/<pid>/net/dev"},
    {FamilyId::kContainerNetworkReceiveErrorsTotal, "container_network_receive_errors_total", C, Cg, "",
     "Cumulative errors while receiving.", kInterface, true, "/proc/<pid>/net/dev", "/proc/<pid>/net/dev"},
    {FamilyId::kContainerNetworkReceivePacketsDroppedTotal, "container_network_receive_packets_dropped_total",
     C, Cg, "", "Cumulative packets dropped while receiving.", kInterface, true, "/proc/<pid>/net/dev",
     "/proc/<pid>/net/dev"},
    {FamilyId::kContainerNetworkTransmitBytesTotal, "container_network_transmit_bytes_total", C, Cg, "bytes",
     "Cumulative bytes transmitted.", kInterface, true, "/proc/<pid>/net/dev", "/proc/<pid>/net/dev"},
    {FamilyId::kContainerNetworkTransmitPacketsTotal, "container_network_transmit_packets_total", C, Cg, "",
     "Cumulative packets transmitted.", kInterface, true, "/proc/<pid>/net/dev", "/proc/<pid>/net/dev"},
    {FamilyId::kContainerNetworkTransmitErrorsTotal, "container_network_transmit_errors_total", C, Cg, "",
     "Cumulative errors while transmitting.", kInterface, true, "/proc/<pid>/net/dev", "/proc/<pid>/net/dev"},
    {FamilyId::kContainerNetworkTransmitPacketsDroppedTotal, "container_network_transmit_packets_dropped_total",
     C, Cg, "", "Cumulative packets dropped while transmitting.", kInterface, true, "/proc/<pid>/net/dev",
     "/proc/<pid>/net/dev"},
    {FamilyId::kContainerPressureCpuWaitingSecondsTotal, "container_pressure_cpu_waiting_seconds_total", C, Cg,
     "seconds", "Total time some tasks of the cgroup waited for a CPU, in seconds.", None(), true,
     "cpu.pressure some total", "unified cpu.pressure some total (hybrid hosts)"},
    {FamilyId::kContainerPressureCpuStalledSecondsTotal, "container_pressure_cpu_stalled_seconds_total", C, Cg,
     "seconds", "Total time no task of the cgroup could run for lack of CPU, in seconds.", None(), true,
     "cpu.pressure full total", "unified cpu.pressure full total (hybrid hosts)"},
    {FamilyId::kContainerPressureMemoryWaitingSecondsTotal, "container_pressure_memory_waiting_seconds_total",
     C, Cg, "seconds", "Total time some tasks of the cgroup waited for memory, in seconds.", None(), true,
     "memory.pressure some total", "unified memory.pressure some total (hybrid hosts)"},
    {FamilyId::kContainerPressureMemoryStalledSecondsTotal, "container_pressure_memory_stalled_seconds_total",
     C, Cg, "seconds", "Total time no task of the cgroup could run for lack of memory, in seconds.", None(),
     true, "memory.pressure full total", "unified memory.pressure full total (hybrid hosts)"},
    {FamilyId::kContainerPressureIoWaitingSecondsTotal, "container_pressure_io_waiting_seconds_total", C, Cg,
     "seconds", "Total time some tasks of the cgroup waited for IO, in seconds.", None(), true,
     "io.pressure some total", "unified io.pressure some total (hybrid hosts)"},
    {FamilyId::kContainerPressureIoStalledSecondsTotal, "container_pressure_io_stalled_seconds_total", C, Cg,
     "seconds", "Total time no task of the cgroup could run for lack of IO, in seconds.", None(), true,
     "io.pressure full total", "unified io.pressure full total (hybrid hosts)"},
    {FamilyId::kStatletMemoryEventsTotal, "statlet_memory_events_total", C, Cg, "",
     "Memory events of the cgroup (event low/high/max/oom/oom_kill/oom_group_kill; scope hierarchy/local).",
     kEventScope, false, "memory.events, memory.events.local", "memory.oom_control (oom_kill only)"},
    {FamilyId::kStatletMemoryMinBytes, "statlet_memory_min_bytes", G, Cg, "bytes",
     "Hard memory protection of the cgroup, in bytes.", None(), false, "memory.min", "-"},
    {FamilyId::kStatletMemoryLowBytes, "statlet_memory_low_bytes", G, Cg, "bytes",
     "Best-effort memory protection of the cgroup, in bytes.", None(), false, "memory.low", "-"},
    {FamilyId::kStatletMemoryHighBytes, "statlet_memory_high_bytes", G, Cg, "bytes",
     "Memory throttle limit of the cgroup, in bytes; +Inf when unlimited.", None(), false, "memory.high", "-"},
    {FamilyId::kStatletMemoryReclaimScannedPagesTotal, "statlet_memory_reclaim_scanned_pages_total", C, Cg,
     "pages", "Pages scanned by reclaim, by reclaimer (direct/kswapd).", kReclaimer, false,
     "memory.stat pgscan_direct, pgscan_kswapd", "-"},
    {FamilyId::kStatletMemoryReclaimStolenPagesTotal, "statlet_memory_reclaim_stolen_pages_total", C, Cg,
     "pages", "Pages reclaimed, by reclaimer (direct/kswapd).", kReclaimer, false,
     "memory.stat pgsteal_direct, pgsteal_kswapd", "-"},
    {FamilyId::kStatletMemoryWorkingsetRefaultsTotal, "statlet_memory_workingset_refaults_total", C, Cg, "",
     "Refaults of previously evicted pages, by type (anon/file).", kRefault, false,
     "memory.stat workingset_refault_anon, workingset_refault_file", "-"},
    {FamilyId::kStatletPressureStallRatio, "statlet_pressure_stall_ratio", G, Cg, "ratio",
     "PSI running average of stalled time (resource cpu/memory/io; kind some/full; window 10s/60s/300s).",
     kPressure, false, "cpu.pressure, memory.pressure, io.pressure avg10/avg60/avg300",
     "unified *.pressure (hybrid hosts)"},
    {FamilyId::kStatletPidsCurrent, "statlet_pids_current", G, Cg, "", "Number of tasks charged to the cgroup.",
     None(), false, "pids.current", "pids.current"},
    {FamilyId::kStatletPidsMax, "statlet_pids_max", G, Cg, "",
     "Task limit of the cgroup; +Inf when unlimited.", None(), false, "pids.max", "pids.max"},
    {FamilyId::kStatletPidsLimitHitsTotal, "statlet_pids_limit_hits_total", C, Cg, "",
     "Forks refused because the cgroup was at pids.max.", None(), false, "pids.events max", "pids.events max"},
    {FamilyId::kStatletPodNetworkBytesTotal, "statlet_pod_network_bytes_total", C, Cg, "bytes",
     "Bytes through each interface of the pod's network namespace (direction receive/transmit).", kPodNet,
     false, "/proc/<pid>/net/dev", "/proc/<pid>/net/dev"},
    {FamilyId::kStatletPodNetworkPacketsTotal, "statlet_pod_network_packets_total", C, Cg, "",
     "Packets through each interface of the pod's network namespace.", kPodNet, false, "/proc/<pid>/net/dev",
     "/proc/<pid>/net/dev"},
    {FamilyId::kStatletPodNetworkErrorsTotal, "statlet_pod_network_errors_total", C, Cg, "",
     "Errors on each interface of the pod's network namespace.", kPodNet, false, "/proc/<pid>/net/dev",
     "/proc/<pid>/net/dev"},
    {FamilyId::kStatletPodNetworkDroppedPacketsTotal, "statlet_pod_network_dropped_packets_total", C, Cg, "",
     "Packets dropped on each interface of the pod's network namespace.", kPodNet, false,
     "/proc/<pid>/net/dev", "/proc/<pid>/net/dev"},
    {FamilyId::kStatletCpuRunqueueLatencySeconds, "statlet_cpu_runqueue_latency_seconds", H, Cg, "seconds",
     "Time the cgroup's tasks waited on a run queue before running (log2 buckets from 2 microseconds; "
     "eBPF runqlat probe).",
     kLe, false, "eBPF tp_btf/sched_switch (runqlat)", "eBPF tp_btf/sched_switch (runqlat)"},
    {FamilyId::kStatletTcpRetransmitsTotal, "statlet_tcp_retransmits_total", C, Cg, "",
     "TCP segments retransmitted by the cgroup's sockets (eBPF tcp probe).", None(), false,
     "eBPF tp_btf/tcp_retransmit_skb", "eBPF tp_btf/tcp_retransmit_skb"},
    {FamilyId::kStatletTcpDropsTotal, "statlet_tcp_drops_total", C, Cg, "",
     "Packets of the cgroup's TCP sockets the kernel dropped, by its drop reason (eBPF tcp probe).", kDropReason,
     false, "eBPF tp_btf/kfree_skb", "eBPF tp_btf/kfree_skb"},
    {FamilyId::kStatletPageFaultsTotal, "statlet_page_faults_total", C, Cg, "",
     "Page faults of the cgroup's tasks, by type (minor/major) (eBPF faults probe).", kFaultType, false,
     "eBPF tp_btf/sched_switch (faults)", "eBPF tp_btf/sched_switch (faults)"},
    {FamilyId::kStatletOomKillsTotal, "statlet_oom_kills_total", C, Cg, "",
     "Processes of the cgroup chosen by the OOM killer (eBPF oom probe).", None(), false,
     "eBPF tp_btf/mark_victim", "eBPF tp_btf/mark_victim"},
    {FamilyId::kStatletOomKillTimestampSeconds, "statlet_oom_kill_timestamp_seconds", G, Ev, "seconds",
     "Time of a recent OOM kill in seconds since the epoch, one series per kill of statlet's bounded recent list, "
     "labelled with the victim's pid, comm and constraint (memcg/global) (eBPF oom probe).",
     kOomEvent, false, "eBPF tp_btf/mark_victim", "eBPF tp_btf/mark_victim"},
    {FamilyId::kStatletBuildInfo, "statlet_build_info", G, Pr, "",
     "A constant 1 labelled with statlet's version and revision.", kBuild, false, "-", "-"},
    {FamilyId::kStatletCollectionDurationSeconds, "statlet_collection_duration_seconds", G, Pr, "seconds",
     "Duration of the collection that produced this snapshot, in seconds.", None(), false, "-", "-"},
    {FamilyId::kStatletCgroupsTracked, "statlet_cgroups_tracked", G, Pr, "",
     "Cgroups tracked by discovery.", None(), false, "-", "-"},
    {FamilyId::kStatletCgroupsReported, "statlet_cgroups_reported", G, Pr, "",
     "Cgroups reported in this snapshot.", None(), false, "-", "-"},
    {FamilyId::kStatletCollectionsTotal, "statlet_collections_total", C, Pr, "",
     "Collections run by the sampler.", None(), false, "-", "-"},
    {FamilyId::kStatletScrapeJoinsTotal, "statlet_scrape_joins_total", C, Pr, "",
     "Requests that joined a collection already in flight instead of starting one.", None(), false, "-", "-"},
    {FamilyId::kStatletSnapshotReusesTotal, "statlet_snapshot_reuses_total", C, Pr, "",
     "Requests served a snapshot younger than the configured max age.", None(), false, "-", "-"},
    {FamilyId::kStatletReadErrorsTotal, "statlet_read_errors_total", C, Pr, "",
     "Failed reads of cgroup and proc files since start, by file and reason.", kReadError, false, "-", "-"},
    {FamilyId::kStatletCardinalityDroppedTotal, "statlet_cardinality_dropped_total", C, Pr, "",
     "Cgroups and interfaces left out by the cardinality cap, summed over collections.", kDropped, false, "-",
     "-"},
    {FamilyId::kStatletBpfProbeUp, "statlet_bpf_probe_up", G, Pr, "",
     "Whether an eBPF probe (cpu, runqlat, faults, oom, tcp) is loaded and attached (1) or not (0).", kProbe, false,
     "-", "-"},
    {FamilyId::kStatletBpfLostEventsTotal, "statlet_bpf_lost_events_total", C, Pr, "",
     "Updates an eBPF probe's kernel side could not record (full map or ring buffer).", kProbe, false, "-", "-"},
    {FamilyId::kStatletRuntimeUp, "statlet_runtime_up", G, Pr, "",
     "Whether the node runtime's CRI endpoint answers (1) or not (0).", kEndpoint, false, "-", "-"},
    {FamilyId::kStatletRuntimeInfo, "statlet_runtime_info", G, Pr, "",
     "A constant 1 labelled with the name and version the node runtime reports, while it answers.", kRuntimeInfo,
     false, "-", "-"},
};
static_assert(std::size(kFamilies) == kFamilyCount, "one table row per FamilyId");

constexpr bool RowsInOrder() {
  for (size_t i = 0; i < std::size(kFamilies); ++i) {
    if (static_cast<size_t>(kFamilies[i].id) != i) return false;
  }
  return true;
}
static_assert(RowsInOrder(), "table rows must follow FamilyId order");

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::span<const MetricFamily> AllMetricFamilies() { return kFamilies; }

const MetricFamily& Family(FamilyId id) { return kFamilies[static_cast<size_t>(id)]; }

const MetricFamily* FindFamily(std::string_view name) {
  for (const auto& f : kFamilies) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string_view OpenMetricsFamilyName(const MetricFamily& f) {
  if (f.type == MetricType::kCounter && EndsWith(f.name, "_total")) return f.name.substr(0, f.name.size() - 6);
  return f.name;
}

std::string_view OpenMetricsUnit(const MetricFamily& f) {
  if (f.unit.empty()) return {};
  std::string_view family = OpenMetricsFamilyName(f);
  if (family.size() > f.unit.size() && EndsWith(family, f.unit) && family[family.size() - f.unit.size() - 1] == '_') {
    return f.unit;
  }
  return {};
}

std::string_view OpenMetricsType(const MetricFamily& f) {
  if (f.type == MetricType::kGauge) return "gauge";
  if (f.type == MetricType::kHistogram) return "histogram";
  return EndsWith(f.name, "_total") ? "counter" : "unknown";
}

std::string_view TextType(const MetricFamily& f) {
  switch (f.type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace statlet
