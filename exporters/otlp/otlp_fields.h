// The OTLP messages' field tags statlet writes, declared once for the encoder and the
// resource writer: each is the field's number and wire type as the .proto files give them
// (opentelemetry/proto/metrics/v1/metrics.proto, common/v1/common.proto,
// resource/v1/resource.proto, collector/metrics/v1/metrics_service.proto).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "exporters/otlp/proto_wire.h"

namespace statlet::otlp {
namespace fields {

using wire::kFixed64;
using wire::kLen;
using wire::kVarint;
using wire::Tag;

constexpr uint8_t kRequestResourceMetrics = Tag(1, kLen);  // ExportMetricsServiceRequest
constexpr uint8_t kRmScopeMetrics = Tag(2, kLen);          // ResourceMetrics
constexpr uint8_t kRmSchemaUrl = Tag(3, kLen);
constexpr uint8_t kSmScope = Tag(1, kLen);  // ScopeMetrics
constexpr uint8_t kSmMetrics = Tag(2, kLen);
constexpr uint8_t kSmSchemaUrl = Tag(3, kLen);
constexpr uint8_t kScopeName = Tag(1, kLen);  // InstrumentationScope
constexpr uint8_t kScopeVersion = Tag(2, kLen);
constexpr uint8_t kMetricName = Tag(1, kLen);  // Metric
constexpr uint8_t kMetricDescription = Tag(2, kLen);
constexpr uint8_t kMetricUnit = Tag(3, kLen);
constexpr uint8_t kMetricGauge = Tag(5, kLen);
constexpr uint8_t kMetricSum = Tag(7, kLen);
constexpr uint8_t kMetricHistogram = Tag(9, kLen);
constexpr uint8_t kDataPoints = Tag(1, kLen);  // Gauge, Sum, Histogram
constexpr uint8_t kTemporality = Tag(2, kVarint);
constexpr uint8_t kMonotonic = Tag(3, kVarint);
constexpr uint8_t kCumulative = 2;                // AGGREGATION_TEMPORALITY_CUMULATIVE
constexpr uint8_t kStartTime = Tag(2, kFixed64);  // NumberDataPoint, HistogramDataPoint
constexpr uint8_t kTime = Tag(3, kFixed64);
constexpr uint8_t kAsDouble = Tag(4, kFixed64);  // NumberDataPoint
constexpr uint8_t kAsInt = Tag(6, kFixed64);
constexpr uint8_t kNumberAttributes = Tag(7, kLen);
constexpr uint8_t kHistCount = Tag(4, kFixed64);  // HistogramDataPoint
constexpr uint8_t kHistSum = Tag(5, kFixed64);
constexpr uint8_t kHistBucketCounts = Tag(6, kLen);
constexpr uint8_t kHistExplicitBounds = Tag(7, kLen);
constexpr uint8_t kKey = Tag(1, kLen);  // KeyValue
constexpr uint8_t kValue = Tag(2, kLen);
constexpr uint8_t kStringValue = Tag(1, kLen);         // AnyValue
constexpr uint8_t kArrayValue = Tag(5, kLen);          // AnyValue.array_value
constexpr uint8_t kArrayValues = Tag(1, kLen);         // ArrayValue.values
constexpr uint8_t kRmResource = Tag(1, kLen);          // ResourceMetrics.resource
constexpr uint8_t kResourceAttributes = Tag(1, kLen);  // Resource.attributes
constexpr uint8_t kHistAttributes = Tag(9, kLen);      // HistogramDataPoint.attributes

}  // namespace fields

// An attribute as OTLP writes one (opentelemetry/proto/common/v1/common.proto): a KeyValue
// {key = 1, value = 2: AnyValue {string_value = 1}} as field `tag` of its holder (a
// Resource's or a data point's attributes); none when key or value is empty.
inline void AppendStringAttribute(std::string* out, uint8_t tag, std::string_view key, std::string_view value) {
  if (key.empty() || value.empty()) return;
  std::string any, kv;
  wire::AppendStringField(&any, fields::kStringValue, value);
  wire::AppendStringField(&kv, fields::kKey, key);
  wire::AppendMessageField(&kv, fields::kValue, any);
  wire::AppendMessageField(out, tag, kv);
}

}  // namespace statlet::otlp
