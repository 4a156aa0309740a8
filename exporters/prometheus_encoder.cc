#include "exporters/prometheus_encoder.h"

#include <algorithm>
#include <cstring>

#include "base/attributes.h"
#include "exporters/series_line.h"
#include "exporters/staged_text.h"
#include "metrics/snapshot_samples_visit.h"

namespace statlet {

using series_line::AppendPaddedLine;
using series_line::AppendSuffixedLine;
using series_line::DoubleMemo;
using series_line::kCopyChunk;
using series_line::PutValue;
using series_line::SameValues;

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
// Labels the selection drops are left out (metrics::MetricSelection decides which).
void AppendCgroupLabels(std::string* out, const Identity& id, const metrics::MetricSelection& sel, bool* first) {
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
  if (!metrics::DropsIdOf(sel, id))
    AppendLabel(out, first, "id", id.cgroup_path.empty() ? std::string_view("/") : id.cgroup_path);
  if (!sel.Drops(metrics::CgroupLabel::kImage)) AppendLabel(out, first, "image", image);
  AppendLabel(out, first, "name", name);
  AppendLabel(out, first, "namespace", ns);
  AppendLabel(out, first, "pod", pod);
}

}  // namespace

// The sink the value path writes into: one family at a time.
// `Text` is where the lines go: a StagedText (Encode), or EncodeKept's chunks (FreshText).
template <class Text>
class PrometheusEncoder::Writer final : public metrics::SampleSink {
 public:
  Writer(PrometheusEncoder* enc, Text& text)
      : enc_(*enc), text_(text), blocks_(enc->blocks_.data()), starts_(enc->block_starts_.data()) {}
  ~Writer() { enc_.series_ += series_; }

  void StartFamily(const MetricFamily& f, std::string_view header) {
    family_ = &f;
    const size_t id = static_cast<size_t>(f.id);
    name_ = enc_.names_.data() + id * enc_.name_stride_;
    name_size_ = f.name.size();
    extras_ = &enc_.extras_[id];
    cgroup_ = SIZE_MAX;
    text_.Append(header);
  }

  // Inlined into each family's loop: a sample without labels then builds no LabelValues.
  STATLET_ALWAYS_INLINE void Add(size_t cgroup, const metrics::LabelValues& labels, metrics::Value v) override {
    const char* extra = nullptr;
    size_t extra_size = 0;
    if (labels.n) {
      // Rendered label suffixes are cached per (family, position within the cgroup).
      if (cgroup != cgroup_) {
        cgroup_ = cgroup;
        position_ = 0;
      }
      const size_t position = position_++;
      const Extra* e = position < extras_->size() ? &(*extras_)[position] : nullptr;
      if (e == nullptr || !SameValues(*e, labels)) [[unlikely]]
        e = &enc_.ExtraFor(*family_, position, labels);
      extra = e->rendered.data();
      extra_size = e->size;
    }
    // One reservation per series: name, block, extra, "} ", the value, "\n", chunk slack.
    const size_t block = starts_[cgroup];
    AppendPaddedLine(text_, name_, name_size_, blocks_ + block, starts_[cgroup + 1] - block, extra, extra_size, v,
                     *enc_.doubles_);
    ++series_;
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
      AppendCgroupLabels(&line, *e.cgroup, enc_.samples_.rules().selection, &first);
    } else {
      AppendLabel(&line, &first, "id", e.cgroup_path);
    }
    for (size_t k = 0; k < labels.n && k < family_->labels.size(); ++k) {
      AppendLabel(&line, &first, family_->labels[k], labels.v[k]);
    }
    line.append(first ? " " : "} ");
    text_.Append(line);
    char* p = text_.Reserve(kMaxNumberChars + 1);
    p = PutValue(p, v, *enc_.doubles_);
    *p++ = '\n';
    text_.Commit(p);
    ++series_;
  }

 private:
  // `name` + suffix + the cgroup's block + extra + "} " + value + "\n". A block is never
  // empty (id is always set), so extras start with ','.
  void Line(std::string_view suffix, size_t cgroup, std::string_view extra, metrics::Value v) {
    const std::string_view block(blocks_ + starts_[cgroup], starts_[cgroup + 1] - starts_[cgroup]);
    AppendSuffixedLine(text_, family_->name, suffix, block, extra, v, *enc_.doubles_);
    ++series_;
  }

  PrometheusEncoder& enc_;
  Text& text_;
  const char* const blocks_;
  const size_t* const starts_;
  const MetricFamily* family_ = nullptr;
  const char* name_ = nullptr;  // padded
  size_t name_size_ = 0;
  const std::vector<Extra>* extras_ = nullptr;
  size_t cgroup_ = SIZE_MAX;  // the cgroup whose samples position_ counts
  size_t position_ = 0;
  uint64_t series_ = 0;
};

PrometheusEncoder::PrometheusEncoder(metrics::SampleRules rules, metrics::DeviceNames::Namer namer,
                                     size_t kept_chunk_bytes)
    : samples_(std::move(rules), std::move(namer)),
      doubles_(std::make_unique<DoubleMemo>()),
      kept_chunk_bytes_(kept_chunk_bytes) {
  for (const MetricFamily& f : AllMetricFamilies()) {
    BuildHeader(f, ExpositionFormat::kText004, &text_headers_[static_cast<size_t>(f.id)]);
    BuildHeader(f, ExpositionFormat::kOpenMetrics100, &om_headers_[static_cast<size_t>(f.id)]);
    name_stride_ = std::max(name_stride_, f.name.size());
  }
  name_stride_ = (name_stride_ + kCopyChunk - 1) / kCopyChunk * kCopyChunk;
  names_.assign(kFamilyCount * name_stride_, '\0');
  for (const MetricFamily& f : AllMetricFamilies()) {
    names_.replace(static_cast<size_t>(f.id) * name_stride_, f.name.size(), f.name);
  }
}

PrometheusEncoder::~PrometheusEncoder() = default;

void PrometheusEncoder::RenderBlock(const CgroupStats& c, CgroupLabels* e) {
  e->path = c.id.cgroup_path;
  e->version = ++block_versions_;
  e->cgroup_id = c.id.cgroup_id;
  e->created_ns = c.id.created_ns.value_or(0);
  e->meta = c.id.meta;
  e->block.clear();
  bool first = true;
  AppendCgroupLabels(&e->block, c.id, samples_.rules().selection, &first);
  ++blocks_rendered_;
}

bool PrometheusEncoder::SyncLabelCache(const Snapshot& s, size_t count) {
  // Both the snapshot and the cache are sorted by path: merge them, moving entries that are
  // still valid (moves keep their buffers) and rendering only new or changed cgroups.
  scratch_.swap(cache_);
  // Entries only move when one is dropped (fewer) or a new one is rendered in its place.
  bool changed = count != scratch_.size();
  size_t old = 0;
  size_t kept = 0;
  for (size_t i = 0; i < count; ++i) {
    const CgroupStats& c = s.cgroups[i];
    while (old < scratch_.size() && scratch_[old].path < c.id.cgroup_path) ++old;
    if (kept == cache_.size()) cache_.emplace_back();
    CgroupLabels& slot = cache_[kept++];
    if (old < scratch_.size() && scratch_[old].path == c.id.cgroup_path && scratch_[old].cgroup_id == c.id.cgroup_id &&
        scratch_[old].created_ns == c.id.created_ns.value_or(0) &&
        SameLabels(scratch_[old].meta.get(), c.id.meta.get())) {
      std::swap(slot, scratch_[old]);
      slot.meta = c.id.meta;
      ++old;
    } else {
      RenderBlock(c, &slot);
      changed = true;
    }
  }
  cache_.resize(kept);
  // scratch_ keeps the evicted entries' buffers for reuse by later renders; drop their
  // metadata references now so that runtime metadata of dead containers is freed.
  for (auto& e : scratch_) e.meta.reset();
  return changed;
}

void PrometheusEncoder::PackBlocks() {
  // A copy of some hundred bytes per cgroup when the label cache changed, against one read
  // of the block per series; capacity is reused, so a repeat encode allocates nothing.
  blocks_.clear();
  block_starts_.clear();
  for (const CgroupLabels& e : cache_) {
    block_starts_.push_back(blocks_.size());
    blocks_.append(e.block);
  }
  block_starts_.push_back(blocks_.size());
  blocks_.append(kCopyChunk, '\0');  // chunked copies of the last block read into this
}

const PrometheusEncoder::Extra& PrometheusEncoder::ExtraFor(const MetricFamily& f, size_t position,
                                                            const metrics::LabelValues& labels) {
  std::vector<Extra>& slots = extras_[static_cast<size_t>(f.id)];
  if (slots.size() <= position) slots.resize(position + 1);
  Extra& e = slots[position];
  if (SameValues(e, labels)) return e;
  // A new combination at this position: render it (into the slot's reused buffers).
  e.n = labels.n;
  for (size_t k = 0; k < labels.n; ++k) e.values[k].assign(labels.v[k]);
  e.size = RenderLabelSuffix(f, labels, &e.rendered);
  return e;
}

size_t PrometheusEncoder::RenderLabelSuffix(const MetricFamily& f, const metrics::LabelValues& labels,
                                            std::string* out) {
  out->clear();
  for (size_t k = 0; k < labels.n && k < f.labels.size(); ++k) {
    out->push_back(',');
    out->append(f.labels[k]).append("=\"");
    AppendEscapedLabelValue(out, labels.v[k]);
    out->push_back('"');
  }
  const size_t size = out->size();
  out->append(kCopyChunk, '\0');
  return size;
}

void PrometheusEncoder::RenderFamily(const MetricFamily& f, size_t count, KeptTextStream& out) {
  Writer<KeptTextStream> w(this, out);
  w.StartFamily(f, {});
  samples_.ForEachSampleIn(f.id, 0, count, w);
}

void PrometheusEncoder::RenderEvents(const MetricFamily& f, std::string* out) {
  StagedText text(out, 0);
  Writer<StagedText> w(this, text);
  w.StartFamily(f, {});
  samples_.ForEachEventSample(f.id, w);
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
  if (SyncLabelCache(s, count) || block_starts_.empty()) PackBlocks();
  const auto& headers = format == ExpositionFormat::kText004 ? text_headers_ : om_headers_;
  StagedText text(out, 0);  // cuts *out to what was written when it goes
  Writer<StagedText> w(this, text);
  for (const MetricFamily& f : AllMetricFamilies()) {
    if (!samples_.Serves(f.id)) continue;
    w.StartFamily(f, headers[static_cast<size_t>(f.id)]);
    switch (f.scope) {
      case MetricScope::kCgroup: samples_.ForEachSampleIn(f.id, 0, count, w); break;
      case MetricScope::kEvent: samples_.ForEachEventSample(f.id, w); break;
    }
  }
}

}  // namespace statlet
