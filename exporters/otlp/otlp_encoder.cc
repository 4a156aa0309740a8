#include "exporters/otlp/otlp_encoder.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "exporters/otlp/otlp_fields.h"
#include "exporters/otlp/proto_wire.h"
#include "metrics/derived_values.h"
#include "metrics/machine_families.h"
#include "metrics/snapshot_samples_visit.h"

namespace statlet::otlp {
namespace {

using namespace fields;  // NOLINT: the message tags of otlp_fields.h, by their names

using wire::LenFieldSize;

// A point's attributes: at most the family's labels and a part's fixed one.
struct Attributes {
  std::array<std::string_view, metrics::LabelValues::kMax + 1> keys, values;
  size_t n = 0;
  size_t bytes = 0;  // of their fields

  STATLET_ALWAYS_INLINE void Add(std::string_view key, std::string_view value) {
    if (key.empty() || value.empty()) return;
    keys[n] = key;
    values[n++] = value;
    bytes += LenFieldSize(LenFieldSize(key.size()) + LenFieldSize(LenFieldSize(value.size())));
  }
  STATLET_ALWAYS_INLINE char* Put(char* p) const {
    for (size_t k = 0; k < n; ++k) {
      const size_t any = LenFieldSize(values[k].size());
      *p++ = static_cast<char>(kNumberAttributes);
      p = wire::PutVarint(p, LenFieldSize(keys[k].size()) + LenFieldSize(any));
      p = wire::PutLenField(p, kKey, keys[k]);
      *p++ = static_cast<char>(kValue);
      p = wire::PutVarint(p, any);
      p = wire::PutLenField(p, kStringValue, values[k]);
    }
    return p;
  }
};

std::string MetricHead(const OtlpMetric& m) {
  std::string head;
  wire::AppendStringField(&head, kMetricName, m.name);
  wire::AppendStringField(&head, kMetricDescription, m.description);
  wire::AppendStringField(&head, kMetricUnit, m.unit);
  return head;
}

uint8_t DataTag(const OtlpMetric& m) {
  switch (m.instrument) {
    case Instrument::kGauge: return kMetricGauge;
    case Instrument::kCounter:
    case Instrument::kUpDownCounter: return kMetricSum;
    case Instrument::kHistogram: return kMetricHistogram;
  }
  return kMetricGauge;
}

std::string MetricTail(const OtlpMetric& m) {
  std::string tail;
  if (m.instrument == Instrument::kGauge) return tail;
  tail.push_back(static_cast<char>(kTemporality));
  tail.push_back(static_cast<char>(kCumulative));
  if (m.instrument == Instrument::kCounter) {
    tail.push_back(static_cast<char>(kMonotonic));
    tail.push_back(1);
  }
  return tail;
}

}  // namespace

// Receives one metric's samples from the value path and writes them as data points.
class OtlpEncoder::PointWriter final : public metrics::SampleSink {
 public:
  PointWriter(wire::Buffer& buf, const OtlpMetric& m, const metrics::SampleRules& rules, int64_t start_ns,
              int64_t time_ns)
      : buf_(buf),
        m_(m),
        rules_(rules),
        start_ns_(m.instrument == Instrument::kGauge ? 0 : static_cast<uint64_t>(start_ns)),
        time_ns_(static_cast<uint64_t>(time_ns)) {}
  void SetPart(const Part* part) { part_ = part; }
  uint64_t points() const { return points_; }

  STATLET_ALWAYS_INLINE void Add(size_t, const metrics::LabelValues& labels, metrics::Value v) override {
    Attributes attrs;
    if (part_) {
      if (part_->filter_label >= 0) {
        if (part_->filter_label >= labels.n || labels.v[part_->filter_label] != part_->filter_value) return;
      }
      if (part_->interface_label >= 0 && part_->interface_label < labels.n &&
          !metrics::CountsInterface(rules_, labels.v[part_->interface_label])) {
        return;
      }
    }
    for (size_t k = 0; k < labels.n && k < m_.attributes.size(); ++k) attrs.Add(m_.attributes[k], labels.v[k]);
    if (part_) attrs.Add(part_->fixed_key, part_->fixed_value);
    uint64_t bits;
    if (m_.is_double) {
      const double d = v.AsDouble();
      std::memcpy(&bits, &d, 8);
    } else {
      bits = static_cast<uint64_t>(v.kind == metrics::Value::Kind::kDouble ? static_cast<int64_t>(v.d)
                                                                           : static_cast<int64_t>(v.u));
    }
    Number(bits, attrs);
  }
  void AddDouble(double d, std::string_view key = {}, std::string_view value = {}) {
    Attributes attrs;
    attrs.Add(key, value);
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    Number(bits, attrs);
  }
  void AddInt(uint64_t v, std::string_view key = {}, std::string_view value = {}) {
    Attributes attrs;
    attrs.Add(key, value);
    Number(v, attrs);
  }

  void AddHistogram(size_t, const metrics::Histogram& h) override {
    if (h.counts.empty()) return;
    // bucket_counts has one entry more than explicit_bounds; counts beyond it fold into the
    // open last bucket, missing ones are zero.
    const size_t buckets = h.upper_bounds.size() + 1;
    uint64_t count = 0;
    for (uint64_t n : h.counts) count += n;
    const size_t counts_bytes = 8 * buckets, bounds_bytes = 8 * h.upper_bounds.size();
    const size_t size = (start_ns_ ? 9 : 0) + (time_ns_ ? 9 : 0) + (count ? 9 : 0) + (h.has_sum ? 9 : 0) +
                        LenFieldSize(counts_bytes) + (bounds_bytes ? LenFieldSize(bounds_bytes) : 0);
    char* p = buf_.Reserve(LenFieldSize(size));
    *p++ = static_cast<char>(kDataPoints);
    p = wire::PutVarint(p, size);
    p = Times(p);
    if (count) {
      *p++ = static_cast<char>(kHistCount);
      p = wire::PutFixed64(p, count);
    }
    if (h.has_sum) {
      *p++ = static_cast<char>(kHistSum);
      p = wire::PutDouble(p, h.sum.AsDouble());
    }
    *p++ = static_cast<char>(kHistBucketCounts);
    p = wire::PutVarint(p, counts_bytes);
    for (size_t i = 0; i < buckets; ++i) {
      uint64_t n = i < h.counts.size() ? h.counts[i] : 0;
      if (i + 1 == buckets) {
        for (size_t j = buckets; j < h.counts.size(); ++j) n += h.counts[j];
      }
      p = wire::PutFixed64(p, n);
    }
    if (bounds_bytes) {
      *p++ = static_cast<char>(kHistExplicitBounds);
      p = wire::PutVarint(p, bounds_bytes);
      for (double b : h.upper_bounds) p = wire::PutDouble(p, b);
    }
    buf_.Commit(p);
    ++points_;
  }

  void AddEvent(const OomEvent&, const metrics::LabelValues&, metrics::Value) override {}

 private:
  STATLET_ALWAYS_INLINE char* Times(char* p) const {
    if (start_ns_) {
      *p++ = static_cast<char>(kStartTime);
      p = wire::PutFixed64(p, start_ns_);
    }
    if (time_ns_) {
      *p++ = static_cast<char>(kTime);
      p = wire::PutFixed64(p, time_ns_);
    }
    return p;
  }
  // A NumberDataPoint: times, the value (as_double or as_int: a oneof, written even when
  // zero), attributes — in field-number order.
  STATLET_ALWAYS_INLINE void Number(uint64_t bits, const Attributes& attrs) {
    const size_t size = (start_ns_ ? 9 : 0) + (time_ns_ ? 9 : 0) + 9 + attrs.bytes;
    char* p = buf_.Reserve(LenFieldSize(size));
    *p++ = static_cast<char>(kDataPoints);
    p = wire::PutVarint(p, size);
    p = Times(p);
    *p++ = static_cast<char>(m_.is_double ? kAsDouble : kAsInt);
    p = wire::PutFixed64(p, bits);
    p = attrs.Put(p);
    buf_.Commit(p);
    ++points_;
  }

  wire::Buffer& buf_;
  const OtlpMetric& m_;
  const metrics::SampleRules& rules_;
  const Part* part_ = nullptr;
  uint64_t start_ns_, time_ns_;
  uint64_t points_ = 0;
};

OtlpEncoder::OtlpEncoder(NodeResource node, metrics::SampleRules rules, size_t max_request_bytes,
                         std::string scope_version, metrics::DeviceNames::Namer namer)
    : samples_(
          [&] {
            rules.per_cpu = false;  // k8s.pod.cpu.time reads the cpu="total" series
            return std::move(rules);
          }(),
          std::move(namer)),
      resources_(node, samples_.rules().selection),
      max_request_bytes_(max_request_bytes),
      node_(std::move(node)),
      scope_version_(scope_version) {
  for (const OtlpMetric& m : OtlpMetrics()) {
    MetricCode& c = codes_.emplace_back();
    c.head = MetricHead(m);
    c.data_tag = DataTag(m);
    c.tail = MetricTail(m);
  }
  std::string scope;
  wire::AppendStringField(&scope, kScopeName, "statlet");
  wire::AppendStringField(&scope, kScopeVersion, scope_version);
  wire::AppendMessageField(&scope_field_, kSmScope, scope);
  wire::AppendStringField(&scope_schema_, kSmSchemaUrl, kSchemaUrl);
  wire::AppendStringField(&resource_schema_, kRmSchemaUrl, kSchemaUrl);
}

OtlpEncoder::~OtlpEncoder() = default;

bool OtlpEncoder::EncodeMetric(size_t index, const OtlpMetric& m, const CgroupStats& c, size_t cgroup, int64_t start_ns,
                               wire::Buffer& buf) {
  MetricCode& code = codes_[index];
  const size_t metric_start = buf.size();
  const size_t metric_len = buf.OpenLen(kSmMetrics, code.metric_len_guess);
  buf.Append(code.head);
  const size_t data_len = buf.OpenLen(code.data_tag, code.data_len_guess);
  const int64_t now = samples_.snapshot().timestamp_ns;
  PointWriter w(buf, m, samples_.rules(), start_ns, now);
  switch (m.derived) {
    case Derived::kNone:
      for (size_t p = 0; p < m.part_count; ++p) {
        w.SetPart(&m.parts[p]);
        samples_.ForEachSampleIn(m.parts[p].family, cgroup, cgroup + 1, w);
      }
      break;
    case Derived::kCpuUsage:
      if (auto v = metrics::CpuUsageCores(c.cpu)) w.AddDouble(*v);
      break;
    case Derived::kMemoryAvailable:
      if (auto v = metrics::MemoryAvailableBytes(c.memory)) w.AddInt(*v);
      break;
    case Derived::kUptime:
      if (auto start = metrics::StartTimeNs(c))
        w.AddDouble(static_cast<double>(std::max<int64_t>(0, now - *start)) / 1e9);
      break;
    case Derived::kCpuLimit:
      if (auto v = metrics::CpuLimitCores(c.cpu)) w.AddDouble(*v);
      break;
    case Derived::kMemoryLimit:
      if (auto v = metrics::MemoryLimitBytes(c.memory)) w.AddInt(*v);
      break;
    case Derived::kPagingFaults:
      if (auto f = metrics::PagingFaultsOf(c.memory)) {
        w.AddInt(f->minor, DerivedAttribute(m.derived), "minor");
        w.AddInt(f->major, DerivedAttribute(m.derived), "major");
      }
      break;
  }
  if (w.points() == 0) {  // no points: no metric
    buf.Truncate(metric_start);
    return false;
  }
  points_ += w.points();
  buf.Append(code.tail);
  code.data_len_guess = buf.CloseLen(data_len, code.data_len_guess);
  code.metric_len_guess = buf.CloseLen(metric_len, code.metric_len_guess);
  return true;
}

bool OtlpEncoder::EncodeResource(const ResourceCache::Entry& e, wire::Buffer& buf) {
  const Snapshot& s = samples_.snapshot();
  const CgroupStats& c = s.cgroups[e.cgroup];
  // A cumulative stream starts at the container's start, else when first seen.
  int64_t start = metrics::StartTimeNs(c).value_or(e.first_seen_ns);
  if (start > s.timestamp_ns) start = s.timestamp_ns;
  const size_t rm_start = buf.size();
  const size_t rm_len = buf.OpenLen(kRequestResourceMetrics, rm_len_guess_);
  buf.Append(e.encoded);
  const size_t sm_len = buf.OpenLen(kRmScopeMetrics, sm_len_guess_);
  buf.Append(scope_field_);
  metric_spans_.clear();
  const std::span<const OtlpMetric> table = OtlpMetrics();
  for (size_t k = 0; k < table.size(); ++k) {
    if (table[k].resource != e.resource) continue;
    if (table[k].derived != Derived::kNone && !samples_.Serves(DerivedFamily(table[k].derived))) continue;
    const size_t at = buf.size();
    if (EncodeMetric(k, table[k], c, e.cgroup, start, buf)) metric_spans_.emplace_back(at, buf.size());
  }
  if (metric_spans_.empty()) {
    buf.Truncate(rm_start);
    return false;
  }
  buf.Append(scope_schema_);
  sm_len_guess_ = buf.CloseLen(sm_len, sm_len_guess_);
  buf.Append(resource_schema_);
  rm_len_guess_ = buf.CloseLen(rm_len, rm_len_guess_);
  return true;
}

void OtlpEncoder::WritePiece(const ResourceCache::Entry& e, std::string_view metrics, wire::Buffer& buf) {
  const size_t sm = scope_field_.size() + metrics.size() + scope_schema_.size();
  const size_t rm = e.encoded.size() + LenFieldSize(sm) + resource_schema_.size();
  char* p = buf.Reserve(LenFieldSize(rm));
  *p++ = static_cast<char>(kRequestResourceMetrics);
  p = wire::PutVarint(p, rm);
  p = wire::PutBytes(p, e.encoded);
  *p++ = static_cast<char>(kRmScopeMetrics);
  p = wire::PutVarint(p, sm);
  p = wire::PutBytes(p, scope_field_);
  p = wire::PutBytes(p, metrics);
  p = wire::PutBytes(p, scope_schema_);
  p = wire::PutBytes(p, resource_schema_);
  buf.Commit(p);
}

void OtlpEncoder::SplitResource(const ResourceCache::Entry& e, size_t start, wire::Buffer& buf,
                                std::vector<std::pair<size_t, size_t>>* requests) {
  // The metrics' bytes move aside; the resource is written again around each piece. They
  // end where the two schema URLs begin (closing the lengths may have moved them).
  const size_t first = metric_spans_.front().first;
  const size_t bytes_of_metrics = metric_spans_.back().second - first;
  const size_t end = buf.size() - scope_schema_.size() - resource_schema_.size();
  piece_scratch_.assign(buf.at(end - bytes_of_metrics), bytes_of_metrics);
  buf.Truncate(start);
  auto piece_size = [&](size_t metric_bytes) {
    const size_t sm = scope_field_.size() + metric_bytes + scope_schema_.size();
    return LenFieldSize(e.encoded.size() + LenFieldSize(sm) + resource_schema_.size());
  };
  size_t from = 0, bytes = 0;  // the piece being gathered: piece_scratch_[from, from + bytes)
  auto emit = [&] {
    const size_t at = buf.size();
    WritePiece(e, std::string_view(piece_scratch_).substr(from, bytes), buf);
    requests->emplace_back(at, buf.size() - at);
    from += bytes;
    bytes = 0;
  };
  for (const auto& [a, b] : metric_spans_) {
    const size_t n = b - a;
    if (bytes > 0 && piece_size(bytes + n) > max_request_bytes_) emit();
    bytes += n;
  }
  emit();
}

void OtlpEncoder::Encode(const Snapshot& snapshot, EncodedExport* out) {
  out->bytes.reset();  // the caller's hold on the last export's buffer
  out->requests.clear();
  if (!buffer_ || buffer_.use_count() > 1) {  // queued requests still read the last one
    const size_t hint = buffer_ ? buffer_->capacity() : 0;
    buffer_ = std::make_shared<std::string>();
    buffer_->reserve(hint);
  }
  samples_.Bind(snapshot);
  resources_.Sync(snapshot, samples_.cgroup_count());
  points_ = 0;
  request_spans_.clear();
  wire::Buffer buf(buffer_.get());
  size_t request_start = 0;
  auto end_request = [&](size_t end) {
    if (end > request_start) request_spans_.emplace_back(request_start, end - request_start);
    request_start = end;
  };
  for (const ResourceCache::Entry& e : resources_.entries()) {
    const size_t start = buf.size();
    if (!EncodeResource(e, buf)) continue;
    const size_t bytes = buf.size() - start;
    if (bytes <= max_request_bytes_) {
      if (start - request_start + bytes > max_request_bytes_) end_request(start);
      continue;
    }
    end_request(start);
    SplitResource(e, start, buf, &request_spans_);
    request_start = buf.size();
  }
  if (const std::string node = EncodeNode(snapshot); !node.empty()) {
    const size_t start = buf.size();
    char* p = buf.Reserve(LenFieldSize(node.size()));
    *p++ = static_cast<char>(kRequestResourceMetrics);
    p = wire::PutVarint(p, node.size());
    p = wire::PutBytes(p, node);
    buf.Commit(p);
    if (start > request_start && buf.size() - request_start > max_request_bytes_) end_request(start);
  }
  end_request(buf.size());
  buf.Finish();
  out->bytes = buffer_;
  for (const auto& [at, n] : request_spans_) out->requests.emplace_back(buffer_->data() + at, n);
}

namespace {

uint64_t DoubleBits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  return bits;
}

// One extra series as a data point of `m` (fields in field-number order); "" when it does
// not fit the instrument (a histogram of other bounds).
std::string NodePoint(const OtlpNodeMetric& m, const metrics::ExtraFamily& f, const metrics::ExtraSeries& s,
                      uint64_t start, uint64_t now) {
  std::string point;
  const bool gauge = m.instrument == Instrument::kGauge, histogram = m.instrument == Instrument::kHistogram;
  if (!gauge) wire::AppendFixed64Field(&point, kStartTime, start);
  wire::AppendFixed64Field(&point, kTime, now);
  if (histogram) {
    if (s.bucket_counts.size() != f.bounds.size() + 1) return "";
    uint64_t count = 0;
    std::string counts, bounds;
    for (uint64_t c : s.bucket_counts) {
      char bytes[8];
      counts.append(bytes, wire::PutFixed64(bytes, c) - bytes);
      count += c;
    }
    for (double b : f.bounds) {
      char bytes[8];
      bounds.append(bytes, wire::PutDouble(bytes, b) - bytes);
    }
    if (count) wire::AppendFixed64Field(&point, kHistCount, count);
    wire::AppendFixed64Field(&point, kHistSum, DoubleBits(s.sum.AsDouble()));
    wire::AppendMessageField(&point, kHistBucketCounts, counts);
    if (!bounds.empty()) wire::AppendMessageField(&point, kHistExplicitBounds, bounds);
  } else if (m.is_double) {
    wire::AppendFixed64Field(&point, kAsDouble, DoubleBits(s.value.AsDouble()));
  } else {
    wire::AppendFixed64Field(
        &point, kAsInt,
        static_cast<uint64_t>(s.value.kind == metrics::Value::Kind::kDouble ? static_cast<int64_t>(s.value.d)
                                                                            : static_cast<int64_t>(s.value.u)));
  }
  for (size_t k = 0; k < f.labels.size() && k < s.label_values.size() && k < m.attributes.size(); ++k) {
    AppendStringAttribute(&point, histogram ? kHistAttributes : kNumberAttributes, m.attributes[k], s.label_values[k]);
  }
  return point;
}

}  // namespace

std::string OtlpEncoder::EncodeNode(const Snapshot& snapshot) {
  if (extras_.empty() && !snapshot.machine) return "";
  const int64_t time_ns = snapshot.timestamp_ns;
  std::vector<metrics::ExtraFamily> families;
  metrics::AppendMachineFamilies(snapshot.machine.get(), samples_.rules().selection, /*identity_labels=*/false,
                                 &families);
  for (const metrics::ExtraSource* source : extras_) source->Collect(&families);
  if (node_start_ns_ == 0) node_start_ns_ = time_ns;
  const uint64_t start = static_cast<uint64_t>(node_start_ns_), now = static_cast<uint64_t>(time_ns);
  std::string metrics;  // ScopeMetrics.metrics fields
  for (const metrics::ExtraFamily& f : families) {
    if (!samples_.rules().selection.ServesExtra(f.name)) continue;
    const OtlpNodeMetric* m = OtlpNodeMetricOf(f.name);
    if (m == nullptr || !SuitsType(m->instrument, f.type) || f.series.empty()) continue;
    std::string data;  // the Gauge, Sum or Histogram message
    for (const metrics::ExtraSeries& s : f.series) {
      const std::string point = NodePoint(*m, f, s, start, now);
      if (point.empty()) continue;
      wire::AppendMessageField(&data, kDataPoints, point);
      ++points_;
    }
    if (data.empty()) continue;  // no points: no metric
    uint8_t data_tag = kMetricGauge;
    if (m->instrument != Instrument::kGauge) {
      wire::AppendVarintField(&data, kTemporality, kCumulative);
      data_tag = kMetricHistogram;
      if (m->instrument != Instrument::kHistogram) {
        data_tag = kMetricSum;
        if (m->instrument == Instrument::kCounter) wire::AppendVarintField(&data, kMonotonic, 1);  // false: left out
      }
    }
    std::string metric;
    wire::AppendStringField(&metric, kMetricName, m->name);
    wire::AppendStringField(&metric, kMetricDescription, f.help);
    wire::AppendStringField(&metric, kMetricUnit, m->unit);
    wire::AppendMessageField(&metric, data_tag, data);
    wire::AppendMessageField(&metrics, kSmMetrics, metric);
  }
  if (metrics.empty()) return "";
  std::string resource, rm;
  for (const auto& [k, v] : node_.attributes) AppendStringAttribute(&resource, kResourceAttributes, k, v);
  if (!node_.attributes.empty()) wire::AppendMessageField(&rm, kRmResource, resource);
  wire::AppendMessageField(&rm, kRmScopeMetrics, scope_field_ + metrics + scope_schema_);
  rm += resource_schema_;
  return rm;
}

}  // namespace statlet::otlp
