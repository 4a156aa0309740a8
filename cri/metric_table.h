// The metric families served through ListMetricDescriptors / ListPodSandboxMetrics: the
// cgroup families of statlet's one family table (metrics/families.h) whose row says `cri`:
// the cAdvisor-compatible ones, which hold every family KEP-2371 names, and statlet's own
// that ask for it.
//
// Label keys follow the runtimes (containerd 2.3's ListPodSandboxMetrics, and CRI-O since it
// dropped `name` to match it): pod, namespace, container, id, image, then the family's own
// labels. Pod-level series carry container="" and image="" (as the kubelet's cAdvisor labels
// a pod cgroup, and containerd its pod-level series); id is the sandbox id, or the container
// id. Seconds-valued families are listed twice: under their cAdvisor name in whole seconds
// and under a `_nanoseconds` sibling, exact (see api.proto).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "metrics/families.h"

namespace statlet::cri {

struct CriMetricFamily {
  FamilyId id;
  std::string name;
  std::string help;
  bool counter = false;
  bool seconds = false;                 // a `_seconds` family: whole seconds + a `_nanoseconds` sibling
  std::vector<std::string> label_keys;  // the shared keys, then the family's own
};

// The shared label keys, in order.
inline constexpr const char* kCriSharedLabels[] = {"pod", "namespace", "container", "id", "image"};
inline constexpr size_t kSharedLabelCount = std::size(kCriSharedLabels);

std::span<const CriMetricFamily> CriMetricFamilies();
// The CRI family of a shared-table family; nullptr when the CRI does not serve it.
const CriMetricFamily* CriFamily(FamilyId id);

// "container_cpu_usage_seconds_total" -> "container_cpu_usage_nanoseconds_total".
std::string NanosecondsName(const std::string& seconds_name);

}  // namespace statlet::cri
