#include "cri/pod_metrics.h"

#include "cri/metric_table.h"

namespace statlet::cri {
namespace v1 = ::runtime::v1;
namespace {

constexpr uint64_t kNsPerSecond = 1000000000ull;

// Which shared labels (kCriSharedLabels order) a selection keeps.
using SharedMask = std::array<bool, kSharedLabelCount>;
SharedMask KeptShared(const metrics::MetricSelection& sel) {
  SharedMask keep;
  for (size_t k = 0; k < kSharedLabelCount; ++k) {
    const std::string_view key = kCriSharedLabels[k];
    keep[k] = !(key == "id" && sel.Drops(metrics::CgroupLabel::kId)) &&
              !(key == "image" && sel.Drops(metrics::CgroupLabel::kImage));
  }
  return keep;
}

// Writes the samples of one cgroup (a container, or the pod) as CRI Metric messages.
class MetricWriter final : public metrics::SampleSink {
 public:
  MetricWriter(google::protobuf::RepeatedPtrField<v1::Metric>* out, int64_t timestamp_ns,
               std::array<std::string_view, kSharedLabelCount> shared, const SharedMask& keep)
      : out_(out), ts_(timestamp_ns), shared_(shared), keep_(keep) {}

  void StartFamily(const CriMetricFamily& f) { family_ = &f; }

  void Add(size_t, const metrics::LabelValues& labels, metrics::Value v) override {
    const CriMetricFamily& f = *family_;
    if (v.is_time()) {
      // Whole seconds under the cAdvisor name, exact nanoseconds under the sibling.
      Emit(f.name, labels, v.AsNanos() / kNsPerSecond);
      Emit(NanosecondsName(f.name), labels, v.AsNanos());
      return;
    }
    if (v.kind == metrics::Value::Kind::kDouble) {
      // Metric.value is unsigned: what it cannot hold (cAdvisor's -1 for "unlimited") has
      // no series.
      if (!(v.d >= 0) || v.d > 1.8e19) return;
      Emit(f.name, labels, static_cast<uint64_t>(v.d));
      return;
    }
    Emit(f.name, labels, v.u);
  }
  void AddHistogram(size_t, const metrics::Histogram&) override {}  // none of the CRI families
  void AddEvent(const OomEvent&, const metrics::LabelValues&, metrics::Value) override {}

 private:
  void Emit(const std::string& name, const metrics::LabelValues& labels, uint64_t value) {
    v1::Metric* m = out_->Add();
    m->set_name(name);
    m->set_timestamp(ts_);
    m->set_metric_type(family_->counter ? v1::COUNTER : v1::GAUGE);
    for (size_t k = 0; k < kSharedLabelCount; ++k) {
      if (keep_[k]) m->add_label_values(std::string(shared_[k]));
    }
    for (size_t k = 0; k < labels.n; ++k) m->add_label_values(std::string(labels.v[k]));
    m->mutable_value()->set_value(value);
  }

  google::protobuf::RepeatedPtrField<v1::Metric>* out_;
  int64_t ts_;
  std::array<std::string_view, kSharedLabelCount> shared_;
  SharedMask keep_;
  const CriMetricFamily* family_ = nullptr;
};

void WriteCgroup(metrics::SnapshotSamples& samples, const CgroupStats* cgroup, MetricWriter& w) {
  const Snapshot& snap = samples.snapshot();
  if (cgroup == nullptr || snap.cgroups.empty()) return;
  const size_t index = static_cast<size_t>(cgroup - snap.cgroups.data());
  if (index >= samples.cgroup_count()) return;  // left out by the cardinality cap
  for (const CriMetricFamily& f : CriMetricFamilies()) {
    if (!samples.Serves(f.id)) continue;
    w.StartFamily(f);
    samples.ForEachSample(f.id, index, w);
  }
}

}  // namespace

metrics::SampleRules CriSampleRules(metrics::SampleRules rules) {
  rules.network_carrier = metrics::NetworkCarrier::kPod;
  return rules;
}

void FillMetricDescriptors(v1::ListMetricDescriptorsResponse* out, const metrics::MetricSelection& selection) {
  const SharedMask keep = KeptShared(selection);
  for (const CriMetricFamily& f : CriMetricFamilies()) {
    if (!selection.Serves(f.id)) continue;
    auto add = [&](const std::string& name, const std::string& help) {
      auto* d = out->add_descriptors();
      d->set_name(name);
      d->set_help(help);
      for (size_t k = 0; k < f.label_keys.size(); ++k) {
        if (k >= kSharedLabelCount || keep[k]) d->add_label_keys(f.label_keys[k]);
      }
    };
    add(f.name, f.help);
    if (f.seconds) add(NanosecondsName(f.name), f.help + " Exact, in nanoseconds.");
  }
}

void FillPodSandboxMetrics(const CriView& view, const PodEntry& pod, metrics::SnapshotSamples& samples,
                           v1::PodSandboxMetrics* out) {
  const Snapshot& snap = *view.snapshot;
  PodInfo info = PodInfoOf(view, pod);
  const SharedMask keep = KeptShared(samples.rules().selection);
  out->set_pod_sandbox_id(pod.id);
  {
    MetricWriter w(out->mutable_metrics(), snap.timestamp_ns, {info.name, info.namespace_, "", pod.id, ""}, keep);
    WriteCgroup(samples, pod.cgroup, w);
  }
  for (int ci : pod.containers) {
    const ContainerEntry& c = view.containers[ci];
    auto* cm = out->add_container_metrics();
    cm->set_container_id(c.id);
    const ContainerMetadata* m = c.meta;
    MetricWriter w(cm->mutable_metrics(), snap.timestamp_ns,
                   {info.name, info.namespace_, m != nullptr ? std::string_view(m->container_name) : std::string_view(),
                    c.id, m != nullptr ? std::string_view(m->image) : std::string_view()},
                   keep);
    WriteCgroup(samples, c.cgroup, w);
  }
}

}  // namespace statlet::cri
