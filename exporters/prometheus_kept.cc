// PrometheusEncoder::EncodeKept: the exposition as a rope of segments kept between encodes,
// one per family and cgroup, rendered again only when what it was rendered from changed
// (prometheus_encoder.h).
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "exporters/prometheus_encoder.h"
#include "exporters/series_line.h"
#include "exporters/staged_text.h"
#include "metrics/snapshot_samples_visit.h"

namespace statlet {

using series_line::AppendPaddedLine;
using series_line::AppendSuffixedLine;
using series_line::PutValue;
using series_line::SameValues;

namespace {

constexpr uint32_t kNoLabels = UINT32_MAX;
// A histogram's records: its shape (bucket count, bound count; its text, every line of it),
// where its bounds are (the value path's bounds are tables that live as long as the
// program: the same address is the same bounds), then its counts and its sum as values (no
// text).
constexpr uint8_t kHistogramShape = 0xF0;
constexpr uint8_t kHistogramBounds = 0xF1;

// What the keep costs at most between scrapes: past it, nothing is kept (every scrape renders
// everything, as Encode does). Far above any node's exposition (1,000 containers with the
// kubelet's long labels: tens of MB).
constexpr size_t kMaxKeptTextBytes = size_t{512} << 20;

// A family is rendered whole for this many encodes once more than three quarters of the
// lines it compared had changed (then its lines are kept again, and compared at the next).
// Each look that finds it still moving doubles the period, up to kMaxFreshEncodes: a look
// costs about half a full encode of the family (its lines recorded, then compared), and
// some families (CPU time, memory usage) move on every scrape for good.
constexpr uint32_t kFreshEncodes = 16;
constexpr uint32_t kMaxFreshEncodes = 128;

STATLET_ALWAYS_INLINE inline uint64_t Bits(const metrics::Value& v) {
  if (v.kind != metrics::Value::Kind::kDouble) return v.u;
  uint64_t b;
  std::memcpy(&b, &v.d, sizeof b);
  return b;
}

}  // namespace

// An event-scope family's lines, and the events they were rendered from.
struct PrometheusEncoder::KeptEvents {
  std::vector<OomEvent> from;
  KeptText::Span span;
  uint64_t lines = 0;
};

struct PrometheusEncoder::Kept {
  // One series as last rendered: what from (its value as the value path gave it, its
  // labels) and its line.
  // 24 bytes: every series has one, and a scrape reads them all in order.
  struct Line {
    Line() = default;
    Line(uint64_t v, uint32_t c, uint8_t k) : value(v), combo(c), chunk_kind(KeptText::kNoChunk | uint32_t{k} << 24) {}
    uint8_t kind() const { return static_cast<uint8_t>(chunk_kind >> 24); }
    KeptText::ChunkId chunk() const { return chunk_kind & KeptText::kNoChunk; }
    void SetText(const KeptText::Span& span) {
      size = span.size;
      offset = span.offset;
      chunk_kind = (chunk_kind & 0xFF000000u) | (span.size ? span.chunk : KeptText::kNoChunk);
    }

    uint64_t value = 0;                        // Value::u, or the bits of Value::d
    uint32_t combo = kNoLabels;                // the family's label combination
    uint32_t size = 0;                         // of the text
    uint32_t offset = 0;                       // of the text in its chunk
    uint32_t chunk_kind = KeptText::kNoChunk;  // the chunk, and Value::Kind or a histogram record's in the top byte
  };
  static_assert(sizeof(Line) == 24);
  // One cgroup's lines in its family's.
  struct Segment {
    uint32_t begin = 0;
    uint32_t count = 0;
  };
  // A combination of a family's own label values, and its rendered `,k="v"…` (padded).
  struct Combo {
    uint8_t n = 0;
    std::array<std::string, metrics::LabelValues::kMax> values;
    std::string rendered;
    size_t size = 0;
  };
  struct Family {
    std::vector<Segment> segments;  // by cgroup, in path order
    std::vector<Line> lines;
    size_t dead = 0;  // lines no segment uses
    std::vector<Combo> combos;
    std::unordered_map<std::string, uint32_t> combo_ids;  // values joined by '\0' -> combo
    size_t labelled = 0;                                  // series with labels in the last encode
    // A family whose values nearly all moved at once is rendered whole, as Encode does, for
    // a while (keeping its lines would only cost): its text then lives one encode.
    uint32_t fresh_left = 0;              // encodes it is still rendered whole
    uint32_t fresh_next = kFreshEncodes;  // the period after the next look that finds it moving
    std::vector<KeptText::Span> fresh_text;
  };

  Kept(const std::array<std::string, kFamilyCount>& text_headers,
       const std::array<std::string, kFamilyCount>& om_headers, size_t chunk_bytes)
      : text(chunk_bytes) {
    const std::array<std::string, kFamilyCount>* all[2] = {&text_headers, &om_headers};
    for (int f = 0; f < 2; ++f) {
      auto joined = std::make_shared<std::string>();
      for (size_t id = 0; id < kFamilyCount; ++id) {
        header_at[f][id] = {joined->size(), (*all[f])[id].size()};
        joined->append((*all[f])[id]);
      }
      headers[f] = std::move(joined);
    }
  }

  void Release(const Line& l) {
    if (l.size) text.Release(l.chunk(), l.size);
  }
  void ReleaseSegment(Family& fam, Segment& s) {
    for (uint32_t k = 0; k < s.count; ++k) Release(fam.lines[s.begin + k]);
    fam.dead += s.count;
    s = Segment{};
  }
  // Moves every family's segments to where their cgroups are now (`cache`, the first
  // `count` label blocks; `newest`, the newest block version); the segments of cgroups gone
  // or relabelled are released.
  void Remap(const std::vector<CgroupLabels>& cache, size_t count, uint64_t newest);
  // Forgets every line (what a rope holds stays valid).
  void Drop();
  // Forgets a family's lines (their text is released, the rope of this encode no longer
  // holding it only once the next encode begins).
  void ForgetLines(Family& fam) {
    for (Segment& s : fam.segments) {
      if (s.count) ReleaseSegment(fam, s);
    }
    fam.lines.clear();
    fam.dead = 0;
  }
  static void Compact(Family& fam);

  KeptText text;
  std::array<Family, kFamilyCount> families;
  // The label block version of each cgroup at the last encode (versions are never reused):
  // a cgroup keeps its lines while its block does.
  std::vector<uint64_t> versions;
  uint64_t max_version = 0;
  std::vector<int64_t> moved_from;  // scratch: a cgroup's index at the last encode, or -1
  std::vector<char> carried;        // scratch: whether the last encode's cgroup i is still here
  std::vector<Segment> segments_scratch;
  std::shared_ptr<const std::string> headers[2];  // every family's header back to back, per format
  std::array<std::pair<size_t, size_t>, kFamilyCount> header_at[2];
  std::array<KeptEvents, kFamilyCount> events;
  std::string events_scratch;
  std::shared_ptr<TextRope> ropes[2];
  std::string lookup;  // scratch: a combination's values joined
  uint64_t rendered = 0, spliced = 0, whole = 0;
};

// Receives one family's samples (cgroups in order) and compares each with the line it had
// at the last encode: an unchanged line is spliced into the rope as it is, a changed or new
// one rendered on its own.
class PrometheusEncoder::KeptWriter final : public metrics::SampleSink {
 public:
  using Line = Kept::Line;
  using Segment = Kept::Segment;

  KeptWriter(PrometheusEncoder& enc, Kept& kept, TextRope& rope)
      : enc_(enc),
        kept_(kept),
        text_(kept.text),
        rope_(rope),
        blocks_(enc.blocks_.data()),
        starts_(enc.block_starts_.data()),
        evacuating_(kept.text.any_evacuating()) {}
  ~KeptWriter() {
    enc_.series_ += series_;
    kept_.rendered += rendered_;
    kept_.spliced += spliced_;
  }
  // Lines so far: spliced, rendered again because they changed (new ones are neither).
  uint64_t spliced() const { return spliced_; }
  uint64_t changed() const { return changed_; }

  void StartFamily(const MetricFamily& f, Kept::Family& fam, bool fresh) {
    family_ = &f;
    fam_ = &fam;
    fresh_ = fresh;
    name_ = enc_.names_.data() + static_cast<size_t>(f.id) * enc_.name_stride_;
    name_size_ = f.name.size();
    cur_ = kNone;
    fam.labelled = 0;
  }
  // Closes the family's last segment and those of the cgroups after it that had no sample.
  void FinishFamily() { Enter(fam_->segments.size()); }

  STATLET_ALWAYS_INLINE void Add(size_t cgroup, const metrics::LabelValues& labels, metrics::Value v) override {
    if (cgroup != cur_) Next(cgroup);
    const uint64_t bits = Bits(v);
    const auto kind = static_cast<uint8_t>(v.kind);
    fam_->labelled += labels.n != 0;
    ++series_;
    Line* line = at_ < seg_->count ? &fam_->lines[seg_->begin + at_] : nullptr;
    if (line && line->value == bits && line->kind() == kind && SameCombo(line->combo, labels)) [[likely]] {
      Splice(*line);
      ++at_;
      return;
    }
    const uint32_t combo = labels.n ? ComboFor(labels, line) : kNoLabels;
    const char* extra = nullptr;
    size_t extra_size = 0;
    if (combo != kNoLabels) {
      extra = fam_->combos[combo].rendered.data();
      extra_size = fam_->combos[combo].size;
    }
    text_.Begin();
    const size_t block = starts_[cgroup];
    AppendPaddedLine(text_, name_, name_size_, blocks_ + block, starts_[cgroup + 1] - block, extra, extra_size, v,
                     *enc_.doubles_);
    Put(line, Line(bits, combo, kind), text_.End());
    ++at_;
  }

  void AddHistogram(size_t cgroup, const metrics::Histogram& h) override {
    if (cgroup != cur_) Next(cgroup);
    // Its records: shape, bounds, counts, sum.
    const size_t n = 2 + h.counts.size() + (h.has_sum ? 1 : 0);
    auto record = [&](size_t i) -> Line {
      if (i == 0) return {h.counts.size(), static_cast<uint32_t>(h.upper_bounds.size()), kHistogramShape};
      if (i == 1) return {reinterpret_cast<uintptr_t>(h.upper_bounds.data()), kNoLabels, kHistogramBounds};
      if (i - 2 < h.counts.size()) {
        return {h.counts[i - 2], kNoLabels, static_cast<uint8_t>(metrics::Value::Kind::kCount)};
      }
      return {Bits(h.sum), kNoLabels, static_cast<uint8_t>(h.sum.kind)};
    };
    const size_t buckets = h.counts.empty() ? 0 : std::min(h.upper_bounds.size(), h.counts.size() - 1);
    series_ += buckets + 1 + (h.has_sum ? 2 : 0);
    bool same = at_ + n <= seg_->count;
    if (same) {
      const Line* l = &fam_->lines[seg_->begin + at_];
      const Line shape = record(0), bounds = record(1);
      same = l[0].value == shape.value && l[0].kind() == shape.kind() && l[0].combo == shape.combo &&
             l[1].value == bounds.value && l[1].kind() == bounds.kind();
      // The counts' records are counts (the shape says how many): their values alone.
      for (size_t i = 0; same && i < h.counts.size(); ++i) same = l[2 + i].value == h.counts[i];
      if (same && h.has_sum) {
        same = l[n - 1].value == Bits(h.sum) && l[n - 1].kind() == static_cast<uint8_t>(h.sum.kind);
      }
    }
    if (same) {
      Splice(fam_->lines[seg_->begin + at_]);
      at_ += static_cast<uint32_t>(n);
      return;
    }
    // Cumulative `le` buckets; the last bucket is open-ended, so it only counts towards +Inf.
    text_.Begin();
    uint64_t cumulative = 0;
    for (size_t i = 0; i < buckets; ++i) {
      cumulative += h.counts[i];
      HistogramLine("_bucket", cgroup, enc_.LeLabel(i, h.upper_bounds[i]), metrics::Value::Count(cumulative));
    }
    for (size_t i = buckets; i < h.counts.size(); ++i) cumulative += h.counts[i];
    HistogramLine("_bucket", cgroup, ",le=\"+Inf\"", metrics::Value::Count(cumulative));
    // OpenMetrics: _count if and only if _sum.
    if (h.has_sum) {
      HistogramLine("_count", cgroup, {}, metrics::Value::Count(cumulative));
      HistogramLine("_sum", cgroup, {}, h.sum);
    }
    const KeptText::Span span = text_.End();
    for (size_t i = 0; i < n; ++i) {
      Line* line = at_ < seg_->count ? &fam_->lines[seg_->begin + at_] : nullptr;
      Put(line, record(i), i == 0 ? span : KeptText::Span{});
      ++at_;
    }
  }

  void AddEvent(const OomEvent&, const metrics::LabelValues&, metrics::Value) override {}

 private:
  static constexpr size_t kNone = SIZE_MAX;

  STATLET_ALWAYS_INLINE bool SameCombo(uint32_t combo, const metrics::LabelValues& labels) const {
    if (labels.n == 0) return combo == kNoLabels;
    return combo != kNoLabels && SameValues(fam_->combos[combo], labels);
  }

  // An unchanged line into the rope (moved first when its chunk is being evacuated).
  STATLET_ALWAYS_INLINE void Splice(Line& l) {
    if (evacuating_ && l.size && text_.evacuating(l.chunk())) [[unlikely]] {
      text_.Begin();
      text_.Append(std::string_view(text_.At(l.chunk(), l.offset), l.size));
      const KeptText::Span span = text_.End();
      kept_.Release(l);
      l.SetText(span);
    }
    if (l.size) rope_.Append(text_.At(l.chunk(), l.offset), l.size);
    ++spliced_;
  }

  // A line rendered as `span` (a histogram's records after the first: none), at the current
  // position: in place of `old` (released), or after the segment's lines (which move to the
  // end of the family's first, once).
  STATLET_ALWAYS_INLINE void Put(Line* old, Line line, const KeptText::Span& span) {
    line.SetText(span);
    rope_.Append(span.text, span.size);
    rendered_ += span.size != 0;  // a histogram's records after its first have no text of their own
    if (old) {
      changed_ += span.size != 0;
      kept_.Release(*old);
      *old = line;
      return;
    }
    std::vector<Line>& lines = fam_->lines;
    if (!grown_) {
      grown_ = true;
      if (seg_->begin + seg_->count != lines.size()) {
        const size_t from = seg_->begin;
        seg_->begin = static_cast<uint32_t>(lines.size());
        lines.resize(lines.size() + at_);
        std::copy_n(lines.begin() + static_cast<std::ptrdiff_t>(from), at_, lines.begin() + seg_->begin);
        fam_->dead += seg_->count;  // their text moved with them
      }
    }
    lines.push_back(line);
  }

  // The combination of `labels`: the one this series had before when it is the same, else
  // found or added.
  uint32_t ComboFor(const metrics::LabelValues& labels, const Line* before) {
    if (!fresh_ && before && SameCombo(before->combo, labels)) return before->combo;
    std::string& joined = kept_.lookup;
    joined.clear();
    for (size_t k = 0; k < labels.n; ++k) joined.append(labels.v[k]).push_back('\0');
    auto it = fam_->combo_ids.find(joined);
    if (it != fam_->combo_ids.end()) return it->second;
    const auto id = static_cast<uint32_t>(fam_->combos.size());
    Kept::Combo& c = fam_->combos.emplace_back();
    c.n = labels.n;
    for (size_t k = 0; k < labels.n; ++k) c.values[k].assign(labels.v[k]);
    c.size = RenderLabelSuffix(*family_, labels, &c.rendered);
    fam_->combo_ids.emplace(joined, id);
    return id;
  }

  // The next cgroup's first sample: the common case (the next cgroup, the last one's lines
  // all seen) inline.
  STATLET_ALWAYS_INLINE void Next(size_t cgroup) {
    if (cgroup == cur_ + 1 && cur_ != kNone && at_ == seg_->count && !fresh_) {
      cur_ = cgroup;
      ++seg_;
      at_ = 0;
      grown_ = false;
      return;
    }
    Enter(cgroup);
  }

  // Closes the current segment (its lines past the samples seen are gone), and the segments
  // of the cgroups before `cgroup` that had no sample this time; `cgroup` becomes the current.
  void Enter(size_t cgroup) {
    std::vector<Segment>& segments = fam_->segments;
    size_t next = 0;
    if (cur_ != kNone) {
      Segment& s = *seg_;
      if (at_ < s.count) {
        for (uint32_t k = at_; k < s.count; ++k) kept_.Release(fam_->lines[s.begin + k]);
        fam_->dead += s.count - at_;
      }
      s.count = at_;
      next = cur_ + 1;
    }
    for (size_t k = next; k < cgroup && k < segments.size(); ++k) {
      if (segments[k].count) kept_.ReleaseSegment(*fam_, segments[k]);
    }
    cur_ = cgroup;
    if (cgroup >= segments.size()) return;
    seg_ = &segments[cgroup];
    at_ = 0;
    grown_ = false;
    if (fresh_ && seg_->count) kept_.ReleaseSegment(*fam_, *seg_);  // nothing to compare with
  }

  // `name` + suffix + the cgroup's block + extra + "} " + value + "\n".
  void HistogramLine(std::string_view suffix, size_t cgroup, std::string_view extra, metrics::Value v) {
    const std::string_view block(blocks_ + starts_[cgroup], starts_[cgroup + 1] - starts_[cgroup]);
    AppendSuffixedLine(text_, family_->name, suffix, block, extra, v, *enc_.doubles_);
  }

  PrometheusEncoder& enc_;
  Kept& kept_;
  KeptText& text_;
  TextRope& rope_;
  const char* const blocks_;
  const size_t* const starts_;
  const bool evacuating_;
  const MetricFamily* family_ = nullptr;
  Kept::Family* fam_ = nullptr;
  bool fresh_ = false;
  const char* name_ = nullptr;  // padded
  size_t name_size_ = 0;
  // The current segment: its cgroup, the position of the next sample in it, whether its
  // lines moved to the end of the family's.
  size_t cur_ = kNone;
  Segment* seg_ = nullptr;
  uint32_t at_ = 0;
  bool grown_ = false;
  uint64_t series_ = 0, rendered_ = 0, spliced_ = 0, changed_ = 0;
};

void PrometheusEncoder::KeptDeleter::operator()(Kept* k) const { delete k; }

void PrometheusEncoder::EncodeKept(const Snapshot& s, ExpositionFormat format, std::shared_ptr<const TextRope>* out) {
  out->reset();  // the caller's hold on the last rope
  if (!kept_) kept_.reset(new Kept(text_headers_, om_headers_, kept_chunk_bytes_));
  Kept& k = *kept_;
  const int f = format == ExpositionFormat::kText004 ? 0 : 1;
  std::shared_ptr<TextRope>& rope = k.ropes[f];
  if (!rope || rope.use_count() > 1) {  // a response still sends the last one
    auto fresh = std::make_shared<TextRope>();
    if (rope) {
      fresh->pieces.reserve(rope->pieces.capacity());
      fresh->holds.reserve(rope->holds.capacity());
    }
    rope = std::move(fresh);
  }
  rope->Clear();
  k.rendered = k.spliced = k.whole = 0;

  series_ = 0;
  samples_.Bind(s);
  const size_t count = samples_.cgroup_count();
  if (SyncLabelCache(s, count) || block_starts_.empty()) PackBlocks();
  k.Remap(cache_, count, block_versions_);

  {
    KeptWriter w(*this, k, *rope);
    const std::string& headers = *k.headers[f];
    for (const MetricFamily& fam : AllMetricFamilies()) {
      const size_t id = static_cast<size_t>(fam.id);
      rope->Append(headers.data() + k.header_at[f][id].first, k.header_at[f][id].second);
      if (fam.scope == MetricScope::kEvent) {
        KeepEvents(fam, k.events[id], *rope);
        continue;
      }
      Kept::Family& state = k.families[id];
      for (const KeptText::Span& t : state.fresh_text) k.text.Release(t.chunk, t.size);
      state.fresh_text.clear();
      if (state.fresh_left > 0) {
        --state.fresh_left;
        if (!state.lines.empty()) k.ForgetLines(state);  // rendered whole from now on
        KeptTextStream out(k.text, *rope, &state.fresh_text);
        RenderFamily(fam, count, out);
        ++k.whole;
        continue;
      }
      // Label combinations no series uses any more pile up with churn: past twice those in
      // use the family starts over (its segments render again, as new).
      const bool restart = state.combos.size() > 2 * state.labelled + 64;
      if (restart) {
        state.combos.clear();
        state.combo_ids.clear();
      }
      if (state.dead > 256 && state.dead * 2 > state.lines.size()) Kept::Compact(state);
      const uint64_t spliced = w.spliced(), changed = w.changed();
      w.StartFamily(fam, state, restart);
      samples_.ForEachSampleIn(fam.id, 0, count, w);
      w.FinishFamily();
      const uint64_t kept = w.spliced() - spliced, moved = w.changed() - changed;
      if (kept + moved >= 64) {
        if (moved * 4 > (kept + moved) * 3) {
          state.fresh_left = state.fresh_next;
          state.fresh_next = std::min(2 * state.fresh_next, kMaxFreshEncodes);
        } else {
          state.fresh_next = kFreshEncodes;
        }
      }
    }
  }
  // The chunks retired now hold nothing of this rope: it holds the others.
  k.text.Collect();
  k.text.HoldAll(&rope->holds);
  rope->holds.push_back(k.headers[f]);
  if (k.text.live_bytes() > kMaxKeptTextBytes) k.Drop();
  *out = rope;
}

namespace {

bool SameEvents(const std::vector<OomEvent>& a, const std::vector<OomEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const OomEvent &x = a[i], &y = b[i];
    // The identity is immutable and held here: the same pointer is the same labels.
    if (x.timestamp_ns != y.timestamp_ns || x.pid != y.pid || x.cgroup_id != y.cgroup_id ||
        x.constraint_memcg != y.constraint_memcg || x.cgroup != y.cgroup || x.comm != y.comm ||
        x.cgroup_path != y.cgroup_path) {
      return false;
    }
  }
  return true;
}

}  // namespace

void PrometheusEncoder::KeepEvents(const MetricFamily& f, KeptEvents& e, TextRope& rope) {
  Kept& k = *kept_;
  const std::vector<OomEvent>& now = samples_.snapshot().recent_ooms;
  if (e.span.size && SameEvents(e.from, now)) {
    series_ += e.lines;
    if (k.text.any_evacuating() && k.text.evacuating(e.span.chunk)) {
      k.text.Begin();
      k.text.Append(std::string_view(e.span.text, e.span.size));
      const KeptText::Span moved = k.text.End();
      k.text.Release(e.span.chunk, e.span.size);
      e.span = moved;
    }
    rope.Append(e.span.text, e.span.size);
    return;
  }
  if (e.span.size) k.text.Release(e.span.chunk, e.span.size);
  const uint64_t before = series_;
  RenderEvents(f, &k.events_scratch);
  e.lines = series_ - before;
  e.from = now;
  k.text.Begin();
  k.text.Append(k.events_scratch);
  e.span = k.text.End();
  rope.Append(e.span.text, e.span.size);
}

void PrometheusEncoder::Kept::Compact(Family& fam) {
  std::vector<Line> lines;
  lines.reserve(fam.lines.size() - fam.dead);
  for (Segment& s : fam.segments) {
    const auto at = static_cast<uint32_t>(lines.size());
    lines.insert(lines.end(), fam.lines.begin() + s.begin, fam.lines.begin() + s.begin + s.count);
    s.begin = at;
  }
  fam.lines.swap(lines);
  fam.dead = 0;
}

void PrometheusEncoder::Kept::Remap(const std::vector<CgroupLabels>& cache, size_t count, uint64_t newest) {
  Kept& k = *this;
  bool same = k.versions.size() == count;
  for (size_t i = 0; same && i < count; ++i) same = k.versions[i] == cache[i].version;
  if (same) return;
  // Both lists are in path order and a block keeps its version while it lives: the cgroups
  // still here are found in order; a version newer than the last encode's is a new cgroup
  // (or a relabelled one).
  k.moved_from.assign(count, -1);
  k.carried.assign(k.versions.size(), 0);
  size_t j = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t v = cache[i].version;
    if (v > k.max_version) continue;
    size_t at = j;
    while (at < k.versions.size() && k.versions[at] != v) ++at;
    if (at == k.versions.size()) continue;
    k.moved_from[i] = static_cast<int64_t>(at);
    k.carried[at] = 1;
    j = at + 1;
  }
  for (Family& fam : k.families) {
    if (fam.segments.empty() && k.versions.empty()) {
      fam.segments.assign(count, Segment{});
      continue;
    }
    std::vector<Segment>& next = k.segments_scratch;
    next.assign(count, Segment{});
    for (size_t i = 0; i < count; ++i) {
      if (k.moved_from[i] >= 0 && static_cast<size_t>(k.moved_from[i]) < fam.segments.size())
        next[i] = fam.segments[static_cast<size_t>(k.moved_from[i])];
    }
    for (size_t old = 0; old < fam.segments.size(); ++old) {
      if (old < k.carried.size() && k.carried[old]) continue;
      if (fam.segments[old].count) ReleaseSegment(fam, fam.segments[old]);
    }
    fam.segments.swap(next);
  }
  k.versions.resize(count);
  for (size_t i = 0; i < count; ++i) k.versions[i] = cache[i].version;
  k.max_version = newest;
}

void PrometheusEncoder::Kept::Drop() {
  Kept& k = *this;
  for (Family& fam : k.families) {
    for (Segment& s : fam.segments) ReleaseSegment(fam, s);
    for (const KeptText::Span& t : fam.fresh_text) k.text.Release(t.chunk, t.size);
    fam.fresh_text.clear();
    fam.fresh_left = 0;
    fam.fresh_next = kFreshEncodes;
    fam.segments.clear();
    fam.lines.clear();
    fam.dead = 0;
    fam.combos.clear();
    fam.combo_ids.clear();
  }
  for (KeptEvents& e : k.events) {
    if (e.span.size) k.text.Release(e.span.chunk, e.span.size);
    e = KeptEvents{};
  }
  k.versions.clear();
  k.text.Collect();
}

PrometheusEncoder::KeptStats PrometheusEncoder::kept_stats() const {
  KeptStats st;
  if (!kept_) return st;
  st.series_rendered = kept_->rendered;
  st.series_spliced = kept_->spliced;
  st.families_whole = kept_->whole;
  st.text_live_bytes = kept_->text.live_bytes();
  st.text_chunk_bytes = kept_->text.capacity_bytes();
  st.text_spare_bytes = kept_->text.spare_bytes();
  for (const Kept::Family& fam : kept_->families) {
    st.index_bytes += fam.lines.capacity() * sizeof(Kept::Line) + fam.segments.capacity() * sizeof(Kept::Segment);
    st.label_combinations += fam.combos.size();
  }
  return st;
}

}  // namespace statlet
