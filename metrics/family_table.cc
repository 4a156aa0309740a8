#include "metrics/families.h"

#include <iterator>

#include "metrics/family_rows.h"

namespace statlet {
namespace {

using family_rows::kFamilies;

static_assert(std::size(kFamilies) == kFamilyCount, "one table row per FamilyId");
constexpr bool RowsInOrder() {
  for (size_t i = 0; i < std::size(kFamilies); ++i) {
    if (static_cast<size_t>(kFamilies[i].id) != i) return false;
  }
  return true;
}
static_assert(RowsInOrder(), "table rows must follow FamilyId order");

constexpr NotServedFamily kNotServed[] = {
    {"container_scrape_error",
     "served from statlet's own registry (self metrics): 1 when the collection behind a scrape failed"},
    {"container_health_state", "Docker health checks only; the CRI has no health state (the kubelet reports -1)"},
    {"container_tasks_state",
     "the kubelet's cAdvisor runs without its load reader and exposes five zeros per container; the kernel's "
     "cgroupstats answer only for v1 cgroups. Run-queue pressure: container_pressure_cpu_* and "
     "statlet_cpu_runqueue_latency_seconds"},
    {"container_cpu_load_average_10s", "always 0 in the kubelet (load reader off); see container_tasks_state"},
    {"container_cpu_load_d_average_10s", "always 0 in the kubelet (load reader off); see container_tasks_state"},
    {"container_fs_sector_reads_total",
     "blk-mq kernels keep no per-cgroup sector counts (v1 CFQ only; v2 io.stat has none)"},
    {"container_fs_sector_writes_total", "as container_fs_sector_reads_total"},
    {"container_fs_reads_merged_total", "no per-cgroup merge counts on blk-mq kernels (v1 CFQ only)"},
    {"container_fs_writes_merged_total", "no per-cgroup merge counts on blk-mq kernels (v1 CFQ only)"},
    {"container_fs_read_seconds_total",
     "no per-cgroup service times on blk-mq kernels (v1 CFQ, or BFQ with CONFIG_BFQ_CGROUP_DEBUG)"},
    {"container_fs_write_seconds_total", "as container_fs_read_seconds_total"},
    {"container_fs_io_current", "no per-cgroup queue depth on blk-mq kernels (v1 CFQ only)"},
    {"container_fs_io_time_seconds_total", "as container_fs_read_seconds_total"},
    {"container_fs_io_time_weighted_seconds_total",
     "cAdvisor fills it for the root cgroup only, from /proc/diskstats (a node figure: node_exporter)"},
    {"container_memory_migrate", "cpuset v1 only and not in the kubelet's set"},
    {"container_memory_numa_pages", "not in the kubelet's set (memory_numa); v1 memory.numa_stat only in cAdvisor"},
    {"container_cpu_schedstat_run_seconds_total", "not in the kubelet's set (sched); per-process schedstat scans"},
    {"container_cpu_schedstat_runqueue_seconds_total",
     "not in the kubelet's set; statlet_cpu_runqueue_latency_seconds gives the distribution"},
    {"container_cpu_schedstat_run_periods_total", "not in the kubelet's set (sched)"},
    {"container_network_tcp_usage_total", "not in the kubelet's set (tcp)"},
    {"container_network_tcp6_usage_total", "not in the kubelet's set (tcp)"},
    {"container_network_udp_usage_total", "not in the kubelet's set (udp)"},
    {"container_network_udp6_usage_total", "not in the kubelet's set (udp)"},
    {"container_network_advance_tcp_stats_total",
     "not in the kubelet's set (advtcp); retransmits and drops per cgroup: statlet_tcp_*"},
    {"container_perf_events_total", "not in the kubelet's set (perf_event, needs a config)"},
    {"container_perf_events_scaling_ratio", "not in the kubelet's set (perf_event)"},
    {"container_perf_uncore_events_total", "not in the kubelet's set (perf_event)"},
    {"container_perf_uncore_events_scaling_ratio", "not in the kubelet's set (perf_event)"},
    {"container_referenced_bytes", "not in the kubelet's set; clears the page referenced bits (costly, intrusive)"},
    {"container_memory_bandwidth_bytes", "not in the kubelet's set (resctrl)"},
    {"container_memory_bandwidth_local_bytes", "not in the kubelet's set (resctrl)"},
    {"container_llc_occupancy_bytes", "not in the kubelet's set (resctrl)"},
};

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::span<const MetricFamily> AllMetricFamilies() { return kFamilies; }

const MetricFamily& Family(FamilyId id) { return kFamilies[static_cast<size_t>(id)]; }

const MetricFamily* FindFamily(std::string_view name) {
  for (const auto& f : kFamilies) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::span<const NotServedFamily> NotServedCadvisorFamilies() { return kNotServed; }

std::string_view OpenMetricsFamilyName(const MetricFamily& f) {
  if (f.type == MetricType::kCounter && EndsWith(f.name, "_total")) return f.name.substr(0, f.name.size() - 6);
  return f.name;
}

std::string_view OpenMetricsUnit(const MetricFamily& f) {
  if (f.unit.empty()) return {};
  std::string_view family = OpenMetricsFamilyName(f);
  if (family.size() > f.unit.size() && EndsWith(family, f.unit) && family[family.size() - f.unit.size() - 1] == '_') {
    return f.unit;
  }
  return {};
}

std::string_view OpenMetricsType(const MetricFamily& f) {
  if (f.type == MetricType::kGauge) return "gauge";
  if (f.type == MetricType::kHistogram) return "histogram";
  return EndsWith(f.name, "_total") ? "counter" : "unknown";
}

std::string_view TextType(const MetricFamily& f) {
  switch (f.type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace statlet
