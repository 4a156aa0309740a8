#include "metrics/machine_families.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <numeric>
#include <string>

namespace statlet::metrics {
namespace {

using G = MetricGroup;
using Labels = std::span<const std::string_view>;

constexpr std::string_view kType[] = {"type"};
constexpr std::string_view kMode[] = {"mode"};
constexpr std::string_view kCache[] = {"node_id", "core_id", "type", "level"};
constexpr std::string_view kThread[] = {"node_id", "core_id", "thread_id"};
constexpr std::string_view kNode[] = {"node_id"};
constexpr std::string_view kHugepages[] = {"node_id", "page_size"};
constexpr std::string_view kDistance[] = {"node_id", "target_node_id"};
constexpr Labels kNoLabels{};

constexpr std::string_view kCpuinfoCores = "/proc/cpuinfo (physical id, core id), else /sys/devices/system/cpu";

// In cAdvisor's order (prometheus_machine.go).
constexpr MachineFamily kFamilies[] = {
    {"machine_cpu_physical_cores", "Number of physical CPU cores.", "", G::kMachine, kNoLabels, true, kCpuinfoCores,
     "distinct (physical id, core id) pairs: cAdvisor counts distinct core ids, which on several sockets gives one "
     "socket's cores"},
    {"machine_cpu_cores", "Number of logical CPU cores.", "", G::kMachine, kNoLabels, true,
     "online CPUs of /sys/devices/system/cpu with a topology", ""},
    {"machine_cpu_sockets", "Number of CPU sockets.", "", G::kMachine, kNoLabels, true, kCpuinfoCores, ""},
    {"machine_cpu_books", "Number of CPU books.", "", G::kMachine, kNoLabels, true, "/proc/cpuinfo book id (s390x)",
     "absent where /proc/cpuinfo has no book id (cAdvisor: 0 off s390x)"},
    {"machine_cpu_drawers", "Number of CPU drawers.", "", G::kMachine, kNoLabels, true,
     "/proc/cpuinfo drawer id (s390x)", "absent where /proc/cpuinfo has no drawer id (cAdvisor: 0 off s390x)"},
    {"machine_memory_bytes", "Amount of memory installed on the machine.", "bytes", G::kMachine, kNoLabels, true,
     "/proc/meminfo MemTotal", ""},
    {"machine_swap_bytes", "Amount of swap memory available on the machine.", "bytes", G::kMachine, kNoLabels, true,
     "/proc/meminfo SwapTotal", ""},
    {"machine_dimm_count", "Number of RAM DIMM (all types memory modules) value labeled by dimm type.", "", G::kMachine,
     kType, true, "/sys/devices/system/edac/mc/mc*/dimm*/dimm_mem_type", ""},
    {"machine_dimm_capacity_bytes", "Total RAM DIMM capacity (all types memory modules) value labeled by dimm type.",
     "bytes", G::kMachine, kType, true, "/sys/devices/system/edac/mc/mc*/dimm*/size", ""},
    {"machine_nvm_capacity", "NVM capacity value labeled by NVM mode (memory mode or app direct mode).", "",
     G::kMachine, kMode, true, "none (cAdvisor: Intel's libipmctl, with its libipmctl build tag)",
     "never served: no reader (cAdvisor writes 0 unless built with libipmctl)"},
    {"machine_nvm_avg_power_budget_watts", "NVM power budget.", "watts", G::kMachine, kNoLabels, true,
     "none (cAdvisor: libipmctl)", "never served: no reader (cAdvisor writes 0 unless built with libipmctl)"},
    {"machine_scrape_error", "1 if there was an error while getting machine metrics, 0 otherwise.", "", G::kMachine,
     kNoLabels, false, "whether /proc/cpuinfo and /proc/meminfo were read", ""},
    {"machine_cpu_cache_capacity_bytes", "Cache size in bytes assigned to NUMA node and CPU core.", "bytes",
     G::kCpuTopology, kCache, true, "/sys/devices/system/cpu/cpu*/cache/index*", ""},
    {"machine_thread_siblings_count", "Number of CPU thread siblings.", "", G::kCpuTopology, kThread, true,
     "/sys/devices/system/cpu/cpu*/topology", ""},
    {"machine_node_memory_capacity_bytes", "Amount of memory assigned to NUMA node.", "bytes", G::kCpuTopology, kNode,
     true, "/sys/devices/system/node/node*/meminfo MemTotal", "absent where the node has no meminfo (cAdvisor: 0)"},
    {"machine_node_hugepages_count", "Numer of hugepages assigned to NUMA node.", "", G::kCpuTopology, kHugepages, true,
     "/sys/devices/system/node/node*/hugepages/hugepages-*kB/nr_hugepages", ""},
    {"machine_node_distance", "Distance between NUMA node and target NUMA node.", "", G::kCpuTopology, kDistance, true,
     "/sys/devices/system/node/node*/distance", ""},
};

// One family's series: the identities (when carried) and the family's own labels, written
// sorted by name.
class FamilyBuilder {
 public:
  FamilyBuilder(const MachineFamily& f, const MachineInfo& m, bool identity) {
    out_.name = f.name;
    out_.type = ExtraType::kGauge;
    out_.help = f.help;
    out_.unit = f.unit;
    if (identity && f.identity) {
      names_.assign(std::begin(kMachineIdentityLabels), std::end(kMachineIdentityLabels));
      identity_ = {m.machine_id, m.system_uuid, m.boot_id};
      identity_count_ = 3;
    }
    names_.insert(names_.end(), f.labels.begin(), f.labels.end());
    order_.resize(names_.size());
    std::iota(order_.begin(), order_.end(), size_t{0});
    std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return names_[a] < names_[b]; });
    for (size_t i : order_) out_.labels.push_back(names_[i]);
  }
  void Add(Value v, std::initializer_list<std::string> own = {}) {
    ExtraSeries s;
    s.value = v;
    const std::vector<std::string> values(own);
    for (size_t i : order_) s.label_values.push_back(i < identity_count_ ? identity_[i] : values[i - identity_count_]);
    out_.series.push_back(std::move(s));
  }
  void AddIf(const std::optional<uint64_t>& v) {
    if (v) Add(Value::Count(*v));
  }
  // The family, when it has series.
  void MoveTo(std::vector<ExtraFamily>* out) {
    if (!out_.series.empty()) out->push_back(std::move(out_));
  }

 private:
  ExtraFamily out_;
  std::vector<std::string_view> names_;
  std::vector<size_t> order_;
  std::array<std::string, 3> identity_;
  size_t identity_count_ = 0;
};

void FillSeries(const MachineFamily& f, const MachineInfo& m, FamilyBuilder& b) {
  const std::string_view n = f.name;
  if (n == "machine_scrape_error") return b.Add(Value::Count(m.error.empty() ? 0 : 1));
  if (!m.error.empty()) return;  // as cAdvisor: a failed read serves only the error
  if (n == "machine_cpu_physical_cores") return b.AddIf(m.cpu_physical_cores);
  if (n == "machine_cpu_cores") return b.AddIf(m.cpu_cores);
  if (n == "machine_cpu_sockets") return b.AddIf(m.cpu_sockets);
  if (n == "machine_cpu_books") return b.AddIf(m.cpu_books);
  if (n == "machine_cpu_drawers") return b.AddIf(m.cpu_drawers);
  if (n == "machine_memory_bytes") return b.AddIf(m.memory_bytes);
  if (n == "machine_swap_bytes") return b.AddIf(m.swap_bytes);
  if (n == "machine_dimm_count") {
    for (const MachineDimms& d : m.dimms) b.Add(Value::Count(d.count), {d.type});
    return;
  }
  if (n == "machine_dimm_capacity_bytes") {
    for (const MachineDimms& d : m.dimms) b.Add(Value::Count(d.capacity_bytes), {d.type});
    return;
  }
  for (const MachineNode& node : m.topology) {
    const std::string node_id = std::to_string(node.id);
    if (n == "machine_cpu_cache_capacity_bytes") {
      for (const MachineCore& core : node.cores) {
        const std::string core_id = std::to_string(core.id);
        for (const auto* caches : {&core.caches, &core.uncore_caches}) {
          for (const MachineCache& c : *caches) {
            b.Add(Value::Count(c.size_bytes), {node_id, core_id, c.type, std::to_string(c.level)});
          }
        }
      }
      // A node's shared caches belong to no core: core_id is empty, as cAdvisor writes it.
      for (const MachineCache& c : node.caches) {
        b.Add(Value::Count(c.size_bytes), {node_id, "", c.type, std::to_string(c.level)});
      }
    } else if (n == "machine_thread_siblings_count") {
      for (const MachineCore& core : node.cores) {
        for (uint32_t t : core.threads) {
          b.Add(Value::Count(core.threads.size()), {node_id, std::to_string(core.id), std::to_string(t)});
        }
      }
    } else if (n == "machine_node_memory_capacity_bytes") {
      if (node.memory_bytes) b.Add(Value::Count(*node.memory_bytes), {node_id});
    } else if (n == "machine_node_hugepages_count") {
      for (const MachineHugePages& h : node.hugepages) {
        b.Add(Value::Count(h.pages), {node_id, std::to_string(h.page_size_kb)});
      }
    } else if (n == "machine_node_distance") {
      for (size_t target = 0; target < node.distances.size(); ++target) {
        b.Add(Value::Count(node.distances[target]), {node_id, std::to_string(target)});
      }
    }
  }
}

}  // namespace

std::span<const MachineFamily> MachineFamilies() { return kFamilies; }

const MachineFamily* FindMachineFamily(std::string_view name) {
  for (const MachineFamily& f : kFamilies) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void AppendMachineFamilies(const MachineInfo* machine, const MetricSelection& selection, bool identity_labels,
                           std::vector<ExtraFamily>* out) {
  if (machine == nullptr) return;
  for (const MachineFamily& f : kFamilies) {
    if (!selection.ServesExtra(f.name)) continue;
    FamilyBuilder b(f, *machine, identity_labels);
    FillSeries(f, *machine, b);
    b.MoveTo(out);
  }
}

}  // namespace statlet::metrics
