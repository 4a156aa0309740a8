// Prints the OTLP mapping tables of docs/otlp.md from exporters/otlp/otlp_mapping.cc: the
// container and pod metrics, or with --node the node's.
#include <cstdio>
#include <cstring>
#include <string>

#include "exporters/otlp/otlp_mapping.h"

namespace {

using namespace statlet::otlp;

std::string View(std::string_view s) { return std::string(s); }

void PrintNodeTable() {
  std::printf("| metric | instrument | unit | value | attributes | source |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const OtlpNodeMetric& m : OtlpNodeMetrics()) {
    std::string attrs;
    for (std::string_view a : m.attributes) {
      if (!a.empty()) attrs += (attrs.empty() ? "" : ", ") + View(a);
    }
    std::printf("| `%s` | %s | `%s` | %s | %s | `%s` |\n", View(m.name).c_str(),
                View(InstrumentName(m.instrument)).c_str(), View(m.unit).c_str(), m.is_double ? "double" : "int",
                attrs.empty() ? "–" : attrs.c_str(), View(m.family).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace statlet;
  if (argc > 1 && std::strcmp(argv[1], "--node") == 0) {
    PrintNodeTable();
    return 0;
  }
  std::printf("| metric | resource | instrument | unit | value | attributes | source |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const OtlpMetric& m : OtlpMetrics()) {
    std::string attrs, source;
    for (std::string_view a : m.attributes) {
      if (!a.empty()) attrs += (attrs.empty() ? "" : ", ") + std::string(a);
    }
    for (size_t p = 0; p < m.part_count; ++p) {
      const Part& part = m.parts[p];
      if (!part.fixed_key.empty() && attrs.find(part.fixed_key) == std::string::npos) {
        attrs += (attrs.empty() ? "" : ", ") + std::string(part.fixed_key);
      }
      source += (source.empty() ? "" : ", ") + std::string("`") + std::string(Family(part.family).name) + "`";
      if (!part.fixed_key.empty()) source += " (" + std::string(part.fixed_value) + ")";
      if (part.filter_label >= 0) {
        source += " where " + std::string(Family(part.family).labels[part.filter_label]) + "=\"" +
                  std::string(part.filter_value) + "\"";
      }
      if (part.interface_label >= 0) source += ", the interfaces `container_network_*` counts";
    }
    static const char* kDerived[] = {"",
                                     "usage_nano_cores / 1e9",
                                     "memory limit - working set",
                                     "now - start time",
                                     "cpu quota / period",
                                     "memory limit",
                                     "pgfault - pgmajfault (minor), pgmajfault (major)"};
    if (m.derived != Derived::kNone) {
      source = kDerived[static_cast<int>(m.derived)];
      if (!DerivedAttribute(m.derived).empty()) attrs = std::string(DerivedAttribute(m.derived));
    }
    std::printf("| `%.*s` | %s | %.*s | `%.*s` | %s | %s | %s |\n", static_cast<int>(m.name.size()), m.name.data(),
                m.resource == ResourceKind::kPod ? "pod" : "container",
                static_cast<int>(InstrumentName(m.instrument).size()), InstrumentName(m.instrument).data(),
                static_cast<int>(m.unit.size()), m.unit.data(), m.is_double ? "double" : "int",
                attrs.empty() ? "–" : attrs.c_str(), source.c_str());
  }
  return 0;
}
