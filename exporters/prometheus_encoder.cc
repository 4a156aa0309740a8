#include "exporters/prometheus_encoder.h"

#include <algorithm>
#include <cstring>

#include "base/attributes.h"
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

// Pieces of a series line are copied in whole chunks of this size from padded sources into
// room reserved with this much slack: fixed-size copies the compiler inlines, instead of a
// call to memcpy (and its size dispatch) for each of a line's pieces.
constexpr size_t kCopyChunk = 32;

// Copies n bytes; reads up to kCopyChunk - 1 bytes past src + n and writes as far past
// p + n, both of which the callers own (padding, reserved slack).
STATLET_ALWAYS_INLINE inline char* CopyPadded(char* p, const char* src, size_t n) {
  for (size_t k = 0; k < n; k += kCopyChunk) std::memcpy(p + k, src + k, kCopyChunk);
  return p + n;
}

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

constexpr uint64_t kPow10[20] = {1ull,
                                 10ull,
                                 100ull,
                                 1000ull,
                                 10000ull,
                                 100000ull,
                                 1000000ull,
                                 10000000ull,
                                 100000000ull,
                                 1000000000ull,
                                 10000000000ull,
                                 100000000000ull,
                                 1000000000000ull,
                                 10000000000000ull,
                                 100000000000000ull,
                                 1000000000000000ull,
                                 10000000000000000ull,
                                 100000000000000000ull,
                                 1000000000000000000ull,
                                 10000000000000000000ull};

STATLET_ALWAYS_INLINE inline int DecimalDigits(uint64_t v) {
  // log10 from the bit length (1233 / 4096 ~ log10(2)), then one comparison to correct it.
  const int bits = 64 - __builtin_clzll(v | 1);
  const int guess = (bits * 1233) >> 12;
  return guess + (v >= kPow10[guess]) + (v == 0);
}

// Four digits of v < 10000 at p.
STATLET_ALWAYS_INLINE inline void Put4Digits(char* p, uint32_t v) {
  std::memcpy(p, kDigitPairs + 2 * (v / 100), 2);
  std::memcpy(p + 2, kDigitPairs + 2 * (v % 100), 2);
}

// Writes the `digits` low decimal digits of v (zero-padded) ending at `end`: eight at a time,
// whose halves and pairs do not wait on each other, then pairs.
STATLET_ALWAYS_INLINE inline void PutDigitsBackward(char* end, uint64_t v, int digits) {
  while (digits >= 8) {
    end -= 8;
    const auto low = static_cast<uint32_t>(v % 100000000);
    v /= 100000000;
    Put4Digits(end, low / 10000);
    Put4Digits(end + 4, low % 10000);
    digits -= 8;
  }
  while (digits >= 2) {
    end -= 2;
    std::memcpy(end, kDigitPairs + 2 * (v % 100), 2);
    v /= 100;
    digits -= 2;
  }
  if (digits) *--end = static_cast<char>('0' + v % 10);
}

// The same text as WriteUint (std::to_chars), inline: most series carry an integer.
STATLET_ALWAYS_INLINE inline char* PutUint(char* p, uint64_t v) {
  const int n = DecimalDigits(v);
  PutDigitsBackward(p + n, v, n);
  return p + n;
}

// units / 10^kDecimals as an exact decimal with trailing zeros trimmed: the same text as
// WriteScaledUint.
template <int kDecimals, uint64_t kScale>
STATLET_ALWAYS_INLINE inline char* PutScaledUint(char* p, uint64_t units) {
  p = PutUint(p, units / kScale);
  uint64_t frac = units % kScale;
  if (frac == 0) return p;
  int digits = kDecimals;
  while (frac % 10 == 0) {
    frac /= 10;
    --digits;
  }
  *p++ = '.';
  PutDigitsBackward(p + digits, frac, digits);
  return p + digits;
}

}  // namespace

// Shortest round-trip text of the doubles seen, direct-mapped by their bits: the real
// numbers on /metrics (pressure ratios with two decimals, mostly 0; +Inf limits) repeat from
// cgroup to cgroup and scrape to scrape, and std::to_chars costs several times a series.
class PrometheusEncoder::DoubleMemo {
 public:
  // Writes WriteDouble's text; p has room for kMaxNumberChars.
  STATLET_ALWAYS_INLINE char* Put(char* p, double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    Entry& e = entries_[(bits * 0x9E3779B97F4A7C15ull) >> (64 - kLog2Entries)];
    if (e.bits != bits || e.size == 0) [[unlikely]] {  // no text is empty: size 0 is free
      e.bits = bits;
      e.size = static_cast<uint8_t>(WriteDouble(e.text, d) - e.text);
    }
    std::memcpy(p, e.text, sizeof e.text);
    return p + e.size;
  }

 private:
  static constexpr int kLog2Entries = 8;
  struct Entry {
    uint64_t bits = 0;
    uint8_t size = 0;
    char text[kMaxNumberChars] = {};
  };
  std::array<Entry, size_t{1} << kLog2Entries> entries_{};
};

namespace {

template <class Memo>
STATLET_ALWAYS_INLINE inline char* PutValue(char* p, const metrics::Value& v, Memo& memo) {
  using K = metrics::Value::Kind;
  switch (v.kind) {
    case K::kCount: return PutUint(p, v.u);
    case K::kNanoseconds: return PutScaledUint<9, 1000000000>(p, v.u);
    case K::kMicroseconds: return PutScaledUint<6, 1000000>(p, v.u);
    case K::kDouble: return memo.Put(p, v.d);
  }
  return p;
}

template <class T>
STATLET_ALWAYS_INLINE inline T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Whether n bytes at a and b are equal. Label values are short ("total", "eth0",
// "/dev/sda"): up to 16 bytes are compared as two overlapping words inside [0, n), without a
// call to memcmp.
STATLET_ALWAYS_INLINE inline bool EqualBytes(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    if (n > 16) return std::memcmp(a, b, n) == 0;
    return ((Load<uint64_t>(a) ^ Load<uint64_t>(b)) | (Load<uint64_t>(a + n - 8) ^ Load<uint64_t>(b + n - 8))) == 0;
  }
  if (n >= 4) {
    return ((Load<uint32_t>(a) ^ Load<uint32_t>(b)) | (Load<uint32_t>(a + n - 4) ^ Load<uint32_t>(b + n - 4))) == 0;
  }
  if (n == 0) return true;
  return a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1];
}

template <class ExtraT>
STATLET_ALWAYS_INLINE inline bool SameValues(const ExtraT& e, const metrics::LabelValues& l) {
  if (e.n != l.n) return false;
  for (size_t k = 0; k < l.n; ++k) {
    const std::string& a = e.values[k];
    const std::string_view b = l.v[k];
    if (a.size() != b.size() || !EqualBytes(a.data(), b.data(), b.size())) return false;
  }
  return true;
}

}  // namespace

// The sink the value path writes into: one family at a time.
class PrometheusEncoder::Writer final : public metrics::SampleSink {
 public:
  // Overwrites *out from its start.
  Writer(PrometheusEncoder* enc, std::string* out)
      : enc_(*enc), text_(out, 0), blocks_(enc->blocks_.data()), starts_(enc->block_starts_.data()) {}
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
    const size_t block_size = starts_[cgroup + 1] - block;
    char* p = text_.Reserve(name_size_ + block_size + extra_size + 2 + kMaxNumberChars + 1 + kCopyChunk);
    p = CopyPadded(p, name_, name_size_);
    p = CopyPadded(p, blocks_ + block, block_size);
    p = CopyPadded(p, extra, extra_size);
    *p++ = '}';
    *p++ = ' ';
    p = PutValue(p, v, *enc_.doubles_);
    *p++ = '\n';
    text_.Commit(p);
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
    const size_t head = name_size_ + suffix.size() + block.size() + extra.size() + 2;
    char* p = text_.Reserve(head + kMaxNumberChars + 1);
    p = StagedText::Put(p, family_->name);
    p = StagedText::Put(p, suffix);
    p = StagedText::Put(p, block);
    p = StagedText::Put(p, extra);
    *p++ = '}';
    *p++ = ' ';
    p = PutValue(p, v, *enc_.doubles_);
    *p++ = '\n';
    text_.Commit(p);
    ++series_;
  }

  PrometheusEncoder& enc_;
  StagedText text_;
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

PrometheusEncoder::PrometheusEncoder(metrics::SampleRules rules, metrics::DeviceNames::Namer namer)
    : samples_(std::move(rules), std::move(namer)), doubles_(std::make_unique<DoubleMemo>()) {
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
  e.rendered.clear();
  for (size_t k = 0; k < labels.n; ++k) {
    e.values[k].assign(labels.v[k]);
    if (k >= f.labels.size()) continue;
    e.rendered.push_back(',');
    e.rendered.append(f.labels[k]).append("=\"");
    AppendEscapedLabelValue(&e.rendered, labels.v[k]);
    e.rendered.push_back('"');
  }
  e.size = e.rendered.size();
  e.rendered.append(kCopyChunk, '\0');
  return e;
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
  Writer w(this, out);  // cuts *out to what was written when it goes
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
