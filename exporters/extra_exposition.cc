#include "exporters/extra_exposition.h"

namespace statlet {
namespace {

using metrics::ExtraFamily;
using metrics::ExtraSeries;
using metrics::ExtraType;

std::string_view TypeName(ExtraType t) {
  switch (t) {
    case ExtraType::kGauge: return "gauge";
    case ExtraType::kCounter: return "counter";
    case ExtraType::kHistogram: return "histogram";
  }
  return "unknown";
}

// The metadata lines. Text 0.0.4 names the family as its samples are named; OpenMetrics
// names a counter's family without "_total" and adds the unit.
void AppendHeader(const ExtraFamily& f, ExpositionFormat format, std::string* out) {
  const std::string_view type = TypeName(f.type);
  if (format == ExpositionFormat::kText004) {
    out->append("# HELP ").append(f.name).push_back(' ');
    AppendEscapedHelp(out, f.help, format);
    out->append("\n# TYPE ").append(f.name).push_back(' ');
    out->append(type).push_back('\n');
    return;
  }
  std::string_view family = f.name;
  constexpr std::string_view kTotal = "_total";
  if (f.type == ExtraType::kCounter && family.size() > kTotal.size() && family.ends_with(kTotal)) {
    family.remove_suffix(kTotal.size());
  }
  out->append("# TYPE ").append(family).push_back(' ');
  out->append(type).push_back('\n');
  if (!f.unit.empty()) {
    out->append("# UNIT ").append(family).push_back(' ');
    out->append(f.unit).push_back('\n');
  }
  out->append("# HELP ").append(family).push_back(' ');
  AppendEscapedHelp(out, f.help, format);
  out->push_back('\n');
}

// `{name="value",...}` of the series' labels, then `le` when given; nothing without either.
void AppendLabels(const ExtraFamily& f, const ExtraSeries& s, const std::string* le, std::string* out) {
  if (f.labels.empty() && le == nullptr) return;
  out->push_back('{');
  for (size_t i = 0; i < f.labels.size() && i < s.label_values.size(); ++i) {
    if (i > 0) out->push_back(',');
    out->append(f.labels[i]).append("=\"");
    AppendEscapedLabelValue(out, s.label_values[i]);
    out->push_back('"');
  }
  if (le != nullptr) {
    if (!f.labels.empty()) out->push_back(',');
    out->append("le=\"").append(*le).push_back('"');
  }
  out->push_back('}');
}

void AppendValue(const metrics::Value& v, std::string* out) {
  switch (v.kind) {
    case metrics::Value::Kind::kCount: AppendUint(out, v.u); return;
    case metrics::Value::Kind::kNanoseconds: AppendNanosAsSeconds(out, v.u); return;
    case metrics::Value::Kind::kMicroseconds: AppendMicrosAsSeconds(out, v.u); return;
    case metrics::Value::Kind::kDouble: AppendDouble(out, v.d); return;
  }
}

void AppendSample(const ExtraFamily& f, std::string_view suffix, const ExtraSeries& s, const std::string* le,
                  std::string* out) {
  out->append(f.name).append(suffix);
  AppendLabels(f, s, le, out);
  out->push_back(' ');
}

// Cumulative buckets (`le` in the canonical float form both formats accept), then the sum
// and the count.
void AppendHistogram(const ExtraFamily& f, const ExtraSeries& s, std::string* out) {
  uint64_t cumulative = 0;
  std::string le;
  for (size_t i = 0; i < s.bucket_counts.size(); ++i) {
    cumulative += s.bucket_counts[i];
    le.clear();
    if (i < f.bounds.size()) {
      AppendCanonicalFloat(&le, f.bounds[i]);
    } else {
      le = "+Inf";
    }
    AppendSample(f, "_bucket", s, &le, out);
    AppendUint(out, cumulative);
    out->push_back('\n');
  }
  AppendSample(f, "_sum", s, nullptr, out);
  AppendValue(s.sum, out);
  out->push_back('\n');
  AppendSample(f, "_count", s, nullptr, out);
  AppendUint(out, cumulative);
  out->push_back('\n');
}

}  // namespace

void AppendExtraFamilies(std::span<const ExtraFamily> families, ExpositionFormat format, std::string* out) {
  for (const ExtraFamily& f : families) {
    AppendHeader(f, format, out);
    for (const ExtraSeries& s : f.series) {
      if (f.type == ExtraType::kHistogram) {
        AppendHistogram(f, s, out);
        continue;
      }
      AppendSample(f, "", s, nullptr, out);
      AppendValue(s.value, out);
      out->push_back('\n');
    }
  }
}

}  // namespace statlet
