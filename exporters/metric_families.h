// The one table of metric families statlet exposes: names, types, help, units and labels.
// The Prometheus encoder renders from it, the CRI service (ListMetricDescriptors /
// ListPodSandboxMetrics) serves the same set, and docs/metrics.md documents it.
//
// Names, types and labels of the container_* families follow cAdvisor (metrics/prometheus.go)
// so that dashboards and alerts written against the kubelet's /metrics/cadvisor keep working.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace statlet {

// kHistogram: cumulative `_bucket{le}` series, then `_count` and `_sum`, per cgroup.
enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };

// Where a family's series hang: one series set per reported cgroup, once per process, or
// one series per event of the snapshot's bounded recent-event list (carrying the cgroup
// labels of the cgroup the event happened in).
enum class MetricScope : uint8_t { kCgroup, kProcess, kEvent };

enum class FamilyId : uint16_t {
  // cAdvisor-compatible, per cgroup
  kContainerLastSeen,
  kContainerStartTimeSeconds,
  kContainerCpuUsageSecondsTotal,
  kContainerCpuUserSecondsTotal,
  kContainerCpuSystemSecondsTotal,
  kContainerCpuCfsPeriodsTotal,
  kContainerCpuCfsThrottledPeriodsTotal,
  kContainerCpuCfsThrottledSecondsTotal,
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
  kContainerMemoryFailcnt,
  kContainerMemoryFailuresTotal,
  kContainerOomEventsTotal,
  kContainerProcesses,
  kContainerThreads,
  kContainerThreadsMax,
  kContainerFsReadsBytesTotal,
  kContainerFsWritesBytesTotal,
  kContainerFsReadsTotal,
  kContainerFsWritesTotal,
  kContainerBlkioDeviceUsageTotal,
  kContainerFsUsageBytes,
  kContainerFsLimitBytes,
  kContainerFsInodesFree,
  kContainerFsInodesTotal,
  kContainerFileDescriptors,
  kContainerSockets,
  kContainerUlimitsSoft,
  kContainerHugetlbUsageBytes,
  kContainerHugetlbMaxUsageBytes,
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
  kStatletMemoryWorkingsetRefaultsTotal,
  kStatletPressureStallRatio,
  kStatletPidsCurrent,
  kStatletPidsMax,
  kStatletPidsLimitHitsTotal,
  kStatletPodNetworkBytesTotal,
  kStatletPodNetworkPacketsTotal,
  kStatletPodNetworkErrorsTotal,
  kStatletPodNetworkDroppedPacketsTotal,
  // statlet's own, per cgroup, from the eBPF probes
  kStatletCpuRunqueueLatencySeconds,
  kStatletTcpRetransmitsTotal,
  kStatletTcpDropsTotal,
  kStatletPageFaultsTotal,
  kStatletOomKillsTotal,
  // statlet's own, per recent OOM kill (eBPF)
  kStatletOomKillTimestampSeconds,
  // statlet's own, per process
  kStatletBuildInfo,
  kStatletCollectionDurationSeconds,
  kStatletCgroupsTracked,
  kStatletCgroupsReported,
  kStatletCollectionsTotal,
  kStatletScrapeJoinsTotal,
  kStatletSnapshotReusesTotal,
  kStatletReadErrorsTotal,
  kStatletCardinalityDroppedTotal,
  kStatletBpfProbeUp,
  kStatletBpfLostEventsTotal,
  kStatletRuntimeUp,
  kStatletRuntimeInfo,
  kCount,
};

inline constexpr size_t kFamilyCount = static_cast<size_t>(FamilyId::kCount);

struct MetricFamily {
  FamilyId id;
  std::string_view name;     // exposition name of the samples (counters end in _total)
  MetricType type;
  MetricScope scope;
  std::string_view unit;     // base unit ("seconds", "bytes", "pages", "ratio"), "" if a count
  std::string_view help;
  // Labels beyond the cgroup labels (id, name, image, container, pod, namespace), in
  // exposition order. Process-scope families carry only these. A histogram's `le` is
  // listed here too.
  std::span<const std::string_view> labels;
  bool cadvisor;             // name, type and labels as cAdvisor exposes them
  // Where the value comes from, for docs and the CRI descriptors.
  std::string_view v2_source;
  std::string_view v1_source;
};

// Labels every cgroup-scope series may carry, in exposition order (sorted, as client_golang
// writes them). A label whose value is unknown or empty is left out, which Prometheus treats
// the same as an empty value.
inline constexpr std::string_view kCgroupLabels[] = {"container", "id", "image", "name", "namespace", "pod"};

std::span<const MetricFamily> AllMetricFamilies();
const MetricFamily& Family(FamilyId id);
// nullptr when unknown.
const MetricFamily* FindFamily(std::string_view name);

// The OpenMetrics MetricFamily name: a counter's name without "_total"; a histogram's
// samples add "_bucket", "_count" and "_sum" to it.
std::string_view OpenMetricsFamilyName(const MetricFamily& f);
// The OpenMetrics UNIT, only when the family name ends in it (the spec requires the suffix).
std::string_view OpenMetricsUnit(const MetricFamily& f);
// The OpenMetrics TYPE. A counter whose name lacks "_total" (cAdvisor's
// container_memory_failcnt) is "unknown" there, so its series keep their name.
std::string_view OpenMetricsType(const MetricFamily& f);
// The text-format 0.0.4 TYPE.
std::string_view TextType(const MetricFamily& f);

}  // namespace statlet
