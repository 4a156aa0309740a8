// The metric families served through ListMetricDescriptors / ListPodSandboxMetrics: the
// cAdvisor-compatible cgroup families of statlet's one family table
// (exporters/metric_families.h), which holds every family KEP-2371 names.
//
// Label keys: the shared cgroup labels (container, id, image, name, namespace, pod) plus
// the family's own, sorted as cAdvisor's exposition shows them. Seconds-valued families
// are listed twice: under their cAdvisor name in whole seconds and under a `_nanoseconds`
// sibling, exact (see api.proto).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "exporters/metric_families.h"

namespace statlet::cri {

struct CriMetricFamily {
  std::string name;
  std::string help;
  bool counter = false;
  bool seconds = false;    // a `_seconds` family: whole seconds + a `_nanoseconds` sibling
  bool pod_level = false;  // the pod network families: series carry container="POD"
  std::vector<std::string> label_keys;        // sorted
  std::vector<int> label_source;              // per key: index into [shared 6..., own...]
};

std::span<const CriMetricFamily> CriMetricFamilies();
// The CRI family of a shared-table family; nullptr when the CRI does not serve it.
const CriMetricFamily* CriFamily(FamilyId id);

// "container_cpu_usage_seconds_total" -> "container_cpu_usage_nanoseconds_total".
std::string NanosecondsName(const std::string& seconds_name);

inline constexpr size_t kSharedLabelCount = 6;

}  // namespace statlet::cri
