// statlet's optional eBPF probes, as a BpfSource for the Sampler.
//
// Five probes, each reported on its own (names are the `probe` label of the
// statlet_bpf_probe_up gauge) and each selectable on its own:
//   cpu      per-CPU running time per cgroup                          -> per_cpu_ns
//   runqlat  run-queue latency, log2 microsecond histogram            -> runq_latency_*
//   faults   minor and major page faults                              -> minor/major_faults
//   oom      OOM kills: events (pid, comm, cgroup, constraint), count -> new_ooms, oom_kills
//   tcp      TCP retransmits and drops by kernel drop reason          -> tcp_*
// cpu, runqlat and faults share one sched_switch program (see sched_switch.bpf.c): they
// load together and fail together, and count only when selected.
// All are keyed by cgroup v2 id (the inode of the cgroup's unified directory) and count
// the cgroup's own tasks (sockets for tcp), not its descendants: a pod cgroup whose tasks
// all live in its container cgroups has zeros; sum the children to roll up. Counters
// start at zero when the probe loads, not when the cgroup was created. The scheduler
// probes' values are as of each task's last switch off a CPU.
//
// Usage (one thread calls Collect and then PerCpuNs; ProbeStatus() is thread-safe):
//   auto probes = BpfProbes::Create(BpfOptions::WithMode(BpfMode::kAuto));
//   if (!probes.ok()) ...              // only in kOn mode, when a probe fails to load
//   (*probes)->Collect(live_ids, &by_id, &ooms);
//   by_id[id].per_cpu_ns                // CpuStats.per_cpu_ns (also PerCpuNs(id))
//
// Collect() fills an entry for every live id when any probe that fills BpfCgroupStats is up;
// fields of a probe that is down stay empty (std::nullopt / empty vector), fields of an up
// probe are set, 0 when nothing happened. OOM events carry no cgroup_path (the caller
// resolves it from cgroup_id). Map entries of cgroups that are not live and no longer exist
// are deleted at Collect; entries of existing untracked cgroups are deleted once a map is
// three quarters full. Never aborts: a probe that fails to load is down, with its error.
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
  // Probes to load, by name; empty loads all. The others report down with "not selected".
  // Lets a node skip the scheduler probes (cpu, runqlat), which run on every context switch.
  std::vector<std::string> probes;

  static BpfOptions WithMode(BpfMode m) {
    BpfOptions o;
    o.mode = m;
    return o;
  }
};

struct BpfProbeStatus {
  std::string probe;     // "cpu", "runqlat", "faults", "oom", "tcp"
  bool up = false;
  std::string error;     // why it is down ("disabled" in off mode)
  // Kernel side: updates refused by a full map / ring buffer (cpu, runqlat and faults
  // share one count).
  uint64_t lost_events = 0;
};

class BpfProbes final : public BpfSource {
 public:
  static StatusOr<std::unique_ptr<BpfProbes>> Create(const BpfOptions& options);
  ~BpfProbes() override;

  void Collect(const std::vector<uint64_t>& live_cgroup_ids,
               std::unordered_map<uint64_t, BpfCgroupStats>* by_cgroup_id,
               std::vector<OomEvent>* new_ooms) override;

  // Nanoseconds the cgroup's tasks ran on each CPU (index = CPU number, one per possible
  // CPU) as of the last Collect, the same as that Collect's BpfCgroupStats::per_cpu_ns;
  // null when the cpu probe is down or the id was not live. Valid until the next Collect.
  const std::vector<uint64_t>* PerCpuNs(uint64_t cgroup_id) const;

  // One entry per probe, in the order above, whether up or down.
  std::vector<BpfProbeStatus> ProbeStatus() const;
  std::vector<SourceState> ProbeStates() const override;
  bool AnyUp() const;

  static const std::vector<std::string>& ProbeNames();

 private:
  BpfProbes();

  struct Slot {
    bpf::Probe* probe = nullptr;  // owned by loaded_; one program may serve several probes
    bool up = false;
    std::string error;
  };
  std::vector<Slot> slots_;  // one per ProbeNames() entry
  std::vector<std::unique_ptr<bpf::Probe>> loaded_;
  int cgroup2_root_fd_ = -1;
  std::unordered_map<uint64_t, std::vector<uint64_t>> per_cpu_ns_;
  mutable std::mutex collect_mu_;  // Collect vs ProbeStatus (lost counters read the maps)
};

}  // namespace statlet
