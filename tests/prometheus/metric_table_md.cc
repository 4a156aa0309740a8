// Prints the tables of docs/metrics.md: every family statlet derives from a snapshot (with
// how it compares with the kubelet's cAdvisor), the cAdvisor families it does not serve and
// why, and statlet's own instrumentation.
#include <cstdio>
#include <string>

#include "exporters/self_metrics.h"
#include "metrics/families.h"

int main() {
  using namespace statlet;
  std::string out =
      "| family | type | unit | labels | kubelet/cAdvisor | cgroup v2 source | cgroup v1 source |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const MetricFamily& f : AllMetricFamilies()) {
    std::string labels = "cgroup labels";
    for (std::string_view l : f.labels) labels += ", `" + std::string(l) + "`";
    std::string status = !f.cadvisor               ? "statlet-only"
                         : f.cadvisor_note.empty() ? "same"
                                                   : "same name; " + std::string(f.cadvisor_note);
    out += "| `" + std::string(f.name) + "` | " + std::string(TextType(f)) + " | " +
           (f.unit.empty() ? "-" : std::string(f.unit)) + " | " + labels + " | " + status + " | " +
           std::string(f.v2_source) + " | " + std::string(f.v1_source) + " |\n";
  }
  out += "\n**cAdvisor families statlet does not serve**\n\n| family | why |\n|---|---|\n";
  for (const NotServedFamily& f : NotServedCadvisorFamilies()) {
    out += "| `" + std::string(f.name) + "` | " + std::string(f.reason) + " |\n";
  }
  out +=
      "\n**statlet's own instrumentation** (prometheus-cpp registry, same response)\n\n"
      "| family | type | help |\n|---|---|---|\n";
  for (const SelfMetricDescription& f : SelfMetricDescriptions()) {
    out += "| `" + std::string(f.name) + "` | " + f.type + " | " + f.help + " |\n";
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}
