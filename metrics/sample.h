// What the value path yields for one series: the values of the family's own labels and the
// value as the snapshot holds it (a count, a duration in its unit, or a real number). The
// edges only format it: Prometheus writes exact decimals, the CRI whole seconds plus a
// `_nanoseconds` sibling, OTLP doubles.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include "base/attributes.h"

namespace statlet {
struct OomEvent;
}

namespace statlet::metrics {

struct Value {
  enum class Kind : uint8_t {
    kCount,         // an integer count (bytes, pages, events, seconds since the epoch...)
    kNanoseconds,   // a duration or time point in ns; the family's unit is seconds
    kMicroseconds,  // a duration in us; the family's unit is seconds
    kDouble,        // a real number (ratios, +Inf limits, cAdvisor's -1)
  };
  Kind kind = Kind::kCount;
  uint64_t u = 0;
  double d = 0;

  static constexpr Value Count(uint64_t v) { return {Kind::kCount, v, 0}; }
  static constexpr Value Nanos(uint64_t v) { return {Kind::kNanoseconds, v, 0}; }
  static constexpr Value Micros(uint64_t v) { return {Kind::kMicroseconds, v, 0}; }
  static constexpr Value Double(double v) { return {Kind::kDouble, 0, v}; }

  bool is_time() const { return kind == Kind::kNanoseconds || kind == Kind::kMicroseconds; }
  // In the family's base unit (seconds for durations).
  double AsDouble() const {
    switch (kind) {
      case Kind::kCount: return static_cast<double>(u);
      case Kind::kNanoseconds: return static_cast<double>(u) / 1e9;
      case Kind::kMicroseconds: return static_cast<double>(u) / 1e6;
      case Kind::kDouble: return d;
    }
    return d;
  }
  // Durations in whole nanoseconds (what the CRI's `_nanoseconds` siblings carry).
  uint64_t AsNanos() const { return kind == Kind::kMicroseconds ? u * 1000 : u; }
};

// The values of a family's own labels (MetricFamily::labels), in the same order. The views
// stay valid until the visit returns.
struct LabelValues {
  static constexpr size_t kMax = 4;
  std::array<std::string_view, kMax> v{};
  uint8_t n = 0;

  LabelValues() = default;
  // The count is known where the rule names its labels: no loop over an initializer list
  // per sample, and more than kMax labels does not compile.
  template <class... S>
  requires(sizeof...(S) >= 1 && sizeof...(S) <= kMax &&
           (std::is_convertible_v<const S&, std::string_view> && ...)) STATLET_ALWAYS_INLINE
      LabelValues(const S&... values)
      : v{std::string_view(values)...}, n(static_cast<uint8_t>(sizeof...(S))) {}
  std::span<const std::string_view> values() const { return {v.data(), n}; }
};

// An explicit-bucket histogram of one cgroup: counts[i] is the number of observations in
// bucket i (not cumulative), whose upper bound is upper_bounds[i] in the family's unit;
// the last bucket (counts.size() == upper_bounds.size() + 1) is open-ended.
struct Histogram {
  std::span<const uint64_t> counts;
  std::span<const double> upper_bounds;
  bool has_sum = false;
  Value sum;
};

// Receives the samples of one family. `cgroup` is an index into Snapshot::cgroups.
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  virtual void Add(size_t cgroup, const LabelValues& labels, Value value) = 0;
  virtual void AddHistogram(size_t cgroup, const Histogram& h) = 0;
  // Event-scope families: one sample per event, labelled from the event.
  virtual void AddEvent(const OomEvent& event, const LabelValues& labels, Value value) = 0;
};

}  // namespace statlet::metrics
