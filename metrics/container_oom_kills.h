// ContainerOomKills: OOM kills per container name of a pod, carried across the container's
// restarts (statlet_container_oom_kills_total{namespace, pod, container}). The kernel counts
// per cgroup, and every restart is a new cgroup that starts again at 0; this sums the
// instances of one name while the pod lives.
//
// Fed with every collected snapshot (the Sampler's collection observer). Each container instance
// (one container id) is counted once, with the last value a snapshot showed for it (OomKillsOf,
// metrics/derived_values.h): its live cgroup, or its exit record (collector/exit_records.h) for one
// that exited, merged into every snapshot for the exit retention; an instance whose exit was not
// captured keeps the last value a collection read. A value that goes down (the cgroup made again)
// is a counter reset: what the instance had counted is kept. An instance no snapshot showed for
// `fold_after` collections in a row is folded into its name's total and its id remembered (a
// bounded list), so that it is never counted twice. Names come from the runtime
// (ContainerMetadata): an instance the runtime never named is counted under no name. A pod's names
// go once no cgroup of the pod (its pod cgroup, a container; exit records do not count, they
// outlive the pod) was in `pod_gone_after` collections in a row: by default the first collection
// without it, as every cgroup series of the pod goes then. Bounded: past `max_entries` names or
// `max_instances` instances new ones are left out, and counted.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "metrics/derived_values.h"
#include "metrics/extra_families.h"
#include "snapshot/snapshot.h"

namespace statlet::metrics {

inline constexpr std::string_view kContainerOomKillsFamily = "statlet_container_oom_kills_total";

struct ContainerOomKillsOptions {
  size_t max_entries = 20000;    // (pod, container name) pairs
  size_t max_instances = 50000;  // container ids tracked (live, and finished while their pod lives)
  size_t max_folded = 8192;      // ids of folded instances remembered
  uint32_t fold_after = 2;       // collections in a row without an instance before it is folded in
  uint32_t pod_gone_after = 1;   // collections in a row without the pod before its names go
};

class ContainerOomKills final : public ExtraSource {
 public:
  explicit ContainerOomKills(ContainerOomKillsOptions options = {});

  // One collection's snapshot (metadata joined, exit records merged). Called from the
  // collecting thread; collections are single-flight.
  void Observe(const Snapshot& snap);
  void Collect(std::vector<ExtraFamily>* out) const override;

  struct Total {
    std::string namespace_, pod, container;
    uint64_t oom_kills = 0;
  };
  // The named totals, sorted by (namespace, pod, container).
  std::vector<Total> Totals() const;
  // Left out at the bounds since start: each collection that finds an instance past
  // max_instances, and once each instance whose name is past max_entries.
  uint64_t dropped() const;

 private:
  struct Instance {
    std::string pod_uid;
    std::string name;       // the runtime's container name; "" until it names the instance
    uint64_t earlier = 0;   // what the instance counted before a reset
    uint64_t last = 0;      // its last value
    uint64_t seen_seq = 0;  // the Observe that last saw it
    bool left_out = false;  // its name was over max_entries (counted in dropped once)
  };
  struct Entry {
    std::string namespace_, pod;
    uint64_t folded = 0;  // what the instances folded in had counted
  };
  void FoldLocked(const std::string& container_id, const Instance& inst);

  const ContainerOomKillsOptions opts_;
  mutable std::mutex mu_;
  uint64_t seq_ = 0;                                     // guarded by mu_
  std::unordered_map<std::string, Instance> instances_;  // by container id; guarded by mu_
  // (pod uid, name) keys compared as views: a collection looks every container up without
  // copying its uid and name.
  struct KeyLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::pair<std::string_view, std::string_view>(a.first, a.second) <
             std::pair<std::string_view, std::string_view>(b.first, b.second);
    }
  };
  std::map<std::pair<std::string, std::string>, Entry, KeyLess> entries_;  // by (pod uid, name); guarded by mu_
  std::unordered_map<std::string, uint32_t> pods_unseen_;  // by pod uid: collections in a row without it
  std::deque<std::string> folded_ids_;                     // oldest first; guarded by mu_
  std::unordered_set<std::string> folded_;                 // the same ids; guarded by mu_
  uint64_t dropped_ = 0;                                   // guarded by mu_
};

}  // namespace statlet::metrics
