// The machine families: cAdvisor's machine collector (google/cadvisor lib/metrics/
// prometheus_machine.go) from a snapshot's MachineInfo, in one table, as format-neutral
// extra families (metrics/extra_families.h) every edge renders: /metrics after the
// snapshot's families, OTLP on the node's resource. The rules live here: a figure the host
// has no source for gives no series (cAdvisor writes 0), the families' labels are sorted by
// name as client_golang writes them, and a failed read of /proc/cpuinfo or /proc/meminfo
// leaves only machine_scrape_error 1 (as cAdvisor's failed GetMachineInfo does).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "metrics/extra_families.h"
#include "metrics/metric_selection.h"
#include "snapshot/machine_info.h"

namespace statlet::metrics {

struct MachineFamily {
  std::string_view name;
  std::string_view help;  // cAdvisor's, word for word
  std::string_view unit;  // the name's unit suffix, or ""
  // kMachine: cAdvisor serves it whatever its flags say; kCpuTopology: only with cAdvisor's
  // cpu_topology metrics (the kubelet leaves them off).
  MetricGroup group;
  // The family's own labels beyond the host's identities (machine_id, system_uuid,
  // boot_id), in the order the series give their values.
  std::span<const std::string_view> labels;
  bool identity;            // whether the series carry the identities (all but machine_scrape_error)
  std::string_view source;  // where the value comes from (docs/metrics.md)
  std::string_view note;    // how it differs from cAdvisor's; "" when it is the same
};

// The identity labels, as cAdvisor names them (baseLabelsNames).
inline constexpr std::string_view kMachineIdentityLabels[] = {"machine_id", "system_uuid", "boot_id"};

std::span<const MachineFamily> MachineFamilies();
const MachineFamily* FindMachineFamily(std::string_view name);

// Appends the families `selection` serves that have series for `machine` (nothing when it
// is null). `identity_labels`: whether series carry machine_id, system_uuid and boot_id
// (/metrics) or leave them to the resource that holds the series (OTLP).
void AppendMachineFamilies(const MachineInfo* machine, const MetricSelection& selection, bool identity_labels,
                           std::vector<ExtraFamily>* out);

}  // namespace statlet::metrics
