// Prints the metric family table as the markdown of docs/metrics.md.
#include <cstdio>
#include <string>

#include "exporters/metric_families.h"

int main() {
  using namespace statlet;
  std::string out =
      "| family | type | unit | labels | cgroup v2 source | cgroup v1 source |\n"
      "|---|---|---|---|---|---|\n";
  for (const MetricFamily& f : AllMetricFamilies()) {
    std::string labels = f.scope == MetricScope::kProcess ? "" : "cgroup labels";
    for (std::string_view l : f.labels) {
      if (!labels.empty()) labels += ", ";
      labels += "`" + std::string(l) + "`";
    }
    out += "| `" + std::string(f.name) + "` | " + std::string(TextType(f)) + " | " +
           (f.unit.empty() ? "-" : std::string(f.unit)) + " | " + (labels.empty() ? "-" : labels) + " | " +
           std::string(f.v2_source) + " | " + std::string(f.v1_source) + " |\n";
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}
