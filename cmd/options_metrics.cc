// --metrics.*: the value rules every edge applies (metrics::SampleRules).
#include "cmd/daemon_flags.h"

namespace statlet {

void RegisterMetricsFlags(FlagSet& flags, DaemonOptions* o) {
  metrics::SampleRules& rules = o->metrics;
  FlagGroup m = flags.Group("metrics");
  m.Integer("max-cgroups", &rules.max_cgroups, {},
            "Cardinality cap: expose at most this many cgroups (0: no cap); the rest are counted in "
            "statlet_cardinality_dropped_total.");
  m.List("ignored-interfaces", &rules.ignored_interface_prefixes, ListForm::kCommaSeparated,
         "Interfaces left out of container_network_* on every edge: comma-separated name prefixes "
         "(case-insensitive), as cAdvisor's; \"\" counts every interface.");
  m.Integer("max-interfaces", &rules.max_interfaces, {},
            "Cardinality cap on interfaces per network namespace (0: no cap).");
  m.Bool("host-network-interfaces", &rules.host_network_interfaces,
         "Give pods in the host's network namespace the host's interfaces in container_network_* (cAdvisor's "
         "behaviour: the same series for every such pod). Off: none; their own traffic is in "
         "statlet_container_network_* (--bpf.probes net).");
  auto name = [](const std::string& n) { return metrics::MetricSelection::CheckName(n); };
  std::string groups;
  for (const metrics::GroupInfo& g : metrics::NamedGroups())
    groups += (groups.empty() ? "" : ", ") + std::string(g.name);
  m.List("enable", &o->metrics_select.enable, ListForm::kRepeatedCommaSeparated,
         "Serve only these metric groups and families (comma-separated; empty: all), as cAdvisor's "
         "--enable_metrics; the spec, start and last-seen families stay. Groups: " +
             groups + "; cAdvisor's other kinds are accepted and serve nothing.",
         name)
      .Example("cpu,memory,container_network_receive_bytes_total");
  m.List("disable", &o->metrics_select.disable, ListForm::kRepeatedCommaSeparated,
         "Leave out these metric groups and families (comma-separated), after --metrics.enable, on every edge "
         "(/metrics, ListPodSandboxMetrics, OTLP); the files only they need are not read (so the CRI stats calls "
         "lose them too, as with cAdvisor's --disable_metrics).",
         name)
      .Example("diskIO,pressure");
  m.List("drop-labels", &o->metrics_select.drop_labels, ListForm::kCommaSeparated,
         "Cgroup labels left out on every edge: id (kept on cgroups nothing else names: the root, slices, QoS "
         "tiers) and image.",
         [](const std::string& n) { return metrics::MetricSelection::CheckLabel(n); })
      .Example("id,image");
}

Status ApplyMetricSelection(DaemonOptions* o) {
  auto sel = metrics::MetricSelection::Make(o->metrics_select.enable, o->metrics_select.disable,
                                            o->metrics_select.drop_labels);
  if (!sel.ok()) return InvalidArgument("--metrics.enable/--metrics.disable: " + sel.status().message());
  o->metrics.selection = std::move(*sel);
  const metrics::ReadNeeds needs = metrics::ReadNeedsOf(o->metrics.selection);
  FileSets& files = o->collector.files;
  files.pressure = needs.pressure_files;
  files.io = needs.io_files;
  files.hugetlb = needs.hugetlb_files;
  files.pids = needs.pids_files;
  o->collector.process_fds = o->collector.process_fds && needs.process_fds;
  o->collector.network = o->collector.network && needs.network;
  return Status::Ok();
}

}  // namespace statlet
