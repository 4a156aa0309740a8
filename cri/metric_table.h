// The metric families statlet serves through ListMetricDescriptors/ListPodSandboxMetrics:
// every family KEP-2371 lists as required or optional, with cAdvisor's names, help and
// labels. One row per family; pod_metrics.cc computes the values.
//
// Labels: cAdvisor's container labels (container, id, image, name, namespace, pod) plus
// the family's own, all in the lexical order cAdvisor's exposition shows them in.
// Seconds-valued families also get a `_nanoseconds` sibling (see api.proto).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace statlet::cri {

enum class FamilyId : uint8_t {
  kCpuCfsPeriods, kCpuCfsThrottledPeriods, kCpuCfsThrottledSeconds, kCpuSystemSeconds,
  kCpuUsageSeconds, kCpuUserSeconds, kFileDescriptors, kFsLimitBytes, kFsUsageBytes,
  kFsReadsBytes, kFsReads, kFsWritesBytes, kFsWrites, kLastSeen, kMemoryCache,
  kMemoryFailures, kMemoryMappedFile, kMemoryMaxUsage, kMemoryRss, kMemorySwap,
  kMemoryUsage, kMemoryWorkingSet, kOomEvents, kProcesses, kSockets, kSpecCpuPeriod,
  kSpecCpuShares, kSpecMemoryLimit, kSpecMemorySwapLimit, kStartTimeSeconds, kThreads,
  kThreadsMax,
  kNetworkReceiveBytes, kNetworkReceivePackets, kNetworkReceiveErrors, kNetworkReceiveDropped,
  kNetworkTransmitBytes, kNetworkTransmitPackets, kNetworkTransmitErrors, kNetworkTransmitDropped,
  // optional in KEP-2371
  kBlkioDeviceUsage, kFsInodesFree, kFsInodesTotal, kHugetlbUsage, kHugetlbMaxUsage,
  kSpecCpuQuota, kSpecMemoryReservationLimit, kUlimitsSoft,
  kPressureCpuStalled, kPressureCpuWaiting, kPressureMemoryStalled, kPressureMemoryWaiting,
  kPressureIoStalled, kPressureIoWaiting,
};

struct MetricFamily {
  FamilyId id;
  const char* name;
  const char* help;
  bool counter;
  bool seconds;          // value in seconds: served whole, plus a _nanoseconds sibling
  bool pod_level;        // a pod-network family: series carry container="POD"
  bool required;         // KEP-2371 required (else optional)
  std::vector<const char*> extra_labels;  // the family's own label keys
};

// All families, in the order descriptors are listed.
std::span<const MetricFamily> MetricFamilies();
const MetricFamily& FamilyOf(FamilyId id);

// The sorted label keys of a family (shared keys + its own).
std::vector<std::string> LabelKeys(const MetricFamily& f);
// "container_cpu_usage_seconds_total" -> "container_cpu_usage_nanoseconds_total".
std::string NanosecondsName(const char* seconds_name);

}  // namespace statlet::cri
