// One libbpf skeleton that loads, attaches, and adds its kernel aggregates to a collection.
// It serves one probe of the registry (bpf/probe_registry.cc) or several (sched_switch:
// runqlat, faults); BpfProbes owns one per skeleton and reports each probe as up or down.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "bpf/cgroup_pruner.h"
#include "snapshot/snapshot.h"

struct bpf_map;

namespace statlet {
class CgroupFileSource;
}

struct bpf_object_open_opts;  // <bpf/libbpf.h>

namespace statlet::bpf {

struct ProbeConfig {
  uint32_t max_cgroups = 4096;  // entries of each per-cgroup map
  int cgroup2_root_fd = -1;     // the unified hierarchy's root directory (iterators walk it)
  // Where the net probe attaches, relative to the unified root; empty: the root.
  std::vector<std::string> net_subtrees;
};

// What one Collect() fills; shared by all probes of the collection.
struct CollectContext {
  CgroupPruner* pruner = nullptr;
  std::unordered_map<uint64_t, BpfCgroupStats>* by_cgroup_id = nullptr;
  std::vector<OomEvent>* new_ooms = nullptr;
  std::unordered_map<uint64_t, std::vector<uint64_t>>* per_cpu_ns = nullptr;
  bool per_cpu_wanted = true;  // false: the cpu probe leaves per_cpu_ns empty (BpfSource::Collect)
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual const char* name() const = 0;
  // Opens, sizes, loads and attaches. On error nothing stays loaded.
  virtual Status Start(const ProbeConfig& config) = 0;
  // Reads the kernel maps into `ctx` (only live cgroups) and prunes entries of dead ones.
  virtual void Collect(CollectContext& ctx) = 0;
  // Events the kernel side could not record (a full map or ring buffer, cgroups beyond an
  // iterator's maps, failed walks).
  virtual uint64_t LostEvents() const = 0;
  // The collector's file source this probe provides (cgroup_stats), else null.
  virtual CgroupFileSource* file_source() { return nullptr; }
  // Unmaps the arrays its walks fill (BpfSource::ReleaseMappings); the next walk maps them.
  virtual void ReleaseMappings() {}
};

// What a loader is told: which of the registry rows it serves were selected. A program
// that serves several probes (sched_switch: runqlat, faults) counts only for these.
struct ProbeSelection {
  std::vector<std::string_view> names;
  bool Has(std::string_view name) const {
    for (std::string_view n : names) {
      if (n == name) return true;
    }
    return false;
  }
};
// A probe's factory, defined in its loader .cc and named by its registry row.
using ProbeLoader = std::unique_ptr<Probe> (*)(const ProbeSelection& selected);

// Walks a per-cgroup per-CPU hash map (keys start with the u64 cgroup id): calls
// visit(cgroup_id, key, values) for live cgroups and deletes entries the pruner rejects.
// False when the map could not be read whole: a live cgroup the walk did not visit then
// has no value (absent), never a 0 that would read as a counter reset.
template <typename Visit>
bool ScanCgroupMap(int fd, size_t key_size, size_t value_size, uint32_t max_entries, CollectContext& ctx,
                   Visit&& visit);

// The last libbpf warnings of this thread, for error messages ("" if none).
std::string LastLibbpfMessage();
void ClearLibbpfMessages();
// Routes libbpf's own logging to statlet's log (once per process).
void InstallLibbpfLogger();
// A Status for a failed libbpf call returning -errno, with libbpf's last warning.
Status LibbpfError(int err, const char* what);
// Open options for every probe's skeleton: CO-RE against vmlinux's BTF alone. Without a
// target BTF, libbpf (before 1.2, as in Debian 12) lists the kernel modules' BTF when a type
// is missing from vmlinux (a flavour of another kernel version), and listing them needs
// CAP_SYS_ADMIN: with only CAP_BPF + CAP_PERFMON the load failed ("failed to iterate BTF
// objects"). statlet's programs use vmlinux types only.
const struct bpf_object_open_opts* ProbeOpenOpts();

}  // namespace statlet::bpf

#include "bpf/probe_scan.h"
