// The OTLP mapping: which semantic-convention metric each statlet family (or derived value)
// becomes, with its instrument, unit, value type and attributes. The values come from the
// value path (metrics/snapshot_samples.h, metrics/derived_values.h); this table only names
// them. The node's own metrics (image pulls) come from extra families
// (metrics/extra_families.h), named by a second table. docs/otlp.md is generated from both.
//
// Names follow the semantic conventions (model/container, model/k8s) and, where those have
// none, the kubeletstats receiver: pressure as `*.{cpu,memory,io}.pressure.{time,avg}`.
// Quantities neither names are under `statlet.`.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "metrics/extra_families.h"
#include "metrics/families.h"

namespace statlet::otlp {

inline constexpr std::string_view kSchemaUrl = "https://opentelemetry.io/schemas/1.44.0";

enum class Instrument : uint8_t {
  kCounter,        // Sum, monotonic, cumulative
  kUpDownCounter,  // Sum, not monotonic, cumulative
  kGauge,          // Gauge
  kHistogram,      // explicit-bucket Histogram, cumulative
};

// Which ResourceMetrics a metric's points hang on: one per container (and per other
// non-pod cgroup on a bare host), one per pod.
enum class ResourceKind : uint8_t { kContainer, kPod };

// Values that are not a family's samples (metrics/derived_values.h).
enum class Derived : uint8_t {
  kNone,
  kCpuUsage,         // CPUs over the last collection
  kMemoryAvailable,  // limit - working set
  kUptime,           // snapshot time - start time, seconds
  kCpuLimit,         // quota / period, CPUs
  kMemoryLimit,      // bytes
  kPagingFaults,     // minor / major
};

// One source of a metric's points: a family's samples, optionally only those whose label
// `filter_label` equals `filter_value` and those whose interface (label `interface_label`)
// the rules count in container_network_* (metrics::CountsInterface), each given the
// constant attribute `fixed_key` = `fixed_value`.
struct Part {
  FamilyId family = FamilyId::kCount;
  std::string_view fixed_key;
  std::string_view fixed_value;
  int8_t filter_label = -1;
  std::string_view filter_value;
  int8_t interface_label = -1;
};

struct OtlpMetric {
  std::string_view name;
  std::string_view unit;  // UCUM, as the semantic conventions write it
  Instrument instrument;
  bool is_double;  // as_double, else as_int
  ResourceKind resource;
  std::string_view description;
  // The attribute name of each of the source family's labels, in order; "" leaves it out.
  std::array<std::string_view, 4> attributes{};
  std::array<Part, 2> parts{};
  uint8_t part_count = 0;
  Derived derived = Derived::kNone;
};

std::span<const OtlpMetric> OtlpMetrics();

// A metric of the node's resource: the points of one extra family, with the family's help
// as description. The instrument must suit the family's type (SuitsType).
struct OtlpNodeMetric {
  std::string_view family;  // the extra family's name
  std::string_view name;
  std::string_view unit;  // UCUM
  Instrument instrument;
  bool is_double;  // as_double, else as_int (histograms: the sum is a double either way)
  // The attribute name of each of the family's labels, in order.
  std::array<std::string_view, 4> attributes{};
};

std::span<const OtlpNodeMetric> OtlpNodeMetrics();
// The row of an extra family; null when it has none (it is then not exported).
const OtlpNodeMetric* OtlpNodeMetricOf(std::string_view family);
// A gauge becomes a Gauge or an UpDownCounter (a quantity that adds up across nodes), a
// counter a Counter, a histogram a Histogram.
bool SuitsType(Instrument instrument, metrics::ExtraType type);

// The label attribute of a derived metric (kPagingFaults: system.paging.fault.type).
std::string_view DerivedAttribute(Derived d);
// The family a derived metric renders differently: it is served when that family is.
FamilyId DerivedFamily(Derived d);

std::string_view InstrumentName(Instrument i);

}  // namespace statlet::otlp
