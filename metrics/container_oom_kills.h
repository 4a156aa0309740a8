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
// `fold_after` collections in a row is folded into its series and its id and count remembered (a
// bounded list): should it show again (a collection that missed it), it is tracked again from
// the count it was folded with, so that its later kills count and its earlier ones not twice.
// Names come from the runtime (ContainerMetadata): an instance the runtime never named is
// counted under no name.
//
// One series per (namespace, pod name, container name): two pods of one name (a StatefulSet
// pod made again while the old pod's cgroup lingers) add up in it. A series only grows: a pod
// that goes leaves what its instances counted in the series while another pod of its name
// lives. A pod goes once no cgroup of the pod (its pod cgroup, a container; exit records do
// not count, they outlive the pod) was in `pod_gone_after` collections in a row: by default
// the first collection without it, as every cgroup series of the pod goes then; a series goes
// with the last pod of its name. Bounded: past `max_entries` series or `max_instances`
// instances new ones are left out, and counted. Each series keeps its total as instances
// change, so a scrape only walks the series.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "metrics/derived_values.h"
#include "metrics/extra_families.h"
#include "snapshot/snapshot.h"

namespace statlet::metrics {

inline constexpr std::string_view kContainerOomKillsFamily = "statlet_container_oom_kills_total";

struct ContainerOomKillsOptions {
  size_t max_entries = 20000;    // series: (namespace, pod, container name)
  size_t max_instances = 50000;  // container ids tracked (live, and finished while their pod lives)
  size_t max_folded = 8192;      // ids of folded instances remembered
  uint32_t fold_after = 2;       // collections in a row without an instance before it is folded in
  uint32_t pod_gone_after = 1;   // collections in a row without the pod before it goes
  // Whether the family is served (MetricSelection::ServesExtra): when not, Observe does nothing.
  bool served = true;
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
  // max_instances, and once each instance whose series is past max_entries.
  uint64_t dropped() const;

 private:
  // (namespace, pod name, container name), compared as views so that a lookup copies nothing.
  using SeriesKey = std::tuple<std::string, std::string, std::string>;
  using SeriesView = std::tuple<std::string_view, std::string_view, std::string_view>;
  struct KeyLess {
    using is_transparent = void;
    static SeriesView View(const SeriesKey& k) { return {std::get<0>(k), std::get<1>(k), std::get<2>(k)}; }
    static SeriesView View(const SeriesView& k) { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return View(a) < View(b);
    }
  };
  struct Series {
    uint64_t total = 0;  // what every instance counted into it, live or folded
    uint32_t pods = 0;   // pods (uids) of its name that are tracked
  };
  using SeriesMap = std::map<SeriesKey, Series, KeyLess>;
  struct Pod {
    uint64_t serial = 0;                      // a pod made again under its uid gets another
    uint64_t seen_seq = 0;                    // the Observe whose cgroups last showed it
    std::vector<SeriesMap::iterator> series;  // its names' series (each counts it once in pods)
  };
  struct Instance {
    std::string pod_uid;
    Series* series = nullptr;  // null until the runtime names it (or while left out)
    uint64_t earlier = 0;      // what the instance counted before a reset
    uint64_t last = 0;         // its last value
    uint64_t seen_seq = 0;     // the Observe that last saw it
    bool left_out = false;     // its series was over max_entries (counted in dropped once)
    uint64_t counted() const { return earlier + last; }
  };
  struct Folded {
    std::string pod_uid;
    uint64_t pod_serial = 0;   // 0: its pod went, never counted again
    Series* series = nullptr;  // valid while the pod of that serial is tracked
    uint64_t counted = 0;
    std::list<const std::string*>::iterator order;
  };

  void FoldLocked(const std::string& container_id, const Instance& inst, uint64_t pod_serial);
  // Names the instance: finds or makes its series, counts the instance into it.
  void NameLocked(Instance& inst, Pod& pod, const ContainerMetadata& meta);

  const ContainerOomKillsOptions opts_;
  mutable std::mutex mu_;
  uint64_t seq_ = 0;                                     // guarded by mu_
  uint64_t pod_serials_ = 0;                             // guarded by mu_
  SeriesMap series_;                                     // guarded by mu_
  std::unordered_map<std::string, Pod> pods_;            // by pod uid; guarded by mu_
  std::unordered_map<std::string, Instance> instances_;  // by container id; guarded by mu_
  std::unordered_map<std::string, Folded> folded_;       // by container id; guarded by mu_
  std::list<const std::string*> folded_order_;           // folded_'s keys, oldest first; guarded by mu_
  uint64_t dropped_ = 0;                                 // guarded by mu_
};

}  // namespace statlet::metrics
