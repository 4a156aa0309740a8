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
}

}  // namespace statlet
