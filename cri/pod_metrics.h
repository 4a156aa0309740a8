// KEP-2371 metrics for ListMetricDescriptors / ListPodSandboxMetrics: the samples of the
// value path (metrics/snapshot_samples.h) formatted as CRI Metric messages. Per container:
// the cgroup families of metric_table.h measured on its cgroup. Per pod (container="",
// image=""): the same families measured on the pod cgroup, with the pod's network
// namespace. A family whose value the snapshot lacks has no series (never a zero).
#pragma once

#include "cri/stats_selection.h"
#include "metrics/snapshot_samples.h"
#include "proto/api.pb.h"

namespace statlet::cri {

// The families `selection` serves, without the labels it drops.
void FillMetricDescriptors(::runtime::v1::ListMetricDescriptorsResponse* out,
                           const metrics::MetricSelection& selection = {});
// `samples` is bound to view.snapshot, with NetworkCarrier::kPod; its rules' selection says
// which families and shared labels are served. A dropped `id` is dropped from every series:
// each container's series sit in that container's ContainerMetrics, which names it.
void FillPodSandboxMetrics(const CriView& view, const PodEntry& pod, metrics::SnapshotSamples& samples,
                           ::runtime::v1::PodSandboxMetrics* out);

// The value rules of the CRI edge: the daemon's rules with the network on the pod.
metrics::SampleRules CriSampleRules(metrics::SampleRules rules);

}  // namespace statlet::cri
