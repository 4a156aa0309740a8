// The one table of the metric families statlet derives from a snapshot: names, types,
// help, units, labels, where each value comes from and how it compares with the kubelet's
// cAdvisor. Every edge renders from it: the Prometheus encoder, the CRI metric calls
// (ListMetricDescriptors / ListPodSandboxMetrics), OTLP, and docs/metrics.md.
//
// A family is one FamilyId and one row, side by side in metrics/family_rows.h. Names, types
// and labels of the container_* families follow cAdvisor
// (lib/metrics/prometheus.go) so that dashboards and alerts written against the kubelet's
// /metrics/cadvisor keep working. statlet's own instrumentation (collection and scrape
// durations, CRI calls, probe and runtime states) is not here: it lives in a prometheus-cpp
// registry (exporters/self_metrics.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "snapshot/snapshot.h"

namespace statlet {

// kHistogram: cumulative `_bucket{le}` series, then `_count` and `_sum`, per cgroup.
enum class MetricType : uint8_t { kCounter, kGauge, kHistogram };

// Where a family's series hang: one series set per reported cgroup, or one series per
// event of the snapshot's bounded recent-event list (carrying the cgroup labels of the
// cgroup the event happened in).
enum class MetricScope : uint8_t { kCgroup, kEvent };

// The families, one id each (their list, with each family's row, is metrics/family_rows.h,
// included at the end of this file).
enum class FamilyId : uint16_t;

// A family whose one sample per cgroup is a snapshot field as it is (no labels, no rule):
// the row names the field's accessor, a plain function known at compile time, so the
// encoder's loop over the family calls it directly (metrics/snapshot_samples_visit.h).
// Families whose values need a rule (labels, loops, limits, fallbacks) leave it empty and
// have their case in SnapshotSamples::VisitCgroup.
struct FieldValue {
  // kNanos: a duration in nanoseconds (the family's unit is seconds); kNone: no field.
  enum class Kind : uint8_t { kNone, kCount, kNanos };
  const Opt<uint64_t>& (*get)(const CgroupStats&) = nullptr;
  Kind kind = Kind::kNone;
  // Whether the row names a field (a constant: comparing a function's address with null is
  // not one where null pointer checks are kept, as under the sanitizers).
  constexpr bool set() const { return kind != Kind::kNone; }
};

struct MetricFamily {
  FamilyId id;
  std::string_view name;  // exposition name of the samples (counters end in _total)
  MetricType type;
  MetricScope scope;
  std::string_view unit;  // base unit ("seconds", "bytes", "pages", "ratio"), "" if a count
  std::string_view help;
  // Labels beyond the cgroup labels (id, name, image, container, pod, namespace), in
  // exposition order. A histogram's `le` is listed here too.
  std::span<const std::string_view> labels;
  bool cadvisor;  // name, type and labels as cAdvisor exposes them
  // How the value differs from the kubelet's cAdvisor for the same name ("" when it is the
  // same); for statlet's own families, empty.
  std::string_view cadvisor_note;
  // Where the value comes from, for docs and the CRI descriptors.
  std::string_view v2_source;
  std::string_view v1_source;
  // The value, when it is a snapshot field as it is (see FieldValue); else a rule.
  FieldValue value = {};
  // Served over the CRI (ListMetricDescriptors, ListPodSandboxMetrics; the kubelet's
  // /metrics/cadvisor passes them on): the cAdvisor families, and statlet's own that say so.
  bool cri = cadvisor;
};

// Labels every cgroup-scope series may carry on /metrics, in exposition order (sorted, as
// client_golang writes them). A label whose value is unknown or empty is left out, which
// Prometheus treats the same as an empty value.
inline constexpr std::string_view kCgroupLabels[] = {"container", "id", "image", "name", "namespace", "pod"};

std::span<const MetricFamily> AllMetricFamilies();
const MetricFamily& Family(FamilyId id);
// nullptr when unknown.
const MetricFamily* FindFamily(std::string_view name);

// cAdvisor families the kubelet's /metrics/cadvisor exposes (or cAdvisor offers) that
// statlet does not serve, and why; listed in docs/metrics.md.
struct NotServedFamily {
  std::string_view name;
  std::string_view reason;
};
std::span<const NotServedFamily> NotServedCadvisorFamilies();

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

// The families themselves: FamilyId, kFamilyCount and the rows.
#include "metrics/family_rows.h"
