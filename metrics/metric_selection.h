// Which families every edge serves and which cgroup labels it leaves out: the one rule
// behind --metrics.enable, --metrics.disable and --metrics.drop-labels. A family is named
// by its group (cAdvisor's --enable_metrics / --disable_metrics kinds, lib/container/
// factory.go, plus statlet's own) or by its name. The edges ask this, never decide it:
// SnapshotSamples yields nothing for a family left out, the Prometheus encoder, the CRI
// descriptors and OTLP skip it, and the collector leaves out the files only left-out
// families need (ReadNeedsOf).
#pragma once

#include <bitset>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "metrics/families.h"

namespace statlet::metrics {

enum class MetricGroup : uint8_t {
  kAlways,  // cAdvisor serves these whatever its flags say (last seen, spec, start time)
  // cAdvisor's kinds that statlet serves
  kCpu,
  kPercpu,  // no family of its own: the per-CPU series of container_cpu_usage_seconds_total
  kMemory,
  kDiskIO,
  kDisk,
  kNetwork,
  kProcess,
  kOomEvent,
  kPressure,
  kHugetlb,
  kCpuTopology,
  // statlet's own
  kPsiAverages,
  kMemoryQos,
  kEbpf,
  kPulls,
  kMachine,  // cAdvisor's machine families outside cpu_topology (it has no kind for them)
  kCount,
};

struct GroupInfo {
  MetricGroup group;
  std::string_view name;  // as --metrics.enable / --metrics.disable take it
  std::string_view what;  // for --help and docs/metrics.md
};
// The groups that can be named (kAlways cannot), in the order above.
std::span<const GroupInfo> NamedGroups();
std::string_view GroupName(MetricGroup g);
// The group of a family of the table (every FamilyId has one: a switch without default).
MetricGroup GroupOf(FamilyId id);
// cAdvisor's kinds that statlet has no family for (sched, cpuLoad, tcp, …): accepted, so
// that an operator's cAdvisor flags carry over, and without effect.
std::span<const std::string_view> UnservedCadvisorGroups();
// Extra families (metrics/extra_families.h) are in kPulls when their name starts so, in
// kMachine or kCpuTopology when they are machine families (metrics/machine_families.h), in
// kOomEvent for statlet_container_oom_kills_total (metrics/container_oom_kills.h).
inline constexpr std::string_view kPullFamilyPrefix = "statlet_image_pull";

// The cgroup labels that can be left out: their loss keeps every series distinct (see
// DropsIdOf).
enum class CgroupLabel : uint8_t { kId, kImage };

class MetricSelection {
 public:
  // Everything served, no label dropped.
  MetricSelection();
  // enable: when not empty, only these groups and families; disable: then leave these out.
  // Each item a group name or a family name (a table family, or an image pull family);
  // drop_labels: "id", "image". InvalidArgument names the first unknown item.
  static StatusOr<MetricSelection> Make(const std::vector<std::string>& enable, const std::vector<std::string>& disable,
                                        const std::vector<std::string>& drop_labels);
  // Ok when `name` is a group or a family the lists may name (else InvalidArgument saying
  // what is known); the same for a label --metrics.drop-labels may name.
  static Status CheckName(const std::string& name);
  static Status CheckLabel(const std::string& name);

  bool Serves(FamilyId id) const { return families_[static_cast<size_t>(id)]; }
  // An extra family (image pulls, machine families) by name.
  bool ServesExtra(std::string_view family_name) const;
  // Whether any family of the group is served (kPercpu: whether per-CPU series may be).
  bool ServesGroup(MetricGroup g) const;
  bool Drops(CgroupLabel l) const { return (dropped_labels_ >> static_cast<unsigned>(l)) & 1u; }
  // Whether everything is served and nothing dropped (the default).
  bool all() const { return families_.all() && groups_.all() && extra_off_.empty() && dropped_labels_ == 0; }

 private:
  std::bitset<kFamilyCount> families_;
  std::bitset<static_cast<size_t>(MetricGroup::kCount)> groups_;  // named on (for percpu, pulls)
  std::vector<std::string> extra_off_;                            // extra families left out by name
  std::vector<std::string> extra_on_;                             // with an enable list: extra families named on
  bool extra_listed_only_ = false;
  uint8_t dropped_labels_ = 0;
};

// Whether a cgroup's `id` label is left out under `s`: only where another label still tells
// the cgroup apart (a container with its id, a pod with its name), so that the root, slices
// and QoS tiers keep theirs and no two series collide.
bool DropsIdOf(const MetricSelection& s, const Identity& id);

// The readers a collection needs for the families served: a group left out is not read.
struct ReadNeeds {
  bool pressure_files = true;    // *.pressure: pressure, psi averages, the memory.high stall view
  bool io_files = true;          // io.stat / blkio: diskIO
  bool hugetlb_files = true;     // hugetlb.*: hugetlb
  bool pids_files = true;        // pids.*: process
  bool process_fds = true;       // /proc/<pid>/fd scans: process
  bool network = true;           // /proc/<pid>/net/dev: network
  bool machine = true;           // /proc/cpuinfo, /proc/meminfo, EDAC, identities: machine
  bool machine_topology = true;  // /sys/devices/system/{cpu,node} topology: cpu_topology
};
ReadNeeds ReadNeedsOf(const MetricSelection& s);

}  // namespace statlet::metrics
