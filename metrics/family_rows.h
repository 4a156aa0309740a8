// The families (metrics/families.h): each one's FamilyId and its row, in the same order, so
// that a family is declared in this one file (its value too, when that is a snapshot field;
// a rule otherwise, in metrics/snapshot_samples_visit.h). A header so that a row's value
// accessor is known where the value path is compiled: the encoder's loop over a family
// calls it directly.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <type_traits>

#include "metrics/families.h"

namespace statlet {

// One id per family, in the rows' order (metrics/family_table.cc checks it).
enum class FamilyId : uint16_t {
  // cAdvisor-compatible, per cgroup
  kContainerLastSeen,
  kContainerCreationTimeSeconds,
  kContainerStartTimeSeconds,
  kContainerCpuUsageSecondsTotal,
  kContainerCpuUserSecondsTotal,
  kContainerCpuSystemSecondsTotal,
  kContainerCpuCfsPeriodsTotal,
  kContainerCpuCfsThrottledPeriodsTotal,
  kContainerCpuCfsThrottledSecondsTotal,
  kContainerCpuCfsBurstPeriodsTotal,
  kContainerCpuCfsBurstSecondsTotal,
  kContainerSpecCpuPeriod,
  kContainerSpecCpuQuota,
  kContainerSpecCpuShares,
  kContainerSpecMemoryLimitBytes,
  kContainerSpecMemorySwapLimitBytes,
  kContainerSpecMemoryReservationLimitBytes,
  kContainerMemoryUsageBytes,
  kContainerMemoryMaxUsageBytes,
  kContainerMemoryWorkingSetBytes,
  kContainerMemoryRss,
  kContainerMemoryCache,
  kContainerMemoryMappedFile,
  kContainerMemorySwap,
  kContainerMemoryKernelUsage,
  kContainerMemoryTotalActiveFileBytes,
  kContainerMemoryTotalInactiveFileBytes,
  kContainerMemoryFileDirtyBytes,
  kContainerMemoryFileWritebackBytes,
  kContainerMemoryFailcnt,
  kContainerMemoryFailuresTotal,
  kContainerMemoryPgscanTotal,
  kContainerMemoryPgstealTotal,
  kContainerMemoryWorkingsetRefaultAnonTotal,
  kContainerMemoryWorkingsetRefaultFileTotal,
  kContainerMemoryEventsHighTotal,
  kContainerMemoryEventsMaxTotal,
  kContainerOomEventsTotal,
  kContainerProcesses,
  kContainerThreads,
  kContainerThreadsMax,
  kContainerFsReadsBytesTotal,
  kContainerFsWritesBytesTotal,
  kContainerFsReadsTotal,
  kContainerFsWritesTotal,
  kContainerBlkioDeviceUsageTotal,
  kContainerFsIoCostUsageSecondsTotal,
  kContainerFsIoCostWaitSecondsTotal,
  kContainerFsIoCostIndebtSecondsTotal,
  kContainerFsIoCostIndelaySecondsTotal,
  kContainerFsUsageBytes,
  kContainerFsLimitBytes,
  kContainerFsInodesFree,
  kContainerFsInodesTotal,
  kContainerFileDescriptors,
  kContainerSockets,
  kContainerUlimitsSoft,
  kContainerHugetlbUsageBytes,
  kContainerHugetlbMaxUsageBytes,
  kContainerHugetlbFailcnt,
  kContainerNetworkReceiveBytesTotal,
  kContainerNetworkReceivePacketsTotal,
  kContainerNetworkReceiveErrorsTotal,
  kContainerNetworkReceivePacketsDroppedTotal,
  kContainerNetworkTransmitBytesTotal,
  kContainerNetworkTransmitPacketsTotal,
  kContainerNetworkTransmitErrorsTotal,
  kContainerNetworkTransmitPacketsDroppedTotal,
  kContainerPressureCpuWaitingSecondsTotal,
  kContainerPressureCpuStalledSecondsTotal,
  kContainerPressureMemoryWaitingSecondsTotal,
  kContainerPressureMemoryStalledSecondsTotal,
  kContainerPressureIoWaitingSecondsTotal,
  kContainerPressureIoStalledSecondsTotal,
  // statlet's own, per cgroup
  kStatletMemoryEventsTotal,
  kStatletMemoryMinBytes,
  kStatletMemoryLowBytes,
  kStatletMemoryHighBytes,
  kStatletMemoryReclaimScannedPagesTotal,
  kStatletMemoryReclaimStolenPagesTotal,
  kStatletMemorySockBytes,
  kStatletMemoryVmallocBytes,
  kStatletMemoryPercpuBytes,
  kStatletMemoryZswapBytes,
  kStatletMemoryZswappedBytes,
  kStatletPressureStallRatio,
  kStatletPidsCurrent,
  kStatletPidsMax,
  kStatletPidsLimitHitsTotal,
  kStatletPodNetworkBytesTotal,
  kStatletPodNetworkPacketsTotal,
  kStatletPodNetworkErrorsTotal,
  kStatletPodNetworkDroppedPacketsTotal,
  // statlet's own, per container (expected knobs and requests also per pod, QoS and
  // kubepods cgroup): Memory QoS (KEP-2570) and the memory.high stall detector
  kStatletContainerMemoryQosResourceBytes,
  kStatletContainerMemoryQosRequestBytes,
  kStatletContainerMemoryQosExpectedBytes,
  kStatletContainerMemoryQosApplied,
  kStatletContainerMemoryQosZone,
  kStatletContainerMemoryHighStalled,
  kStatletContainerMemoryHighStalledSinceSeconds,
  // statlet's own, per cgroup: memory.min / memory.low capped by the ancestors
  kStatletMemoryProtectionCapped,
  // statlet's own, on the node's kubepods cgroup: Memory QoS node facts
  kStatletNodeMemoryQosInfo,
  kStatletNodeMemoryQosMinBytes,
  kStatletNodeMemoryQosLowBytes,
  kStatletNodeMemoryQosProtectedRatio,
  kStatletNodeMemoryQosLivelockRisk,
  // statlet's own, per cgroup, from the eBPF probes
  kStatletCpuRunqueueLatencySeconds,
  kStatletTcpRetransmitsTotal,
  kStatletTcpDropsTotal,
  kStatletPageFaultsTotal,
  kStatletOomKillsTotal,
  kStatletContainerNetworkReceiveBytesTotal,
  kStatletContainerNetworkReceivePacketsTotal,
  kStatletContainerNetworkTransmitBytesTotal,
  kStatletContainerNetworkTransmitPacketsTotal,
  // statlet's own, per container that exited within the retention (collector/exit_watcher.h)
  kStatletContainerExitTimeSeconds,
  kStatletContainerLifetimeSeconds,
  // statlet's own, per recent OOM kill (eBPF)
  kStatletOomKillTimestampSeconds,
  kCount,
};

inline constexpr size_t kFamilyCount = static_cast<size_t>(FamilyId::kCount);

}  // namespace statlet

namespace statlet::family_rows {

using L = std::string_view;
inline constexpr L kNoLabels[] = {""};  // never read: spans below take zero elements of it
inline constexpr L kCpu[] = {"cpu"};
inline constexpr L kFailure[] = {"failure_type", "scope"};
inline constexpr L kDevice[] = {"device"};
inline constexpr L kBlkioDevice[] = {"device", "major", "minor", "operation"};
inline constexpr L kUlimit[] = {"ulimit"};
inline constexpr L kPageSize[] = {"pagesize"};
inline constexpr L kInterface[] = {"interface"};
inline constexpr L kEventScope[] = {"event", "scope"};
inline constexpr L kReclaimer[] = {"reclaimer"};
inline constexpr L kPressure[] = {"resource", "kind", "window"};
inline constexpr L kPodNet[] = {"direction", "interface"};
inline constexpr L kLe[] = {"le"};
inline constexpr L kDropReason[] = {"reason"};
inline constexpr L kFaultType[] = {"type"};
inline constexpr L kOomEvent[] = {"comm", "constraint", "pid"};
inline constexpr L kResource[] = {"resource"};
inline constexpr L kKnob[] = {"knob"};
inline constexpr L kZone[] = {"zone"};
inline constexpr L kSource[] = {"source"};
inline constexpr L kMemoryQosInfo[] = {"kubelet_version", "reservation_policy", "rules", "throttling_factor"};

constexpr std::span<const L> None() { return std::span<const L>(kNoLabels, 0); }

// A field of the cgroup's stats as a family's value (FieldValue): Count<&MemoryStats::
// rss_bytes>(), Nanos<&CpuStats::user_ns>().
template <typename T>
struct MemberOf;
template <typename C>
struct MemberOf<Opt<uint64_t> C::*> {
  using Class = C;
};
template <auto kField>
constexpr const Opt<uint64_t>& Get(const CgroupStats& c) {
  using Class = typename MemberOf<decltype(kField)>::Class;
  if constexpr (std::is_same_v<Class, CpuStats>) return c.cpu.*kField;
  else if constexpr (std::is_same_v<Class, MemoryStats>) return c.memory.*kField;
  else if constexpr (std::is_same_v<Class, ProcessStats>) return c.process.*kField;
  else if constexpr (std::is_same_v<Class, BpfCgroupStats>) return c.bpf.*kField;
  else static_assert(std::is_same_v<Class, CpuStats>, "a field of CgroupStats' cpu, memory, process or bpf");
}
template <auto kField>
constexpr FieldValue Count() {
  return {&Get<kField>, FieldValue::Kind::kCount};
}
template <auto kField>
constexpr FieldValue Nanos() {
  return {&Get<kField>, FieldValue::Kind::kNanos};
}
// A field further down (memory.events high): its accessor, a function or captureless lambda.
constexpr FieldValue Count(const Opt<uint64_t>& (*get)(const CgroupStats&)) { return {get, FieldValue::Kind::kCount}; }

inline constexpr auto C = MetricType::kCounter;
inline constexpr auto G = MetricType::kGauge;
inline constexpr auto H = MetricType::kHistogram;
inline constexpr auto Cg = MetricScope::kCgroup;
inline constexpr auto Ev = MetricScope::kEvent;
inline constexpr bool kCri = true;  // MetricFamily::cri for a family of statlet's own

inline constexpr L kNetSource = "/proc/<pid>/net/dev (interfaces not named lo, veth*, docker*, nerdctl*)";
inline constexpr L kWritableLayer = "CRI ListContainerStats writable_layer";
inline constexpr L kStatvfsLayer = "statvfs(writable layer mountpoint)";
inline constexpr L kPsiHybrid = "unified *.pressure (hybrid hosts)";
inline constexpr L kSkbIngress = "eBPF cgroup_skb/ingress (net)";
inline constexpr L kSkbEgress = "eBPF cgroup_skb/egress (net)";
inline constexpr L kCriResources = "CRI ContainerStatus resources.linux (memory_limit_in_bytes, unified)";
inline constexpr L kKepFormula =
    "KEP-2570 rules of the judged kubelet (collector/memory_qos_rules.h) over the request and limit; node "
    "allocatable: kubepods memory.max";
inline constexpr L kRequestSource =
    "CRI ContainerStatus unified memory.min/memory.low, else the API server's pod, else the QoS class";
inline constexpr L kCappedSource = "memory.min, memory.low of the cgroup and of its ancestors";
inline constexpr L kBasisSource = "kubelet version (Node object or flag), kubelet configuration file, flags";
inline constexpr L kZoneSource = "memory.current against memory.min, memory.high, memory.max";
inline constexpr L kStallSource =
    "memory.current, memory.high, memory.pressure full avg10, memory.events high (over time)";

// Order follows FamilyId; static_asserts in metrics/family_table.cc keep them aligned.
inline constexpr MetricFamily kFamilies[] = {
    {FamilyId::kContainerLastSeen, "container_last_seen", G, Cg, "seconds",
     "Last time the cgroup was seen by the exporter, in seconds since the epoch.", None(), true, "", "collection time",
     "collection time"},
    {FamilyId::kContainerCreationTimeSeconds, "container_creation_time_seconds", G, Cg, "seconds",
     "Creation time of the cgroup, in seconds since the epoch.", None(), true,
     "cAdvisor 0.57+ (newer than the kubelet 1.36 vendors)", "cgroup directory ctime at discovery",
     "cgroup directory ctime at discovery"},
    {FamilyId::kContainerStartTimeSeconds, "container_start_time_seconds", G, Cg, "seconds",
     "Start time of the container (runtime start, else cgroup creation), seconds since the epoch.", None(), true,
     "the runtime's start time when known (cAdvisor 0.56: the cgroup's creation time)",
     "CRI started_at, cgroup dir ctime", "CRI started_at, cgroup dir ctime"},
    {FamilyId::kContainerCpuUsageSecondsTotal, "container_cpu_usage_seconds_total", C, Cg, "seconds",
     "Cumulative CPU time consumed, in seconds (cpu=\"total\", or one series per CPU).", kCpu, true,
     "per-CPU series on v2 too with --collector.per-cpu and the eBPF cpu probe", "cpu.stat usage_usec",
     "cpuacct.usage, cpuacct.usage_percpu"},
    {FamilyId::kContainerCpuUserSecondsTotal, "container_cpu_user_seconds_total", C, Cg, "seconds",
     "Cumulative user-mode CPU time consumed, in seconds.", None(), true, "", "cpu.stat user_usec",
     "unified cpu.stat user_usec (hybrid), cpuacct.usage_user", Nanos<&CpuStats::user_ns>()},
    {FamilyId::kContainerCpuSystemSecondsTotal, "container_cpu_system_seconds_total", C, Cg, "seconds",
     "Cumulative kernel-mode CPU time consumed, in seconds.", None(), true, "", "cpu.stat system_usec",
     "unified cpu.stat system_usec (hybrid), cpuacct.usage_sys", Nanos<&CpuStats::system_ns>()},
    {FamilyId::kContainerCpuCfsPeriodsTotal, "container_cpu_cfs_periods_total", C, Cg, "",
     "Number of elapsed CFS enforcement periods (only with a CPU quota).", None(), true, "", "cpu.stat nr_periods",
     "cpu.stat nr_periods"},
    {FamilyId::kContainerCpuCfsThrottledPeriodsTotal, "container_cpu_cfs_throttled_periods_total", C, Cg, "",
     "Number of CFS periods in which the cgroup was throttled (only with a CPU quota).", None(), true, "",
     "cpu.stat nr_throttled", "cpu.stat nr_throttled"},
    {FamilyId::kContainerCpuCfsThrottledSecondsTotal, "container_cpu_cfs_throttled_seconds_total", C, Cg, "seconds",
     "Total time the cgroup was throttled, in seconds (only with a CPU quota).", None(), true, "",
     "cpu.stat throttled_usec", "cpu.stat throttled_time"},
    {FamilyId::kContainerCpuCfsBurstPeriodsTotal, "container_cpu_cfs_burst_periods_total", C, Cg, "",
     "Number of CFS periods in which the cgroup ran beyond its quota (CPU burst; only with a CPU quota).", None(), true,
     "also on v1 (cAdvisor: 0 there)", "cpu.stat nr_bursts", "cpu.stat nr_bursts"},
    {FamilyId::kContainerCpuCfsBurstSecondsTotal, "container_cpu_cfs_burst_seconds_total", C, Cg, "seconds",
     "Total time the cgroup ran beyond its quota (CPU burst), in seconds (only with a CPU quota).", None(), true,
     "also on v1 (cAdvisor: 0 there)", "cpu.stat burst_usec", "cpu.stat burst_time"},
    {FamilyId::kContainerSpecCpuPeriod, "container_spec_cpu_period", G, Cg, "",
     "CFS period of the cgroup, in microseconds.", None(), true, "", "cpu.max (2nd field)", "cpu.cfs_period_us",
     Count<&CpuStats::period_us>()},
    {FamilyId::kContainerSpecCpuQuota, "container_spec_cpu_quota", G, Cg, "",
     "CFS quota of the cgroup, in microseconds per period; absent when unlimited.", None(), true, "",
     "cpu.max (1st field)", "cpu.cfs_quota_us"},
    {FamilyId::kContainerSpecCpuShares, "container_spec_cpu_shares", G, Cg, "",
     "CPU shares of the cgroup (cgroup v2 weight converted to shares).", None(), true, "", "cpu.weight (converted)",
     "cpu.shares", Count<&CpuStats::shares>()},
    {FamilyId::kContainerSpecMemoryLimitBytes, "container_spec_memory_limit_bytes", G, Cg, "bytes",
     "Memory limit of the cgroup, in bytes; 0 when unlimited.", None(), true, "", "memory.max",
     "memory.limit_in_bytes"},
    {FamilyId::kContainerSpecMemorySwapLimitBytes, "container_spec_memory_swap_limit_bytes", G, Cg, "bytes",
     "Swap limit of the cgroup, in bytes; 0 when unlimited.", None(), true, "", "memory.swap.max",
     "memory.memsw.limit_in_bytes"},
    {FamilyId::kContainerSpecMemoryReservationLimitBytes, "container_spec_memory_reservation_limit_bytes", G, Cg,
     "bytes", "Memory reservation (soft limit) of the cgroup, in bytes; 0 when unlimited.", None(), true, "",
     "memory.min", "memory.soft_limit_in_bytes"},
    {FamilyId::kContainerMemoryUsageBytes, "container_memory_usage_bytes", G, Cg, "bytes",
     "Current memory usage in bytes, page cache included.", None(), true, "", "memory.current", "memory.usage_in_bytes",
     Count<&MemoryStats::usage_bytes>()},
    {FamilyId::kContainerMemoryMaxUsageBytes, "container_memory_max_usage_bytes", G, Cg, "bytes",
     "Maximum memory usage recorded, in bytes.", None(), true, "", "memory.peak", "memory.max_usage_in_bytes",
     Count<&MemoryStats::max_usage_bytes>()},
    {FamilyId::kContainerMemoryWorkingSetBytes, "container_memory_working_set_bytes", G, Cg, "bytes",
     "Current working set in bytes: usage minus inactive file pages.", None(), true, "",
     "memory.current - memory.stat inactive_file", "memory.usage_in_bytes - memory.stat total_inactive_file",
     Count<&MemoryStats::working_set_bytes>()},
    {FamilyId::kContainerMemoryRss, "container_memory_rss", G, Cg, "bytes",
     "Anonymous and swap cache memory, in bytes.", None(), true, "", "memory.stat anon", "memory.stat total_rss",
     Count<&MemoryStats::rss_bytes>()},
    {FamilyId::kContainerMemoryCache, "container_memory_cache", G, Cg, "bytes", "Page cache memory, in bytes.", None(),
     true, "", "memory.stat file", "memory.stat total_cache", Count<&MemoryStats::cache_bytes>()},
    {FamilyId::kContainerMemoryMappedFile, "container_memory_mapped_file", G, Cg, "bytes",
     "Memory-mapped file pages, in bytes.", None(), true, "", "memory.stat file_mapped",
     "memory.stat total_mapped_file", Count<&MemoryStats::mapped_file_bytes>()},
    {FamilyId::kContainerMemorySwap, "container_memory_swap", G, Cg, "bytes", "Swap usage, in bytes.", None(), true, "",
     "memory.swap.current", "memory.stat total_swap", Count<&MemoryStats::swap_bytes>()},
    {FamilyId::kContainerMemoryKernelUsage, "container_memory_kernel_usage", G, Cg, "bytes",
     "Kernel memory charged to the cgroup (slab, stacks, page tables...), in bytes.", None(), true,
     "also on v2, from memory.stat kernel (cAdvisor: always 0 there)", "memory.stat kernel",
     "memory.kmem.usage_in_bytes", Count<&MemoryStats::kernel_bytes>()},
    {FamilyId::kContainerMemoryTotalActiveFileBytes, "container_memory_total_active_file_bytes", G, Cg, "bytes",
     "Page cache on the active LRU list, in bytes.", None(), true, "", "memory.stat active_file",
     "memory.stat total_active_file", Count<&MemoryStats::active_file>()},
    {FamilyId::kContainerMemoryTotalInactiveFileBytes, "container_memory_total_inactive_file_bytes", G, Cg, "bytes",
     "Page cache on the inactive LRU list (reclaimed first), in bytes.", None(), true, "", "memory.stat inactive_file",
     "memory.stat total_inactive_file", Count<&MemoryStats::inactive_file>()},
    {FamilyId::kContainerMemoryFileDirtyBytes, "container_memory_file_dirty_bytes", G, Cg, "bytes",
     "Page cache modified but not yet written back, in bytes.", None(), true, "also on v1 (cAdvisor 0.60+, v2 only)",
     "memory.stat file_dirty", "memory.stat total_dirty", Count<&MemoryStats::file_dirty_bytes>()},
    {FamilyId::kContainerMemoryFileWritebackBytes, "container_memory_file_writeback_bytes", G, Cg, "bytes",
     "Page cache being written back, in bytes.", None(), true, "also on v1 (cAdvisor 0.60+, v2 only)",
     "memory.stat file_writeback", "memory.stat total_writeback", Count<&MemoryStats::file_writeback_bytes>()},
    {FamilyId::kContainerMemoryFailcnt, "container_memory_failcnt", C, Cg, "",
     "Number of times memory usage hit the limit.", None(), true, "also on v2, from memory.events max (cAdvisor: 0)",
     "memory.events max", "memory.failcnt", Count<&MemoryStats::failcnt>()},
    {FamilyId::kContainerMemoryFailuresTotal, "container_memory_failures_total", C, Cg, "",
     "Cumulative page faults (failure_type pgfault/pgmajfault; scope container/hierarchy).", kFailure, true, "",
     "memory.stat pgfault, pgmajfault", "memory.stat total_pgfault, total_pgmajfault"},
    {FamilyId::kContainerMemoryPgscanTotal, "container_memory_pgscan_total", C, Cg, "",
     "Pages scanned by reclaim (direct and kswapd).", None(), true, "cAdvisor 0.60+", "memory.stat pgscan", "-",
     Count<&MemoryStats::pgscan>()},
    {FamilyId::kContainerMemoryPgstealTotal, "container_memory_pgsteal_total", C, Cg, "",
     "Pages reclaimed (direct and kswapd).", None(), true, "cAdvisor 0.60+", "memory.stat pgsteal", "-",
     Count<&MemoryStats::pgsteal>()},
    {FamilyId::kContainerMemoryWorkingsetRefaultAnonTotal, "container_memory_workingset_refault_anon_total", C, Cg, "",
     "Refaults of previously evicted anonymous pages.", None(), true, "cAdvisor 0.60+; also on v1",
     "memory.stat workingset_refault_anon", "memory.stat total_workingset_refault_anon",
     Count<&MemoryStats::workingset_refault_anon>()},
    {FamilyId::kContainerMemoryWorkingsetRefaultFileTotal, "container_memory_workingset_refault_file_total", C, Cg, "",
     "Refaults of previously evicted file pages.", None(), true, "cAdvisor 0.60+; also on v1",
     "memory.stat workingset_refault_file", "memory.stat total_workingset_refault_file",
     Count<&MemoryStats::workingset_refault_file>()},
    {FamilyId::kContainerMemoryEventsHighTotal, "container_memory_events_high_total", C, Cg, "",
     "Times the cgroup was throttled and reclaimed at memory.high.", None(), true, "cAdvisor 0.57+",
     "memory.events high", "-",
     Count([](const CgroupStats& c) -> const Opt<uint64_t>& { return c.memory.events.high; })},
    {FamilyId::kContainerMemoryEventsMaxTotal, "container_memory_events_max_total", C, Cg, "",
     "Times the cgroup's usage reached memory.max.", None(), true, "cAdvisor 0.57+", "memory.events max", "-",
     Count([](const CgroupStats& c) -> const Opt<uint64_t>& { return c.memory.events.max; })},
    {FamilyId::kContainerOomEventsTotal, "container_oom_events_total", C, Cg, "",
     "Count of out-of-memory kills in the cgroup.", None(), true,
     "from the kernel's per-cgroup count (cAdvisor parses /dev/kmsg)", "memory.events.local oom_kill",
     "memory.oom_control oom_kill"},
    {FamilyId::kContainerProcesses, "container_processes", G, Cg, "", "Number of processes in the cgroup.", None(),
     true, "", "cgroup.procs (lines)", "cgroup.procs (lines)", Count<&ProcessStats::processes>()},
    {FamilyId::kContainerThreads, "container_threads", G, Cg, "", "Number of threads in the cgroup.", None(), true, "",
     "cgroup.threads (lines), pids.current", "tasks (lines), pids.current"},
    {FamilyId::kContainerThreadsMax, "container_threads_max", G, Cg, "",
     "Maximum number of threads allowed in the cgroup; 0 when unlimited.", None(), true, "", "pids.max", "pids.max"},
    {FamilyId::kContainerFsReadsBytesTotal, "container_fs_reads_bytes_total", C, Cg, "bytes",
     "Cumulative bytes read from block devices.", kDevice, true, "", "io.stat rbytes",
     "blkio.throttle.io_service_bytes_recursive Read"},
    {FamilyId::kContainerFsWritesBytesTotal, "container_fs_writes_bytes_total", C, Cg, "bytes",
     "Cumulative bytes written to block devices.", kDevice, true, "", "io.stat wbytes",
     "blkio.throttle.io_service_bytes_recursive Write"},
    {FamilyId::kContainerFsReadsTotal, "container_fs_reads_total", C, Cg, "",
     "Cumulative read operations completed on block devices.", kDevice, true, "", "io.stat rios",
     "blkio.throttle.io_serviced_recursive Read"},
    {FamilyId::kContainerFsWritesTotal, "container_fs_writes_total", C, Cg, "",
     "Cumulative write operations completed on block devices.", kDevice, true, "", "io.stat wios",
     "blkio.throttle.io_serviced_recursive Write"},
    {FamilyId::kContainerBlkioDeviceUsageTotal, "container_blkio_device_usage_total", C, Cg, "",
     "Cumulative bytes moved to and from block devices, by operation (Read/Write).", kBlkioDevice, true, "",
     "io.stat rbytes, wbytes", "blkio.throttle.io_service_bytes_recursive Read, Write"},
    {FamilyId::kContainerFsIoCostUsageSecondsTotal, "container_fs_io_cost_usage_seconds_total", C, Cg, "seconds",
     "Device time the cgroup used by the iocost controller's model, in seconds.", kDevice, true, "",
     "io.stat cost.usage (iocost enabled)", "-"},
    {FamilyId::kContainerFsIoCostWaitSecondsTotal, "container_fs_io_cost_wait_seconds_total", C, Cg, "seconds",
     "Time the cgroup's IO waited for the iocost controller, in seconds.", kDevice, true, "",
     "io.stat cost.wait (iocost enabled)", "-"},
    {FamilyId::kContainerFsIoCostIndebtSecondsTotal, "container_fs_io_cost_indebt_seconds_total", C, Cg, "seconds",
     "Time the cgroup was in debt to the iocost controller, in seconds.", kDevice, true, "",
     "io.stat cost.indebt (iocost enabled)", "-"},
    {FamilyId::kContainerFsIoCostIndelaySecondsTotal, "container_fs_io_cost_indelay_seconds_total", C, Cg, "seconds",
     "Time the cgroup's tasks were delayed by the iocost controller, in seconds.", kDevice, true, "",
     "io.stat cost.indelay (iocost enabled)", "-"},
    {FamilyId::kContainerFsUsageBytes, "container_fs_usage_bytes", G, Cg, "bytes",
     "Bytes used by the container's writable layer on its filesystem.", kDevice, true,
     "the runtime's writable layer (containerd's cAdvisor handler reports none)", kWritableLayer, kWritableLayer},
    {FamilyId::kContainerFsLimitBytes, "container_fs_limit_bytes", G, Cg, "bytes",
     "Bytes the container can consume on the filesystem of its writable layer (its capacity).", kDevice, true,
     "the writable layer's filesystem", kStatvfsLayer, kStatvfsLayer},
    {FamilyId::kContainerFsInodesFree, "container_fs_inodes_free", G, Cg, "",
     "Free inodes on the filesystem of the container's writable layer.", kDevice, true,
     "the writable layer's filesystem", kStatvfsLayer, kStatvfsLayer},
    {FamilyId::kContainerFsInodesTotal, "container_fs_inodes_total", G, Cg, "",
     "Inodes of the filesystem of the container's writable layer.", kDevice, true, "the writable layer's filesystem",
     kStatvfsLayer, kStatvfsLayer},
    {FamilyId::kContainerFileDescriptors, "container_file_descriptors", G, Cg, "",
     "Open file descriptors of all processes of the container.", None(), true, "", "/proc/<pid>/fd (entries)",
     "/proc/<pid>/fd (entries)", Count<&ProcessStats::file_descriptors>()},
    {FamilyId::kContainerSockets, "container_sockets", G, Cg, "", "Open sockets of all processes of the container.",
     None(), true, "", "/proc/<pid>/fd (socket links)", "/proc/<pid>/fd (socket links)",
     Count<&ProcessStats::sockets>()},
    {FamilyId::kContainerUlimitsSoft, "container_ulimits_soft", G, Cg, "",
     "Soft ulimit of the container's first process (ulimit=\"max_open_files\"); -1 when unlimited.", kUlimit, true, "",
     "prlimit(RLIMIT_NOFILE), /proc/<pid>/limits", "prlimit(RLIMIT_NOFILE), /proc/<pid>/limits"},
    {FamilyId::kContainerHugetlbUsageBytes, "container_hugetlb_usage_bytes", G, Cg, "bytes",
     "Current huge page usage in bytes, by page size.", kPageSize, true, "", "hugetlb.<size>.current",
     "hugetlb.<size>.usage_in_bytes"},
    {FamilyId::kContainerHugetlbMaxUsageBytes, "container_hugetlb_max_usage_bytes", G, Cg, "bytes",
     "Maximum huge page usage recorded in bytes, by page size.", kPageSize, true, "v1 only (cAdvisor: 0 on v2)", "-",
     "hugetlb.<size>.max_usage_in_bytes"},
    {FamilyId::kContainerHugetlbFailcnt, "container_hugetlb_failcnt", C, Cg, "",
     "Huge page allocations refused at the limit, by page size.", kPageSize, true, "", "hugetlb.<size>.events max",
     "hugetlb.<size>.failcnt"},
    {FamilyId::kContainerNetworkReceiveBytesTotal, "container_network_receive_bytes_total", C, Cg, "bytes",
     "Cumulative bytes received.", kInterface, true, "", kNetSource, kNetSource},
    {FamilyId::kContainerNetworkReceivePacketsTotal, "container_network_receive_packets_total", C, Cg, "",
     "Cumulative packets received.", kInterface, true, "", kNetSource, kNetSource},
    {FamilyId::kContainerNetworkReceiveErrorsTotal, "container_network_receive_errors_total", C, Cg, "",
     "Cumulative errors while receiving.", kInterface, true, "", kNetSource, kNetSource},
    {FamilyId::kContainerNetworkReceivePacketsDroppedTotal, "container_network_receive_packets_dropped_total", C, Cg,
     "", "Cumulative packets dropped while receiving.", kInterface, true, "", kNetSource, kNetSource},
    {FamilyId::kContainerNetworkTransmitBytesTotal, "container_network_transmit_bytes_total", C, Cg, "bytes",
     "Cumulative bytes transmitted.", kInterface, true, "", kNetSource, kNetSource},
    {FamilyId::kContainerNetworkTransmitPacketsTotal, "container_network_transmit_packets_total", C, Cg, "",
     "Cumulative packets transmitted.", kInterface, true, "", kNetSource, kNetSource},
    {FamilyId::kContainerNetworkTransmitErrorsTotal, "container_network_transmit_errors_total", C, Cg, "",
     "Cumulative errors while transmitting.", kInterface, true, "", kNetSource, kNetSource},
    {FamilyId::kContainerNetworkTransmitPacketsDroppedTotal, "container_network_transmit_packets_dropped_total", C, Cg,
     "", "Cumulative packets dropped while transmitting.", kInterface, true, "", kNetSource, kNetSource},
    {FamilyId::kContainerPressureCpuWaitingSecondsTotal, "container_pressure_cpu_waiting_seconds_total", C, Cg,
     "seconds", "Total time some tasks of the cgroup waited for a CPU, in seconds.", None(), true,
     "served whenever the kernel has PSI (the kubelet needs its KubeletPSI gate)", "cpu.pressure some total",
     kPsiHybrid},
    {FamilyId::kContainerPressureCpuStalledSecondsTotal, "container_pressure_cpu_stalled_seconds_total", C, Cg,
     "seconds", "Total time no task of the cgroup could run for lack of CPU, in seconds.", None(), true,
     "served whenever the kernel has PSI (the kubelet needs its KubeletPSI gate)", "cpu.pressure full total",
     kPsiHybrid},
    {FamilyId::kContainerPressureMemoryWaitingSecondsTotal, "container_pressure_memory_waiting_seconds_total", C, Cg,
     "seconds", "Total time some tasks of the cgroup waited for memory, in seconds.", None(), true,
     "served whenever the kernel has PSI (the kubelet needs its KubeletPSI gate)", "memory.pressure some total",
     kPsiHybrid},
    {FamilyId::kContainerPressureMemoryStalledSecondsTotal, "container_pressure_memory_stalled_seconds_total", C, Cg,
     "seconds", "Total time no task of the cgroup could run for lack of memory, in seconds.", None(), true,
     "served whenever the kernel has PSI (the kubelet needs its KubeletPSI gate)", "memory.pressure full total",
     kPsiHybrid},
    {FamilyId::kContainerPressureIoWaitingSecondsTotal, "container_pressure_io_waiting_seconds_total", C, Cg, "seconds",
     "Total time some tasks of the cgroup waited for IO, in seconds.", None(), true,
     "served whenever the kernel has PSI (the kubelet needs its KubeletPSI gate)", "io.pressure some total",
     kPsiHybrid},
    {FamilyId::kContainerPressureIoStalledSecondsTotal, "container_pressure_io_stalled_seconds_total", C, Cg, "seconds",
     "Total time no task of the cgroup could run for lack of IO, in seconds.", None(), true,
     "served whenever the kernel has PSI (the kubelet needs its KubeletPSI gate)", "io.pressure full total",
     kPsiHybrid},
    {FamilyId::kStatletMemoryEventsTotal, "statlet_memory_events_total", C, Cg, "",
     "Memory events of the cgroup (event low/high/max/oom/oom_kill/oom_group_kill; scope hierarchy/local).",
     kEventScope, false, "", "memory.events, memory.events.local", "memory.oom_control (oom_kill only)"},
    {FamilyId::kStatletMemoryMinBytes, "statlet_memory_min_bytes", G, Cg, "bytes",
     "Hard memory protection of the cgroup, in bytes.", None(), false, "", "memory.min", "-"},
    {FamilyId::kStatletMemoryLowBytes, "statlet_memory_low_bytes", G, Cg, "bytes",
     "Best-effort memory protection of the cgroup, in bytes.", None(), false, "", "memory.low", "-"},
    {FamilyId::kStatletMemoryHighBytes, "statlet_memory_high_bytes", G, Cg, "bytes",
     "Memory throttle limit of the cgroup, in bytes; +Inf when unlimited.", None(), false, "", "memory.high", "-"},
    {FamilyId::kStatletMemoryReclaimScannedPagesTotal, "statlet_memory_reclaim_scanned_pages_total", C, Cg, "pages",
     "Pages scanned by reclaim, by reclaimer (direct/kswapd).", kReclaimer, false, "",
     "memory.stat pgscan_direct, pgscan_kswapd", "-"},
    {FamilyId::kStatletMemoryReclaimStolenPagesTotal, "statlet_memory_reclaim_stolen_pages_total", C, Cg, "pages",
     "Pages reclaimed, by reclaimer (direct/kswapd).", kReclaimer, false, "",
     "memory.stat pgsteal_direct, pgsteal_kswapd", "-"},
    {FamilyId::kStatletMemorySockBytes, "statlet_memory_sock_bytes", G, Cg, "bytes",
     "Memory of the cgroup's network transmission buffers, in bytes.", None(), false, "", "memory.stat sock", "-",
     Count<&MemoryStats::sock_bytes>(), kCri},
    {FamilyId::kStatletMemoryVmallocBytes, "statlet_memory_vmalloc_bytes", G, Cg, "bytes",
     "Memory of the cgroup used for vmap backed memory (vmalloc), in bytes.", None(), false, "", "memory.stat vmalloc",
     "-", Count<&MemoryStats::vmalloc_bytes>(), kCri},
    {FamilyId::kStatletMemoryPercpuBytes, "statlet_memory_percpu_bytes", G, Cg, "bytes",
     "Memory of the cgroup holding per-CPU kernel data structures, in bytes.", None(), false, "", "memory.stat percpu",
     "-", Count<&MemoryStats::percpu_bytes>(), kCri},
    {FamilyId::kStatletMemoryZswapBytes, "statlet_memory_zswap_bytes", G, Cg, "bytes",
     "Memory the zswap compression pool uses for the cgroup's pages, in bytes (kernels with zswap).", None(), false, "",
     "memory.stat zswap", "-", Count<&MemoryStats::zswap_bytes>(), kCri},
    {FamilyId::kStatletMemoryZswappedBytes, "statlet_memory_zswapped_bytes", G, Cg, "bytes",
     "Memory of the cgroup swapped out to zswap, in bytes before compression (kernels with zswap).", None(), false, "",
     "memory.stat zswapped", "-", Count<&MemoryStats::zswapped_bytes>(), kCri},
    {FamilyId::kStatletPressureStallRatio, "statlet_pressure_stall_ratio", G, Cg, "ratio",
     "PSI running average of stalled time (resource cpu/memory/io; kind some/full; window 10s/60s/300s).", kPressure,
     false, "", "cpu.pressure, memory.pressure, io.pressure avg10/avg60/avg300", kPsiHybrid},
    {FamilyId::kStatletPidsCurrent, "statlet_pids_current", G, Cg, "", "Number of tasks charged to the cgroup.", None(),
     false, "", "pids.current", "pids.current", Count<&ProcessStats::pids_current>()},
    {FamilyId::kStatletPidsMax, "statlet_pids_max", G, Cg, "", "Task limit of the cgroup; +Inf when unlimited.", None(),
     false, "", "pids.max", "pids.max"},
    {FamilyId::kStatletPidsLimitHitsTotal, "statlet_pids_limit_hits_total", C, Cg, "",
     "Forks refused because the cgroup was at pids.max.", None(), false, "", "pids.events max", "pids.events max",
     Count<&ProcessStats::pids_events_max>()},
    {FamilyId::kStatletPodNetworkBytesTotal, "statlet_pod_network_bytes_total", C, Cg, "bytes",
     "Bytes through every interface of the pod's network namespace, loopback included (direction "
     "receive/transmit).",
     kPodNet, false, "", "/proc/<pid>/net/dev", "/proc/<pid>/net/dev"},
    {FamilyId::kStatletPodNetworkPacketsTotal, "statlet_pod_network_packets_total", C, Cg, "",
     "Packets through every interface of the pod's network namespace.", kPodNet, false, "", "/proc/<pid>/net/dev",
     "/proc/<pid>/net/dev"},
    {FamilyId::kStatletPodNetworkErrorsTotal, "statlet_pod_network_errors_total", C, Cg, "",
     "Errors on every interface of the pod's network namespace.", kPodNet, false, "", "/proc/<pid>/net/dev",
     "/proc/<pid>/net/dev"},
    {FamilyId::kStatletPodNetworkDroppedPacketsTotal, "statlet_pod_network_dropped_packets_total", C, Cg, "",
     "Packets dropped on every interface of the pod's network namespace.", kPodNet, false, "", "/proc/<pid>/net/dev",
     "/proc/<pid>/net/dev"},
    {FamilyId::kStatletContainerMemoryQosResourceBytes, "statlet_container_memory_qos_resource_bytes", G, Cg, "bytes",
     "Memory resources the runtime reports for the container (resource limit/min/low/high: memory_limit_in_bytes "
     "and the unified memory.min/memory.low/memory.high the kubelet passed; high +Inf for max).",
     kResource, false, "", kCriResources, kCriResources},
    {FamilyId::kStatletContainerMemoryQosRequestBytes, "statlet_container_memory_qos_request_bytes", G, Cg, "bytes",
     "The memory request Memory QoS is judged by, on containers and pods (source runtime: the unified "
     "memory.min/memory.low the kubelet passed; apiserver: the pod from the API server; qos_class: Guaranteed "
     "request = limit, BestEffort 0). Absent when unknown.",
     kSource, false, "", kRequestSource, kRequestSource},
    {FamilyId::kStatletContainerMemoryQosExpectedBytes, "statlet_container_memory_qos_expected_bytes", G, Cg, "bytes",
     "What the judged kubelet leaves in the cgroup's memory.min / memory.low / memory.high (knob min/low/high): 0 "
     "where it sets no protection, +Inf where memory.high stays max. On containers (min, low, high) and on pod, "
     "QoS and kubepods cgroups (min, low); only where the node applies Memory QoS and the requests are known. "
     "Compare with statlet_memory_min_bytes, statlet_memory_low_bytes, statlet_memory_high_bytes; "
     "statlet_node_memory_qos_info says which rules.",
     kKnob, false, "", kKepFormula, "-"},
    {FamilyId::kStatletContainerMemoryQosApplied, "statlet_container_memory_qos_applied", G, Cg, "",
     "1 when the node applies Memory QoS (cgroup v2 memory knobs, and the judged kubelet's version known with its "
     "MemoryQoS feature gate on), 0 when not; on containers.",
     None(), false, "", "memory.min present; statlet_node_memory_qos_info", "0 (no memory.min)"},
    {FamilyId::kStatletContainerMemoryQosZone, "statlet_container_memory_qos_zone", G, Cg, "",
     "1 for the zone the container's usage is in, 0 for the others (zone below_request: usage below the "
     "protection of its request, the knob its class is protected by as far as the ancestors pass it down; "
     "above_request; throttling: usage >= memory.high; at_limit: usage >= memory.max - margin).",
     kZone, false, "", kZoneSource, "memory.usage_in_bytes against memory.limit_in_bytes and the runtime's request"},
    {FamilyId::kStatletContainerMemoryHighStalled, "statlet_container_memory_high_stalled", G, Cg, "",
     "1 while the container is livelocked at memory.high: usage within a margin of memory.high, memory PSI full "
     "avg10 above a threshold and memory.events high rising, for the dwell time (--memory-qos.stall-*); 0 "
     "otherwise. On containers with a finite memory.high.",
     None(), false, "", kStallSource, "-"},
    {FamilyId::kStatletContainerMemoryHighStalledSinceSeconds, "statlet_container_memory_high_stalled_since_seconds", G,
     Cg, "seconds",
     "When the current memory.high stall began (its conditions first held), in seconds since the epoch; only "
     "while statlet_container_memory_high_stalled is 1.",
     None(), false, "", kStallSource, "-"},
    {FamilyId::kStatletMemoryProtectionCapped, "statlet_memory_protection_capped", G, Cg, "",
     "1 when the cgroup's memory.min / memory.low (knob min/low) exceeds what its ancestors pass down (the "
     "smallest value configured on an ancestor below the root): its effective protection is below the "
     "configured one; 0 when not. On cgroups that configure the knob, when every ancestor's value is known.",
     kKnob, false, "", kCappedSource, "-"},
    {FamilyId::kStatletNodeMemoryQosInfo, "statlet_node_memory_qos_info", G, Cg, "",
     "1, on the kubepods cgroup: the rules the Memory QoS view is judged by (rules v1.22/v1.27/v1.36/v1.37, off "
     "when the kubelet writes no knobs, unknown when its version is not known), the kubelet version, its "
     "memoryReservationPolicy and memoryThrottlingFactor (none: no memory.high).",
     kMemoryQosInfo, false, "", kBasisSource, kBasisSource},
    {FamilyId::kStatletNodeMemoryQosMinBytes, "statlet_node_memory_qos_min_bytes", G, Cg, "bytes",
     "The pods' expected memory.min, summed (the kubelet's kubelet_memory_qos_node_memory_min_bytes under "
     "TieredReservation: the Guaranteed pods' requests), on the kubepods cgroup.",
     None(), false, "", kKepFormula, "-"},
    {FamilyId::kStatletNodeMemoryQosLowBytes, "statlet_node_memory_qos_low_bytes", G, Cg, "bytes",
     "The pods' expected memory.low, summed (the kubelet's kubelet_memory_qos_node_memory_low_bytes under "
     "TieredReservation: the Burstable pods' requests), on the kubepods cgroup.",
     None(), false, "", kKepFormula, "-"},
    {FamilyId::kStatletNodeMemoryQosProtectedRatio, "statlet_node_memory_qos_protected_ratio", G, Cg, "ratio",
     "The kubepods cgroup's memory.min / memory.low (knob min/low) over node allocatable (its memory.max): the "
     "share of the pods' memory the kernel protects from reclaim.",
     kKnob, false, "", "kubepods memory.min, memory.low, memory.max", "-"},
    {FamilyId::kStatletNodeMemoryQosLivelockRisk, "statlet_node_memory_qos_livelock_risk", G, Cg, "",
     "1 on a kernel before 5.9 while some cgroup under kubepods has a memory.high (such kernels can hang a task "
     "at memory.high: the KEP's reason to require 5.9), 0 otherwise; on the kubepods cgroup.",
     None(), false, "", "uname release, memory.high under kubepods", "uname release (no memory.high: 0)"},
    {FamilyId::kStatletCpuRunqueueLatencySeconds, "statlet_cpu_runqueue_latency_seconds", H, Cg, "seconds",
     "Time the cgroup's tasks waited on a run queue before running (log2 buckets from 2 microseconds; eBPF runqlat "
     "probe).",
     kLe, false, "", "eBPF tp_btf/sched_switch (runqlat)", "eBPF tp_btf/sched_switch (runqlat)"},
    {FamilyId::kStatletTcpRetransmitsTotal, "statlet_tcp_retransmits_total", C, Cg, "",
     "TCP segments retransmitted by the cgroup's sockets (eBPF tcp probe).", None(), false, "",
     "eBPF tp_btf/tcp_retransmit_skb", "eBPF tp_btf/tcp_retransmit_skb", Count<&BpfCgroupStats::tcp_retransmits>()},
    {FamilyId::kStatletTcpDropsTotal, "statlet_tcp_drops_total", C, Cg, "",
     "Packets of the cgroup's TCP sockets the kernel dropped, by its drop reason (eBPF tcp probe).", kDropReason, false,
     "", "eBPF tp_btf/kfree_skb", "eBPF tp_btf/kfree_skb"},
    {FamilyId::kStatletPageFaultsTotal, "statlet_page_faults_total", C, Cg, "",
     "Page faults of the cgroup's tasks, by type (minor/major) (eBPF faults probe).", kFaultType, false, "",
     "eBPF tp_btf/sched_switch (faults)", "eBPF tp_btf/sched_switch (faults)"},
    {FamilyId::kStatletOomKillsTotal, "statlet_oom_kills_total", C, Cg, "",
     "Processes of the cgroup chosen by the OOM killer (eBPF oom probe).", None(), false, "", "eBPF tp_btf/mark_victim",
     "eBPF tp_btf/mark_victim", Count<&BpfCgroupStats::oom_kills>()},
    {FamilyId::kStatletContainerNetworkReceiveBytesTotal, "statlet_container_network_receive_bytes_total", C, Cg,
     "bytes",
     "IP bytes the cgroup's sockets received, in any network namespace: each packet's length at the socket, IP "
     "header included (eBPF net probe).",
     None(), false, "", kSkbIngress, kSkbIngress, Count<&BpfCgroupStats::net_rx_bytes>(), kCri},
    {FamilyId::kStatletContainerNetworkReceivePacketsTotal, "statlet_container_network_receive_packets_total", C, Cg,
     "", "IP packets the cgroup's sockets received, in any network namespace (eBPF net probe).", None(), false, "",
     kSkbIngress, kSkbIngress, Count<&BpfCgroupStats::net_rx_packets>(), kCri},
    {FamilyId::kStatletContainerNetworkTransmitBytesTotal, "statlet_container_network_transmit_bytes_total", C, Cg,
     "bytes",
     "IP bytes the cgroup's sockets sent, in any network namespace: each packet's length at IP output, IP header "
     "included (eBPF net probe).",
     None(), false, "", kSkbEgress, kSkbEgress, Count<&BpfCgroupStats::net_tx_bytes>(), kCri},
    {FamilyId::kStatletContainerNetworkTransmitPacketsTotal, "statlet_container_network_transmit_packets_total", C, Cg,
     "", "IP packets the cgroup's sockets sent, in any network namespace (eBPF net probe).", None(), false, "",
     kSkbEgress, kSkbEgress, Count<&BpfCgroupStats::net_tx_packets>(), kCri},
    {FamilyId::kStatletContainerExitTimeSeconds, "statlet_container_exit_time_seconds", G, Cg, "seconds",
     "Time the container's cgroup emptied, in seconds since the epoch; its other series hold their final values "
     "for the exit retention.",
     None(), false, "", "cgroup.events populated 0 (inotify)", "none: cgroup v1 has no populated notification"},
    {FamilyId::kStatletContainerLifetimeSeconds, "statlet_container_lifetime_seconds", G, Cg, "seconds",
     "Time from the creation of the container's cgroup to its emptying.", None(), false, "",
     "cgroup directory ctime, cgroup.events populated 0", "none: cgroup v1 has no populated notification"},
    {FamilyId::kStatletOomKillTimestampSeconds, "statlet_oom_kill_timestamp_seconds", G, Ev, "seconds",
     "Time of a recent OOM kill in seconds since the epoch, one series per kill of statlet's bounded recent list, "
     "labelled with the victim's pid, comm and constraint (memcg/global) (eBPF oom probe).",
     kOomEvent, false, "", "eBPF tp_btf/mark_victim", "eBPF tp_btf/mark_victim"},
};

}  // namespace statlet::family_rows
