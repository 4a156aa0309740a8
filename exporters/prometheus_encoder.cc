#include "exporters/prometheus_encoder.h"

#include <algorithm>

#include "exporters/staged_text.h"
#include "metrics/snapshot_samples_visit.h"

namespace statlet {
namespace {

void BuildHeader(const MetricFamily& f, ExpositionFormat format, std::string* out) {
  if (format == ExpositionFormat::kText004) {
    out->append("# HELP ").append(f.name).push_back(' ');
    AppendEscapedHelp(out, f.help, format);
    out->append("\n# TYPE ").append(f.name).push_back(' ');
    out->append(TextType(f)).push_back('\n');
    return;
  }
  std::string_view name = OpenMetricsFamilyName(f);
  if (OpenMetricsType(f) == "unknown") name = f.name;  // keep the sample name unchanged
  out->append("# TYPE ").append(name).push_back(' ');
  out->append(OpenMetricsType(f)).push_back('\n');
  if (std::string_view unit = OpenMetricsUnit(f); !unit.empty() && OpenMetricsType(f) != "unknown") {
    out->append("# UNIT ").append(name).push_back(' ');
    out->append(unit).push_back('\n');
  }
  out->append("# HELP ").append(name).push_back(' ');
  AppendEscapedHelp(out, f.help, format);
  out->push_back('\n');
}

void AppendLabel(std::string* out, bool* first, std::string_view name, std::string_view value) {
  if (value.empty()) return;
  out->push_back(*first ? '{' : ',');
  *first = false;
  out->append(name).append("=\"");
  AppendEscapedLabelValue(out, value);
  out->push_back('"');
}

// Whether two metadata objects render the same label block. The runtime client republishes
// metadata when only stats in it changed (the writable layer, every few seconds); those
// must not cost a re-render of every block.
bool SameLabels(const ContainerMetadata* a, const ContainerMetadata* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  return a->container_id == b->container_id && a->container_name == b->container_name &&
         a->is_sandbox == b->is_sandbox && a->image == b->image && a->image_ref == b->image_ref &&
         a->pod_name == b->pod_name && a->pod_namespace == b->pod_namespace;
}

// The cgroup labels of a cgroup, sorted, as the kubelet's cAdvisor labels them:
// `{container="…",id="…",image=…,name=…,namespace=…,pod=…` (no closing brace; unknown
// values left out; `*first` says whether "{" is still to come). A pod cgroup has its pod and
// namespace only; a sandbox (pause) container no container name.
void AppendCgroupLabels(std::string* out, const Identity& id, bool* first) {
  const ContainerMetadata* m = id.meta.get();
  std::string_view container, image, name, ns, pod;
  if (id.kind == CgroupKind::kContainer) {
    // cAdvisor (containerd) aliases a container by its id: that is its `name`.
    name = !id.container_id.empty() ? std::string_view(id.container_id)
                                    : (m ? std::string_view(m->container_id) : std::string_view());
    if (m) {
      if (!m->is_sandbox) container = m->container_name;
      image = !m->image.empty() ? std::string_view(m->image) : std::string_view(m->image_ref);
      pod = m->pod_name;
      ns = m->pod_namespace;
    }
  } else if (id.kind == CgroupKind::kPod && m) {
    pod = m->pod_name;
    ns = m->pod_namespace;
  }
  AppendLabel(out, first, "container", container);
  AppendLabel(out, first, "id", id.cgroup_path.empty() ? std::string_view("/") : id.cgroup_path);
  AppendLabel(out, first, "image", image);
  AppendLabel(out, first, "name", name);
  AppendLabel(out, first, "namespace", ns);
  AppendLabel(out, first, "pod", pod);
}

char* WriteValue(char* p, const metrics::Value& v) {
  using K = metrics::Value::Kind;
  switch (v.kind) {
    case K::kCount: return WriteUint(p, v.u);
    case K::kNanoseconds: return WriteScaledUint(p, v.u, 9);
    case K::kMicroseconds: return WriteScaledUint(p, v.u, 6);
    case K::kDouble: return WriteDouble(p, v.d);
  }
  return p;
}

}  // namespace

// The sink the value path writes into: one family at a time.
class PrometheusEncoder::Writer final : public metrics::SampleSink {
 public:
  // Overwrites *out from its start.
  Writer(PrometheusEncoder* enc, std::string* out) : enc_(*enc), text_(out, 0) {}
  void StartFamily(const MetricFamily& f, std::string_view header) {
    family_ = &f;
    cgroup_ = SIZE_MAX;
    text_.Append(header);
  }

  // Inlined into each rule of the visit: a sample without labels then builds no LabelValues.
  [[gnu::always_inline]] void Add(size_t cgroup, const metrics::LabelValues& labels, metrics::Value v) override {
    std::string_view extra;
    if (labels.n) {
      // Rendered label suffixes are cached per (family, position within the cgroup).
      if (cgroup != cgroup_) {
        cgroup_ = cgroup;
        position_ = 0;
      }
      extra = enc_.ExtraFor(*family_, position_++, labels);
    }
    Line({}, cgroup, extra, v);
  }

  void AddHistogram(size_t cgroup, const metrics::Histogram& h) override {
    // Cumulative `le` buckets; the last bucket is open-ended, so it only counts towards +Inf.
    uint64_t cumulative = 0;
    for (size_t i = 0; i + 1 < h.counts.size() && i < h.upper_bounds.size(); ++i) {
      cumulative += h.counts[i];
      Line("_bucket", cgroup, enc_.LeLabel(i, h.upper_bounds[i]), metrics::Value::Count(cumulative));
    }
    for (size_t i = std::min(h.upper_bounds.size(), h.counts.size() - 1); i < h.counts.size(); ++i) {
      cumulative += h.counts[i];
    }
    Line("_bucket", cgroup, ",le=\"+Inf\"", metrics::Value::Count(cumulative));
    // OpenMetrics: _count if and only if _sum.
    if (!h.has_sum) return;
    Line("_count", cgroup, {}, metrics::Value::Count(cumulative));
    Line("_sum", cgroup, {}, h.sum);
  }

  void AddEvent(const OomEvent& e, const metrics::LabelValues& labels, metrics::Value v) override {
    // Labels come from the event alone (the victim cgroup's identity as the Sampler
    // resolved it), so a series keeps them after the cgroup is gone.
    std::string& line = enc_.event_line_;
    line.assign(family_->name);
    bool first = true;
    if (e.cgroup) {
      AppendCgroupLabels(&line, *e.cgroup, &first);
    } else {
      AppendLabel(&line, &first, "id", e.cgroup_path);
    }
    for (size_t k = 0; k < labels.n && k < family_->labels.size(); ++k) {
      AppendLabel(&line, &first, family_->labels[k], labels.v[k]);
    }
    line.append(first ? " " : "} ");
    text_.Append(line);
    char* p = text_.Reserve(kMaxNumberChars + 1);
    p = WriteValue(p, v);
    *p++ = '\n';
    text_.Commit(p);
    ++enc_.series_;
  }

 private:
  // `name` + suffix + the cgroup's block + extra + "} " + value + "\n". A block is never
  // empty (id is always set), so extras start with ','.
  [[gnu::always_inline]] void Line(std::string_view suffix, size_t cgroup, std::string_view extra, metrics::Value v) {
    const std::string_view name = family_->name;
    const std::string& block = enc_.cache_[cgroup].block;
    const size_t head = name.size() + suffix.size() + block.size() + extra.size() + 2;
    char* p = text_.Reserve(head + kMaxNumberChars + 1);
    p = StagedText::Put(p, name);
    p = StagedText::Put(p, suffix);
    p = StagedText::Put(p, block);
    p = StagedText::Put(p, extra);
    *p++ = '}';
    *p++ = ' ';
    p = WriteValue(p, v);
    *p++ = '\n';
    text_.Commit(p);
    ++enc_.series_;
  }

  PrometheusEncoder& enc_;
  StagedText text_;
  const MetricFamily* family_ = nullptr;
  size_t cgroup_ = SIZE_MAX;  // the cgroup whose samples position_ counts
  size_t position_ = 0;
};

PrometheusEncoder::PrometheusEncoder(metrics::SampleRules rules, metrics::DeviceNames::Namer namer)
    : samples_(std::move(rules), std::move(namer)) {
  for (const MetricFamily& f : AllMetricFamilies()) {
    BuildHeader(f, ExpositionFormat::kText004, &text_headers_[static_cast<size_t>(f.id)]);
    BuildHeader(f, ExpositionFormat::kOpenMetrics100, &om_headers_[static_cast<size_t>(f.id)]);
  }
}

void PrometheusEncoder::RenderBlock(const CgroupStats& c, CgroupLabels* e) {
  e->path = c.id.cgroup_path;
  e->cgroup_id = c.id.cgroup_id;
  e->created_ns = c.id.created_ns.value_or(0);
  e->meta = c.id.meta;
  e->block.clear();
  bool first = true;
  AppendCgroupLabels(&e->block, c.id, &first);
  ++blocks_rendered_;
}

void PrometheusEncoder::SyncLabelCache(const Snapshot& s, size_t count) {
  // Both the snapshot and the cache are sorted by path: merge them, moving entries that are
  // still valid (moves keep their buffers) and rendering only new or changed cgroups.
  scratch_.swap(cache_);
  size_t old = 0;
  size_t kept = 0;
  for (size_t i = 0; i < count; ++i) {
    const CgroupStats& c = s.cgroups[i];
    while (old < scratch_.size() && scratch_[old].path < c.id.cgroup_path) ++old;
    if (kept == cache_.size()) cache_.emplace_back();
    CgroupLabels& slot = cache_[kept++];
    if (old < scratch_.size() && scratch_[old].path == c.id.cgroup_path &&
        scratch_[old].cgroup_id == c.id.cgroup_id && scratch_[old].created_ns == c.id.created_ns.value_or(0) &&
        SameLabels(scratch_[old].meta.get(), c.id.meta.get())) {
      std::swap(slot, scratch_[old]);
      slot.meta = c.id.meta;
      ++old;
    } else {
      RenderBlock(c, &slot);
    }
  }
  cache_.resize(kept);
  // scratch_ keeps the evicted entries' buffers for reuse by later renders; drop their
  // metadata references now so that runtime metadata of dead containers is freed.
  for (auto& e : scratch_) e.meta.reset();
}

const std::string& PrometheusEncoder::ExtraFor(const MetricFamily& f, size_t position,
                                               const metrics::LabelValues& labels) {
  std::vector<Extra>& slots = extras_[static_cast<size_t>(f.id)];
  if (slots.size() <= position) slots.resize(position + 1);
  Extra& e = slots[position];
  bool same = e.n == labels.n;
  for (size_t k = 0; same && k < labels.n; ++k) same = e.values[k] == labels.v[k];
  if (same) return e.rendered;
  // A new combination at this position: render it (into the slot's reused buffers).
  e.n = labels.n;
  e.rendered.clear();
  for (size_t k = 0; k < labels.n; ++k) {
    e.values[k].assign(labels.v[k]);
    if (k >= f.labels.size()) continue;
    e.rendered.push_back(',');
    e.rendered.append(f.labels[k]).append("=\"");
    AppendEscapedLabelValue(&e.rendered, labels.v[k]);
    e.rendered.push_back('"');
  }
  return e.rendered;
}

const std::string& PrometheusEncoder::LeLabel(size_t bucket, double bound) {
  while (le_labels_.size() <= bucket) le_labels_.emplace_back();
  std::string& s = le_labels_[bucket];
  if (s.empty()) {
    s = ",le=\"";
    AppendCanonicalFloat(&s, bound);
    s.push_back('"');
  }
  return s;
}

void PrometheusEncoder::Encode(const Snapshot& s, ExpositionFormat format, std::string* out) {
  series_ = 0;
  samples_.Bind(s);
  const size_t count = samples_.cgroup_count();
  SyncLabelCache(s, count);
  const auto& headers = format == ExpositionFormat::kText004 ? text_headers_ : om_headers_;
  Writer w(this, out);  // cuts *out to what was written when it goes
  for (const MetricFamily& f : AllMetricFamilies()) {
    w.StartFamily(f, headers[static_cast<size_t>(f.id)]);
    switch (f.scope) {
      case MetricScope::kCgroup:
        samples_.ForEachSampleIn(f.id, 0, count, w);
        break;
      case MetricScope::kEvent: samples_.ForEachEventSample(f.id, w); break;
    }
  }
}

}  // namespace statlet
