// Prints the tables of docs/metrics.md: every family statlet derives from a snapshot (with
// how it compares with the kubelet's cAdvisor), the cAdvisor families it does not serve and
// why, and statlet's own instrumentation.
#include <cstdio>
#include <set>
#include <string>
#include <string_view>

#include "exporters/self_metrics.h"
#include "metrics/families.h"
#include "metrics/machine_families.h"

namespace {

// cAdvisor's metric group (google/cadvisor lib/container/factory.go MetricKind) each of its
// families belongs to, as lib/metrics/prometheus.go registers them; "" for those it always
// registers (spec, last seen, start and creation times). nullptr: not classified here.
const char* CadvisorGroup(std::string_view name) {
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  if (starts("container_spec_") || name == "container_last_seen" || name == "container_start_time_seconds" ||
      name == "container_creation_time_seconds")
    return "";
  if (starts("container_cpu_schedstat_")) return "sched";
  if (starts("container_cpu_load_") || name == "container_tasks_state") return "cpuLoad";
  if (starts("container_cpu_")) return "cpu";
  if (name == "container_memory_numa_pages") return "memory_numa";
  if (name == "container_memory_migrate") return "cpuset";
  if (starts("container_memory_bandwidth_") || name == "container_llc_occupancy_bytes") return "resctrl";
  if (starts("container_memory_")) return "memory";
  if (starts("container_hugetlb_")) return "hugetlb";
  if (name == "container_fs_usage_bytes" || name == "container_fs_limit_bytes" || starts("container_fs_inodes_"))
    return "disk";
  if (starts("container_fs_") || name == "container_blkio_device_usage_total") return "diskIO";
  if (starts("container_network_")) return "network";
  if (name == "container_processes" || name == "container_threads" || name == "container_threads_max" ||
      name == "container_file_descriptors" || name == "container_sockets" || name == "container_ulimits_soft")
    return "process";
  if (name == "container_oom_events_total") return "oom_event";
  if (starts("container_pressure_")) return "pressure";
  return nullptr;
}

// The groups the kubelet's /metrics/cadvisor registers (kubernetes pkg/kubelet/server/
// server.go, includedMetrics; pressure only with the KubeletPSI feature gate, which the
// families' notes say). Families of any other group are not on the kubelet's endpoint.
const std::set<std::string_view> kKubeletGroups = {"",        "cpu", "memory",  "cpuLoad",   "diskIO",  "disk",
                                                   "network", "app", "process", "oom_event", "pressure"};

}  // namespace

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
    if (f.cadvisor) {
      const char* group = CadvisorGroup(f.name);
      if (group == nullptr) {
        std::fprintf(stderr, "%s: no cAdvisor group known (tests/prometheus/metric_table_md.cc)\n",
                     std::string(f.name).c_str());
        return 1;
      }
      if (!kKubeletGroups.count(group)) {
        status = "not on the kubelet's (it leaves cAdvisor's `" + std::string(group) + "` group off); as cAdvisor's" +
                 (f.cadvisor_note.empty() ? "" : ", but " + std::string(f.cadvisor_note));
      }
    }
    out += "| `" + std::string(f.name) + "` | " + std::string(TextType(f)) + " | " +
           (f.unit.empty() ? "-" : std::string(f.unit)) + " | " + labels + " | " + status + " | " +
           std::string(f.v2_source) + " | " + std::string(f.v1_source) + " |\n";
  }
  // The machine families: the kubelet registers cAdvisor's machine collector without
  // cpu_topology (server.go's includedMetrics), so those five are not on its endpoint.
  out +=
      "\n**Machine families** (labels `boot_id`, `machine_id`, `system_uuid` on all but "
      "`machine_scrape_error`)\n\n"
      "| family | type | unit | labels | kubelet/cAdvisor | group | source |\n|---|---|---|---|---|---|---|\n";
  for (const metrics::MachineFamily& f : metrics::MachineFamilies()) {
    std::string labels = f.identity ? "machine labels" : "-";
    for (std::string_view l : f.labels) labels += ", `" + std::string(l) + "`";
    const bool kubelet = f.group != metrics::MetricGroup::kCpuTopology;
    std::string status = kubelet
                             ? (f.note.empty() ? "same" : "same name; " + std::string(f.note))
                             : "not on the kubelet's (it leaves cAdvisor's `cpu_topology` group off); as cAdvisor's" +
                                   (f.note.empty() ? "" : ", but " + std::string(f.note));
    out += "| `" + std::string(f.name) + "` | gauge | " + (f.unit.empty() ? "-" : std::string(f.unit)) + " | " +
           labels + " | " + status + " | `" + std::string(metrics::GroupName(f.group)) + "` | " +
           std::string(f.source) + " |\n";
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
