#include "exporters/otlp/otlp_encoder.h"

#include <algorithm>

#include "exporters/otlp/otlp_mapping.h"
#include "metrics/derived_values.h"

namespace statlet::otlp {
namespace {

namespace pm = opentelemetry::proto::metrics::v1;
namespace pc = opentelemetry::proto::common::v1;

constexpr auto kCumulative = pm::AGGREGATION_TEMPORALITY_CUMULATIVE;

void AddAttr(google::protobuf::RepeatedPtrField<pc::KeyValue>* attrs, std::string_view key, std::string_view value) {
  if (key.empty() || value.empty()) return;
  pc::KeyValue* kv = attrs->Add();
  kv->set_key(key.data(), key.size());
  kv->mutable_value()->set_string_value(value.data(), value.size());
}

// Which resource a cgroup is, if any: containers (not the pause sandbox) and the other
// cgroups of a bare host; pods.
std::optional<ResourceKind> ResourceOf(const CgroupStats& c) {
  switch (c.id.kind) {
    case CgroupKind::kContainer:
      if (c.id.meta && c.id.meta->is_sandbox) return std::nullopt;
      return ResourceKind::kContainer;
    case CgroupKind::kOther: return ResourceKind::kContainer;
    case CgroupKind::kPod: return ResourceKind::kPod;
    default: return std::nullopt;
  }
}

// "registry/repo:tag" or "repo@sha256:…" -> name and tag (empty without one).
std::pair<std::string_view, std::string_view> SplitImage(std::string_view image) {
  if (size_t at = image.find('@'); at != std::string_view::npos) return {image.substr(0, at), {}};
  size_t slash = image.rfind('/');
  size_t colon = image.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    return {image.substr(0, colon), image.substr(colon + 1)};
  }
  return {image, {}};
}

}  // namespace

// Receives one metric part's samples and appends them as points of `metric`.
class OtlpEncoder::PointSink final : public metrics::SampleSink {
 public:
  PointSink(const OtlpMetric& m, pm::Metric* metric, int64_t start_ns, int64_t time_ns, uint64_t* points)
      : m_(m), metric_(metric), start_ns_(start_ns), time_ns_(time_ns), points_(*points) {}
  void SetPart(const Part* part) { part_ = part; }

  void Add(size_t, const metrics::LabelValues& labels, metrics::Value v) override {
    if (part_ && part_->filter_label >= 0) {
      if (part_->filter_label >= labels.n || labels.v[part_->filter_label] != part_->filter_value) return;
    }
    pm::NumberDataPoint* p = NewPoint();
    for (size_t k = 0; k < labels.n && k < m_.attributes.size(); ++k)
      AddAttr(p->mutable_attributes(), m_.attributes[k], labels.v[k]);
    if (part_) AddAttr(p->mutable_attributes(), part_->fixed_key, part_->fixed_value);
    if (m_.is_double) {
      p->set_as_double(v.AsDouble());
    } else {
      p->set_as_int(v.kind == metrics::Value::Kind::kDouble ? static_cast<int64_t>(v.d) : static_cast<int64_t>(v.u));
    }
  }

  void AddHistogram(size_t, const metrics::Histogram& h) override {
    if (h.counts.empty()) return;
    pm::Histogram* hist = metric_->mutable_histogram();
    hist->set_aggregation_temporality(kCumulative);
    pm::HistogramDataPoint* p = hist->add_data_points();
    p->set_start_time_unix_nano(static_cast<uint64_t>(start_ns_));
    p->set_time_unix_nano(static_cast<uint64_t>(time_ns_));
    const size_t buckets = h.upper_bounds.size() + 1;
    uint64_t count = 0;
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) p->add_explicit_bounds(h.upper_bounds[i]);
    for (size_t i = 0; i < h.counts.size(); ++i) {
      count += h.counts[i];
      if (i < buckets) p->add_bucket_counts(h.counts[i]);
      else p->set_bucket_counts(buckets - 1, p->bucket_counts(buckets - 1) + h.counts[i]);  // fold the open tail
    }
    while (static_cast<size_t>(p->bucket_counts_size()) < buckets) p->add_bucket_counts(0);
    p->set_count(count);
    if (h.has_sum) p->set_sum(h.sum.AsDouble());
    ++points_;
  }

  void AddEvent(const OomEvent&, const metrics::LabelValues&, metrics::Value) override {}

  pm::NumberDataPoint* NewPoint() {
    pm::NumberDataPoint* p;
    if (m_.instrument == Instrument::kGauge) {
      p = metric_->mutable_gauge()->add_data_points();
    } else {
      pm::Sum* sum = metric_->mutable_sum();
      sum->set_aggregation_temporality(kCumulative);
      sum->set_is_monotonic(m_.instrument == Instrument::kCounter);
      p = sum->add_data_points();
      p->set_start_time_unix_nano(static_cast<uint64_t>(start_ns_));
    }
    p->set_time_unix_nano(static_cast<uint64_t>(time_ns_));
    ++points_;
    return p;
  }
  void AddDouble(double v, std::string_view key = {}, std::string_view value = {}) {
    pm::NumberDataPoint* p = NewPoint();
    AddAttr(p->mutable_attributes(), key, value);
    p->set_as_double(v);
  }
  void AddInt(uint64_t v, std::string_view key = {}, std::string_view value = {}) {
    pm::NumberDataPoint* p = NewPoint();
    AddAttr(p->mutable_attributes(), key, value);
    p->set_as_int(static_cast<int64_t>(v));
  }

 private:
  const OtlpMetric& m_;
  pm::Metric* metric_;
  const Part* part_ = nullptr;
  int64_t start_ns_, time_ns_;
  uint64_t& points_;
};

OtlpEncoder::OtlpEncoder(NodeResource node, metrics::SampleRules rules, size_t max_request_bytes,
                         std::string scope_version, metrics::DeviceNames::Namer namer)
    : node_(std::move(node)),
      samples_(
          [&] {
            rules.per_cpu = false;  // k8s.pod.cpu.time reads the cpu="total" series
            return std::move(rules);
          }(),
          std::move(namer)),
      max_request_bytes_(max_request_bytes),
      scope_version_(std::move(scope_version)) {}

void OtlpEncoder::SetResource(const CgroupStats& c, opentelemetry::proto::resource::v1::Resource* r) {
  auto* attrs = r->mutable_attributes();
  // The selection's dropped labels: `image` is the image attributes, `id` the cgroup path.
  const metrics::MetricSelection& sel = samples_.rules().selection;
  const bool drop_image = sel.Drops(metrics::CgroupLabel::kImage);
  const ContainerMetadata* m = c.id.meta.get();
  if (c.id.kind != CgroupKind::kPod) {
    AddAttr(attrs, "container.id",
            !c.id.container_id.empty() ? std::string_view(c.id.container_id)
            : m                        ? std::string_view(m->container_id)
                                       : std::string_view());
    if (m) {
      AddAttr(attrs, "k8s.container.name", m->container_name);
      auto [name, tag] = SplitImage(!m->image.empty() ? m->image : m->image_ref);
      if (drop_image) name = tag = {};
      AddAttr(attrs, "container.image.name", name);
      if (!tag.empty()) {
        pc::KeyValue* kv = attrs->Add();
        kv->set_key("container.image.tags");
        kv->mutable_value()->mutable_array_value()->add_values()->set_string_value(tag.data(), tag.size());
      }
    }
    AddAttr(attrs, "container.runtime.name", RuntimeKindName(c.id.runtime));
  }
  if (m) {
    AddAttr(attrs, "k8s.pod.name", m->pod_name);
    AddAttr(attrs, "k8s.namespace.name", m->pod_namespace);
  }
  AddAttr(attrs, "k8s.pod.uid",
          !c.id.pod_uid.empty() ? std::string_view(c.id.pod_uid)
          : m                   ? std::string_view(m->pod_uid)
                                : std::string_view());
  if (!metrics::DropsIdOf(sel, c.id)) AddAttr(attrs, "statlet.cgroup.path", c.id.cgroup_path);
  for (const auto& [k, v] : node_.attributes) {
    bool taken = false;
    for (const pc::KeyValue& kv : *attrs) taken |= kv.key() == k;
    if (!taken) AddAttr(attrs, k, v);
  }
}

void OtlpEncoder::SetScope(pm::ResourceMetrics* rm) {
  rm->set_schema_url(kSchemaUrl.data(), kSchemaUrl.size());
  pm::ScopeMetrics* scope = rm->add_scope_metrics();
  scope->mutable_scope()->set_name("statlet");
  scope->mutable_scope()->set_version(scope_version_);
  scope->set_schema_url(kSchemaUrl.data(), kSchemaUrl.size());
}

void OtlpEncoder::EncodeCgroup(size_t i, int64_t start_ns, pm::ResourceMetrics* rm) {
  const Snapshot& s = samples_.snapshot();
  const CgroupStats& c = s.cgroups[i];
  const ResourceKind kind = *ResourceOf(c);
  SetResource(c, rm->mutable_resource());
  SetScope(rm);
  pm::ScopeMetrics* scope = rm->mutable_scope_metrics(0);
  const int64_t now = s.timestamp_ns;
  for (const OtlpMetric& m : OtlpMetrics()) {
    if (m.resource != kind) continue;
    if (m.derived != Derived::kNone && !samples_.Serves(DerivedFamily(m.derived))) continue;
    pm::Metric* metric = scope->add_metrics();
    PointSink sink(m, metric, start_ns, now, &points_);
    switch (m.derived) {
      case Derived::kNone:
        for (size_t p = 0; p < m.part_count; ++p) {
          sink.SetPart(&m.parts[p]);
          samples_.ForEachSample(m.parts[p].family, i, sink);
        }
        break;
      case Derived::kCpuUsage:
        if (auto v = metrics::CpuUsageCores(c.cpu)) sink.AddDouble(*v);
        break;
      case Derived::kMemoryAvailable:
        if (auto v = metrics::MemoryAvailableBytes(c.memory)) sink.AddInt(*v);
        break;
      case Derived::kUptime:
        if (auto start = metrics::StartTimeNs(c))
          sink.AddDouble(static_cast<double>(std::max<int64_t>(0, now - *start)) / 1e9);
        break;
      case Derived::kCpuLimit:
        if (auto v = metrics::CpuLimitCores(c.cpu)) sink.AddDouble(*v);
        break;
      case Derived::kMemoryLimit:
        if (auto v = metrics::MemoryLimitBytes(c.memory)) sink.AddInt(*v);
        break;
      case Derived::kPagingFaults:
        if (auto f = metrics::PagingFaultsOf(c.memory)) {
          sink.AddInt(f->minor, DerivedAttribute(m.derived), "minor");
          sink.AddInt(f->major, DerivedAttribute(m.derived), "major");
        }
        break;
    }
    if (metric->data_case() == pm::Metric::DATA_NOT_SET) {
      scope->mutable_metrics()->RemoveLast();  // no points: no metric
      continue;
    }
    metric->set_name(m.name.data(), m.name.size());
    metric->set_unit(m.unit.data(), m.unit.size());
    metric->set_description(m.description.data(), m.description.size());
  }
}

void OtlpEncoder::Encode(const Snapshot& snapshot, std::vector<ExportRequest>* out) {
  samples_.Bind(snapshot);
  points_ = 0;
  std::vector<std::unique_ptr<pm::ResourceMetrics>> rms;
  std::map<std::string, int64_t> seen;
  for (size_t i = 0; i < samples_.cgroup_count(); ++i) {
    const CgroupStats& c = snapshot.cgroups[i];
    if (!ResourceOf(c)) continue;
    // A cumulative stream starts at the container's start, else when first seen.
    auto it = first_seen_.find(c.id.cgroup_path);
    int64_t first = it != first_seen_.end() ? it->second : snapshot.timestamp_ns;
    seen.emplace(c.id.cgroup_path, first);
    int64_t start = metrics::StartTimeNs(c).value_or(first);
    if (start > snapshot.timestamp_ns) start = snapshot.timestamp_ns;
    auto rm = std::make_unique<pm::ResourceMetrics>();
    EncodeCgroup(i, start, rm.get());
    if (rm->scope_metrics(0).metrics_size() > 0) rms.push_back(std::move(rm));
  }
  first_seen_.swap(seen);  // vanished cgroups are forgotten
  if (auto node = EncodeNode(snapshot.timestamp_ns)) rms.push_back(std::move(node));
  Pack(&rms, out);
}

std::unique_ptr<pm::ResourceMetrics> OtlpEncoder::EncodeNode(int64_t time_ns) {
  if (extras_.empty()) return nullptr;
  std::vector<metrics::ExtraFamily> families;
  for (const metrics::ExtraSource* source : extras_) source->Collect(&families);
  if (node_start_ns_ == 0) node_start_ns_ = time_ns;
  const uint64_t start = static_cast<uint64_t>(node_start_ns_), now = static_cast<uint64_t>(time_ns);
  auto rm = std::make_unique<pm::ResourceMetrics>();
  for (const auto& [k, v] : node_.attributes) AddAttr(rm->mutable_resource()->mutable_attributes(), k, v);
  SetScope(rm.get());
  pm::ScopeMetrics* scope = rm->mutable_scope_metrics(0);
  for (const metrics::ExtraFamily& f : families) {
    if (!samples_.rules().selection.ServesExtra(f.name)) continue;
    const OtlpNodeMetric* m = OtlpNodeMetricOf(f.name);
    if (m == nullptr || !SuitsType(m->instrument, f.type) || f.series.empty()) continue;
    pm::Metric* metric = scope->add_metrics();
    metric->set_name(m->name.data(), m->name.size());
    metric->set_unit(m->unit.data(), m->unit.size());
    metric->set_description(f.help.data(), f.help.size());
    for (const metrics::ExtraSeries& s : f.series) {
      google::protobuf::RepeatedPtrField<pc::KeyValue>* attrs;
      if (m->instrument == Instrument::kHistogram) {
        if (s.bucket_counts.size() != f.bounds.size() + 1) continue;  // not a histogram of these bounds
        pm::Histogram* h = metric->mutable_histogram();
        h->set_aggregation_temporality(kCumulative);
        pm::HistogramDataPoint* p = h->add_data_points();
        p->set_start_time_unix_nano(start);
        p->set_time_unix_nano(now);
        uint64_t count = 0;
        for (double b : f.bounds) p->add_explicit_bounds(b);
        for (uint64_t c : s.bucket_counts) {
          p->add_bucket_counts(c);
          count += c;
        }
        p->set_count(count);
        p->set_sum(s.sum.AsDouble());
        attrs = p->mutable_attributes();
      } else {
        pm::NumberDataPoint* p;
        if (m->instrument == Instrument::kGauge) {
          p = metric->mutable_gauge()->add_data_points();
        } else {
          pm::Sum* sum = metric->mutable_sum();
          sum->set_aggregation_temporality(kCumulative);
          sum->set_is_monotonic(m->instrument == Instrument::kCounter);
          p = sum->add_data_points();
          p->set_start_time_unix_nano(start);
        }
        p->set_time_unix_nano(now);
        if (m->is_double) {
          p->set_as_double(s.value.AsDouble());
        } else {
          p->set_as_int(s.value.kind == metrics::Value::Kind::kDouble ? static_cast<int64_t>(s.value.d)
                                                                      : static_cast<int64_t>(s.value.u));
        }
        attrs = p->mutable_attributes();
      }
      for (size_t k = 0; k < f.labels.size() && k < s.label_values.size() && k < m->attributes.size(); ++k) {
        AddAttr(attrs, m->attributes[k], s.label_values[k]);
      }
      ++points_;
    }
    if (metric->data_case() == pm::Metric::DATA_NOT_SET) scope->mutable_metrics()->RemoveLast();
  }
  if (scope->metrics_size() == 0) return nullptr;
  return rm;
}

void OtlpEncoder::Pack(std::vector<std::unique_ptr<pm::ResourceMetrics>>* rms, std::vector<ExportRequest>* out) {
  // Each repeated field entry costs its length prefix and a tag on top of its bytes.
  constexpr size_t kEntryOverhead = 6;
  ExportRequest current;
  size_t current_bytes = 0;
  auto flush = [&] {
    if (current.resource_metrics_size() == 0) return;
    out->push_back(std::move(current));
    current = ExportRequest();
    current_bytes = 0;
  };
  for (auto& rm : *rms) {
    const size_t bytes = rm->ByteSizeLong() + kEntryOverhead;
    if (bytes <= max_request_bytes_) {
      if (current_bytes + bytes > max_request_bytes_) flush();
      current.mutable_resource_metrics()->AddAllocated(rm.release());
      current_bytes += bytes;
      continue;
    }
    // One resource over the limit: its metrics in pieces, each with the resource.
    flush();
    pm::ScopeMetrics* scope = rm->mutable_scope_metrics(0);
    auto piece = [&] {
      pm::ResourceMetrics* p = current.add_resource_metrics();
      *p->mutable_resource() = rm->resource();
      p->set_schema_url(rm->schema_url());
      pm::ScopeMetrics* ps = p->add_scope_metrics();
      *ps->mutable_scope() = scope->scope();
      ps->set_schema_url(scope->schema_url());
      current_bytes = p->ByteSizeLong() + kEntryOverhead;
      return ps;
    };
    pm::ScopeMetrics* ps = piece();
    const size_t header = current_bytes;
    for (int k = 0; k < scope->metrics_size(); ++k) {
      const size_t mbytes = scope->metrics(k).ByteSizeLong() + kEntryOverhead;
      if (current_bytes + mbytes > max_request_bytes_ && current_bytes > header) {
        flush();
        ps = piece();
      }
      *ps->add_metrics() = std::move(*scope->mutable_metrics(k));
      current_bytes += mbytes;
    }
    flush();
  }
  flush();
}

}  // namespace statlet::otlp
