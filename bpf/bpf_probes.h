// statlet's optional eBPF probes, as a BpfSource for the Sampler.
//
// The probes are the rows of the registry (bpf/probe_registry.cc): each is reported on its
// own (names are the `probe` label of the statlet_bpf_probe_up gauge) and selectable on its
// own; the rows marked default load when BpfOptions::probes is empty (nothing on the
// scheduler path). Rows naming the same loader share one program (runqlat and faults: one
// sched_switch program, see sched_switch.bpf.c) and load and fail together.
//
// All are keyed by cgroup v2 id (the inode of the cgroup's unified directory) and count
// the cgroup's own tasks (sockets for tcp), not its descendants: a pod cgroup whose tasks
// all live in its container cgroups has zeros; the Sampler sums the children into it (each
// row names the BpfCgroupStats members it fills: RollUps()). cpu is the
// kernel's own per-CPU accounting since the cgroup was created, and a live cgroup's values
// include those of its descendants that are not live, so that the roll-up gives cpu.stat's
// total. The other counters start at zero when the probe loads; the scheduler probes'
// values are as of each task's last switch off a CPU.
//
// Usage (one thread calls Collect and then PerCpuNs; ProbeStatus() is thread-safe):
//   auto probes = BpfProbes::Create(BpfOptions::WithMode(BpfMode::kAuto));
//   if (!probes.ok()) ...              // only in kOn mode, when a probe fails to load
//   (*probes)->Collect(live_ids, &by_id, &ooms, /*per_cpu_wanted=*/true, /*every_cgroup_listed=*/true);
//   by_id[id].per_cpu_ns                // CpuStats.per_cpu_ns (also PerCpuNs(id))
//
// Collect() fills an entry for every live id when any probe that fills BpfCgroupStats is up;
// fields of a probe that is down stay empty (std::nullopt / empty vector), fields of an up
// probe are set, 0 when nothing happened. OOM events carry no cgroup_path (the caller
// resolves it from cgroup_id). Map entries of cgroups that are not live and no longer exist
// are deleted at Collect; entries of existing untracked cgroups are deleted once a map is
// three quarters full, by a collection that listed every cgroup. Never aborts: a probe that fails to load is down, with
// its error.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "collector/enrichment.h"

namespace statlet {

class CgroupFileSource;

namespace bpf {
class Probe;
}

// --bpf=auto|on|off. auto: load what loads, skip the rest with one log line each.
// on: Create fails unless every probe loads. off: load nothing.
enum class BpfMode { kAuto, kOn, kOff };
bool ParseBpfMode(std::string_view s, BpfMode* out);
const char* BpfModeName(BpfMode mode);

struct BpfOptions {
  BpfMode mode = BpfMode::kAuto;
  // Entries of each per-cgroup kernel map: cgroups each probe can count at once. Per-CPU
  // maps preallocate max_cgroups * possible CPUs values (sched_switch: 248 bytes each).
  uint32_t max_cgroups = 4096;
  // The cgroup v2 mount used to check whether a pruned cgroup id still exists;
  // "" detects /sys/fs/cgroup or /sys/fs/cgroup/unified.
  std::string cgroup2_root;
  // Probes to load, by name; empty loads DefaultProbeNames(). The others report down with
  // "not selected". runqlat and faults run on every context switch: they must be named.
  std::vector<std::string> probes;
  // The cgroups (relative to the unified root) under which the net probe counts: the pods'
  // root, e.g. /kubepods (the daemon passes --collector.subtree); empty: the whole host.
  std::vector<std::string> net_subtrees;

  static BpfOptions WithMode(BpfMode m) {
    BpfOptions o;
    o.mode = m;
    return o;
  }
};

struct BpfProbeStatus {
  std::string probe;  // its registry row's name
  bool up = false;
  std::string error;  // why it is down ("disabled" in off mode)
  // Kernel side: updates refused by a full map / ring buffer (cpu, runqlat and faults
  // share one count).
  uint64_t lost_events = 0;
};

class BpfProbes final : public BpfSource {
 public:
  static StatusOr<std::unique_ptr<BpfProbes>> Create(const BpfOptions& options);
  ~BpfProbes() override;

  void Collect(const std::vector<uint64_t>& live_cgroup_ids, std::unordered_map<uint64_t, BpfCgroupStats>* by_cgroup_id,
               std::vector<OomEvent>* new_ooms, bool per_cpu_wanted, bool every_cgroup_listed) override;

  // Nanoseconds the cgroup's tasks ran on each CPU (index = CPU number, one per possible
  // CPU) as of the last Collect, the same as that Collect's BpfCgroupStats::per_cpu_ns;
  // null when the cpu probe is down or the id was not live. Valid until the next Collect.
  const std::vector<uint64_t>* PerCpuNs(uint64_t cgroup_id) const;

  // One entry per registry row, in its order, whether up or down.
  std::vector<BpfProbeStatus> ProbeStatus() const;
  std::vector<SourceState> ProbeStates() const override;
  // Every registry row's members (a probe that is down fills none, so adding them is a no-op).
  std::vector<BpfRollUp> RollUps() const override;
  void ReleaseMappings() override;
  bool AnyUp() const;

  // The cgroup_stats probe as the collector's file source (CollectorOptions::file_source),
  // or null when it is not up. Lives as long as this object; used by the collecting thread.
  CgroupFileSource* FileSource() const { return file_source_; }

  // The registry's names, in its order.
  static const std::vector<std::string>& ProbeNames();
  // What an empty BpfOptions::probes loads: the registry's default rows.
  static const std::vector<std::string>& DefaultProbeNames();

 private:
  BpfProbes();

  struct Slot {
    bpf::Probe* probe = nullptr;  // owned by loaded_; one program may serve several probes
    bool up = false;
    std::string error;
  };
  std::vector<Slot> slots_;  // one per registry row
  std::vector<std::unique_ptr<bpf::Probe>> loaded_;
  int cgroup2_root_fd_ = -1;
  CgroupFileSource* file_source_ = nullptr;
  std::unordered_map<uint64_t, std::vector<uint64_t>> per_cpu_ns_;
  mutable std::mutex collect_mu_;  // Collect vs ProbeStatus (lost counters read the maps)
};

}  // namespace statlet
