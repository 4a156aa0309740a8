// Optional sources that enrich a collection: runtime metadata (runtime/) and eBPF maps (bpf/).
// The Sampler calls them once per collection; each may be absent. Implementations must be
// cheap to call (read caches / kernel maps), never block on the network per collection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "snapshot/bpf_roll_up.h"
#include "snapshot/snapshot.h"

namespace statlet {

// Runtime metadata joined onto cgroups by container id (and onto pod cgroups by pod uid).
struct MetadataMap {
  std::unordered_map<std::string, std::shared_ptr<const ContainerMetadata>> by_container_id;
  // The sandbox (pause container) of each pod, by pod uid: names the pod cgroup.
  std::unordered_map<std::string, std::shared_ptr<const ContainerMetadata>> sandbox_by_pod_uid;
};

class MetadataSource {
 public:
  virtual ~MetadataSource() = default;
  // The current cached map; never null (an empty map when the runtime is unknown or down).
  virtual std::shared_ptr<const MetadataMap> Current() = 0;
  // Whether the runtime answers (name = its endpoint), for a self-metric.
  virtual SourceState State() const = 0;
};

// Kernel-side aggregates of the eBPF probes.
class BpfSource {
 public:
  virtual ~BpfSource() = default;
  // Adds this collection's per-cgroup values for the given live cgroup ids (others may be
  // pruned from the kernel maps) and appends OOM events seen since the last call.
  // `per_cpu_wanted` false: no live cgroup needs BpfCgroupStats::per_cpu_ns (cgroupfs gave
  // each its per-CPU time, as v1 cpuacct.usage_percpu does), so the per-CPU walk is skipped.
  // `every_cgroup_listed` false: the collection listed only pods and containers (its parts
  // lack CollectParts::kNonContainerFiles), so the host's own cgroups, which other
  // collections report, are missing from the live ids: only entries of cgroups known to be
  // gone may be pruned, never those of a crowded map, which the next full collection would
  // read from 0 (a counter reset).
  virtual void Collect(const std::vector<uint64_t>& live_cgroup_ids,
                       std::unordered_map<uint64_t, BpfCgroupStats>* by_cgroup_id, std::vector<OomEvent>* new_ooms,
                       bool per_cpu_wanted, bool every_cgroup_listed) = 0;
  // One entry per probe, loaded or not.
  virtual std::vector<SourceState> ProbeStates() const = 0;
  // The BpfCgroupStats members Collect fills, each of which the Sampler adds from every
  // cgroup into its nearest reported ancestor (bpf/probe_registry.cc lists them per probe).
  virtual std::vector<BpfRollUp> RollUps() const = 0;
  // Between collections (never while one runs, nor the file source's Refresh/Render):
  // unmaps the arrays the kernel walks fill, which the next walk maps again. Every page of
  // a mapped BPF array is resident, so an idle daemon holds none.
  virtual void ReleaseMappings() {}
};

}  // namespace statlet
