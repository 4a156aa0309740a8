// Extra families: node-level metrics that are not a snapshot's (image pulls), as
// format-neutral samples. A part of statlet that counts something implements ExtraSource;
// the edges render what it collects: /metrics in text 0.0.4 or OpenMetrics after the
// snapshot's families (exporters/extra_exposition.h), OTLP as one node resource
// (exporters/otlp/otlp_encoder.h, names from exporters/otlp/otlp_mapping.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/sample.h"

namespace statlet::metrics {

enum class ExtraType : uint8_t {
  kGauge,
  kCounter,    // cumulative since the source started
  kHistogram,  // cumulative explicit buckets
};

struct ExtraSeries {
  std::vector<std::string> label_values;  // one per ExtraFamily::labels, same order
  Value value;                            // gauges and counters
  // Histograms: bucket_counts[i] observations fell in bucket i (not cumulative), whose
  // upper bound is the family's bounds[i]; the last bucket (bounds.size()) is open-ended.
  std::vector<uint64_t> bucket_counts;
  Value sum;
};

// The names, help, unit and bounds are the source's declarations: they outlive every
// collection (string literals, static tables).
struct ExtraFamily {
  std::string_view name;  // as the text format writes it: a counter's ends in _total
  ExtraType type = ExtraType::kGauge;
  std::string_view help;
  std::string_view unit;  // the name's unit suffix ("bytes", "seconds"), or empty
  std::vector<std::string_view> labels;
  std::span<const double> bounds;  // histograms: ascending upper bounds, +Inf left out
  // A family with no series is still declared (its metadata is rendered).
  std::vector<ExtraSeries> series;
};

class ExtraSource {
 public:
  virtual ~ExtraSource() = default;
  // Appends the source's families as they are now. Called for every scrape and export,
  // from any thread.
  virtual void Collect(std::vector<ExtraFamily>* out) const = 0;
};

}  // namespace statlet::metrics
