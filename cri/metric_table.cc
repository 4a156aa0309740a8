#include "cri/metric_table.h"

#include <algorithm>
#include <cstring>

namespace statlet::cri {
namespace {

using F = FamilyId;
constexpr bool C = true, G = false;  // counter / gauge

const std::vector<MetricFamily>& Table() {
  static const std::vector<MetricFamily> t = {
      {F::kCpuCfsPeriods, "container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", C, false, false, true, {}},
      {F::kCpuCfsThrottledPeriods, "container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", C, false, false, true, {}},
      {F::kCpuCfsThrottledSeconds, "container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", C, true, false, true, {}},
      {F::kCpuSystemSeconds, "container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", C, true, false, true, {}},
      {F::kCpuUsageSeconds, "container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", C, true, false, true, {"cpu"}},
      {F::kCpuUserSeconds, "container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", C, true, false, true, {}},
      {F::kFileDescriptors, "container_file_descriptors", "Number of open file descriptors for the container.", G, false, false, true, {}},
      {F::kFsLimitBytes, "container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", G, false, false, true, {"device"}},
      {F::kFsUsageBytes, "container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", G, false, false, true, {"device"}},
      {F::kFsReadsBytes, "container_fs_reads_bytes_total", "Cumulative count of bytes read.", C, false, false, true, {"device"}},
      {F::kFsReads, "container_fs_reads_total", "Cumulative count of reads completed.", C, false, false, true, {"device"}},
      {F::kFsWritesBytes, "container_fs_writes_bytes_total", "Cumulative count of bytes written.", C, false, false, true, {"device"}},
      {F::kFsWrites, "container_fs_writes_total", "Cumulative count of writes completed.", C, false, false, true, {"device"}},
      {F::kLastSeen, "container_last_seen", "Last time a container was seen by the exporter.", G, false, false, true, {}},
      {F::kMemoryCache, "container_memory_cache", "Number of bytes of page cache memory.", G, false, false, true, {}},
      {F::kMemoryFailures, "container_memory_failures_total", "Cumulative count of memory allocation failures.", C, false, false, true, {"failure_type", "scope"}},
      {F::kMemoryMappedFile, "container_memory_mapped_file", "Size of memory mapped files in bytes.", G, false, false, true, {}},
      {F::kMemoryMaxUsage, "container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes.", G, false, false, true, {}},
      {F::kMemoryRss, "container_memory_rss", "Size of RSS in bytes.", G, false, false, true, {}},
      {F::kMemorySwap, "container_memory_swap", "Container swap usage in bytes.", G, false, false, true, {}},
      {F::kMemoryUsage, "container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed.", G, false, false, true, {}},
      {F::kMemoryWorkingSet, "container_memory_working_set_bytes", "Current working set in bytes.", G, false, false, true, {}},
      {F::kOomEvents, "container_oom_events_total", "Count of out of memory events observed for the container.", C, false, false, true, {}},
      {F::kProcesses, "container_processes", "Number of processes running inside the container.", G, false, false, true, {}},
      {F::kSockets, "container_sockets", "Number of open sockets for the container.", G, false, false, true, {}},
      {F::kSpecCpuPeriod, "container_spec_cpu_period", "CPU period of the container.", G, false, false, true, {}},
      {F::kSpecCpuShares, "container_spec_cpu_shares", "CPU share of the container.", G, false, false, true, {}},
      {F::kSpecMemoryLimit, "container_spec_memory_limit_bytes", "Memory limit for the container.", G, false, false, true, {}},
      {F::kSpecMemorySwapLimit, "container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.", G, false, false, true, {}},
      {F::kStartTimeSeconds, "container_start_time_seconds", "Start time of the container since unix epoch in seconds.", G, true, false, true, {}},
      {F::kThreads, "container_threads", "Number of threads running inside the container.", G, false, false, true, {}},
      {F::kThreadsMax, "container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero.", G, false, false, true, {}},
      {F::kNetworkReceiveBytes, "container_network_receive_bytes_total", "Cumulative count of bytes received.", C, false, true, true, {"interface"}},
      {F::kNetworkReceivePackets, "container_network_receive_packets_total", "Cumulative count of packets received.", C, false, true, true, {"interface"}},
      {F::kNetworkReceiveErrors, "container_network_receive_errors_total", "Cumulative count of errors encountered while receiving.", C, false, true, true, {"interface"}},
      {F::kNetworkReceiveDropped, "container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving.", C, false, true, true, {"interface"}},
      {F::kNetworkTransmitBytes, "container_network_transmit_bytes_total", "Cumulative count of bytes transmitted.", C, false, true, true, {"interface"}},
      {F::kNetworkTransmitPackets, "container_network_transmit_packets_total", "Cumulative count of packets transmitted.", C, false, true, true, {"interface"}},
      {F::kNetworkTransmitErrors, "container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting.", C, false, true, true, {"interface"}},
      {F::kNetworkTransmitDropped, "container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting.", C, false, true, true, {"interface"}},
      {F::kBlkioDeviceUsage, "container_blkio_device_usage_total", "Blkio device bytes usage.", C, false, false, false, {"device", "major", "minor", "operation"}},
      {F::kFsInodesFree, "container_fs_inodes_free", "Number of available Inodes.", G, false, false, false, {"device"}},
      {F::kFsInodesTotal, "container_fs_inodes_total", "Number of Inodes.", G, false, false, false, {"device"}},
      {F::kHugetlbUsage, "container_hugetlb_usage_bytes", "Current hugepage usage in bytes.", G, false, false, false, {"pagesize"}},
      {F::kHugetlbMaxUsage, "container_hugetlb_max_usage_bytes", "Maximum hugepage usage recorded in bytes.", G, false, false, false, {"pagesize"}},
      {F::kSpecCpuQuota, "container_spec_cpu_quota", "CPU quota of the container.", G, false, false, false, {}},
      {F::kSpecMemoryReservationLimit, "container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.", G, false, false, false, {}},
      {F::kUlimitsSoft, "container_ulimits_soft", "Soft ulimit values for the container root process. Unlimited if -1, except priority and nice.", G, false, false, false, {"ulimit"}},
      {F::kPressureCpuStalled, "container_pressure_cpu_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to CPU congestion.", C, true, false, false, {}},
      {F::kPressureCpuWaiting, "container_pressure_cpu_waiting_seconds_total", "Total time duration tasks in the container have waited due to CPU congestion.", C, true, false, false, {}},
      {F::kPressureMemoryStalled, "container_pressure_memory_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to memory congestion.", C, true, false, false, {}},
      {F::kPressureMemoryWaiting, "container_pressure_memory_waiting_seconds_total", "Total time duration tasks in the container have waited due to memory congestion.", C, true, false, false, {}},
      {F::kPressureIoStalled, "container_pressure_io_stalled_seconds_total", "Total time duration no tasks in the container could make progress due to IO congestion.", C, true, false, false, {}},
      {F::kPressureIoWaiting, "container_pressure_io_waiting_seconds_total", "Total time duration tasks in the container have waited due to IO congestion.", C, true, false, false, {}},
  };
  return t;
}

}  // namespace

std::span<const MetricFamily> MetricFamilies() { return Table(); }

const MetricFamily& FamilyOf(FamilyId id) {
  const auto& t = Table();
  // Rows are in FamilyId order (checked by tests/cri).
  return t[static_cast<size_t>(id)];
}

std::vector<std::string> LabelKeys(const MetricFamily& f) {
  std::vector<std::string> keys = {"container", "id", "image", "name", "namespace", "pod"};
  keys.insert(keys.end(), f.extra_labels.begin(), f.extra_labels.end());
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string NanosecondsName(const char* seconds_name) {
  std::string s = seconds_name;
  auto pos = s.find("_seconds");
  if (pos != std::string::npos) s.replace(pos, 8, "_nanoseconds");
  return s;
}

}  // namespace statlet::cri
