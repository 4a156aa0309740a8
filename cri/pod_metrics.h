// KEP-2371 metrics for ListMetricDescriptors / ListPodSandboxMetrics, from a CriView.
// Per container: the cgroup families of metric_table.h. Per pod (container="POD"): the
// same families measured on the pod cgroup, plus the pod network namespace's interfaces.
// A family whose value the snapshot lacks has no series (never a zero).
#pragma once

#include "cri/proto/api.pb.h"
#include "cri/stats_selection.h"

namespace statlet::cri {

void FillMetricDescriptors(::runtime::v1::ListMetricDescriptorsResponse* out);
void FillPodSandboxMetrics(const CriView& view, const PodEntry& pod, ::runtime::v1::PodSandboxMetrics* out);

}  // namespace statlet::cri
