// Sampler: the SnapshotSource of the daemon. Collects at request time with single-flight
// (callers arriving during a collection join it), reuses a result younger than max_age,
// computes rates against the previous snapshot, and joins metadata and eBPF values.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "collector/collector.h"
#include "collector/enrichment.h"
#include "collector/memory_high_stall.h"
#include "collector/memory_qos.h"
#include "collector/snapshot_source.h"

namespace statlet {

class Sampler : public SnapshotSource {
 public:
  // `metadata` and `bpf` may be null; they must outlive the Sampler.
  Sampler(std::unique_ptr<Collector> collector, MetadataSource* metadata, BpfSource* bpf);

  using SnapshotSource::Get;
  StatusOr<SnapshotPtr> Get(std::chrono::nanoseconds max_age, CollectParts parts) override;
  SamplerStats stats() const override;
  // Called after every successful collection, on the collecting thread, outside the lock
  // (self metrics: collection durations). Set before the first Get.
  void SetCollectionObserver(std::function<void(const Snapshot&)> observer) { observer_ = std::move(observer); }
  // A cgroup's CPU time as one collection read it (rates of cgroups the next ones skip).
  struct UsageMark {
    Opt<int64_t> created_ns;
    uint64_t usage_ns = 0;
    int64_t at_ns = 0;  // that collection's CLOCK_MONOTONIC
  };
  // Memory QoS rules (expected knobs, zones) and the memory.high stall detector's
  // thresholds. Set before the first Get.
  void SetMemoryQos(const MemoryQosPolicy& policy, const MemoryHighStallOptions& stall) {
    qos_policy_ = policy;
    stall_ = MemoryHighStallDetector(stall);
  }

 private:
  struct Flight;
  StatusOr<SnapshotPtr> CollectOnce(const SnapshotPtr& prev, CollectParts parts);

  std::unique_ptr<Collector> collector_;
  std::function<void(const Snapshot&)> observer_;
  MetadataSource* metadata_;
  BpfSource* bpf_;
  MemoryQosPolicy qos_policy_;
  // Fed by CollectOnce only; collections are single-flight, so one thread at a time.
  MemoryHighStallDetector stall_{MemoryHighStallOptions()};
  // Also CollectOnce's only: by cgroup path, the cgroups that are not containers, while
  // collections that read containers alone follow one that read them (see FillRates).
  std::unordered_map<std::string, UsageMark> usage_marks_;

  mutable std::mutex mu_;
  std::shared_ptr<Flight> in_flight_;  // guarded by mu_
  SnapshotPtr last_;                   // guarded by mu_
  CollectParts wanted_next_;           // guarded by mu_: parts callers wait for
  SamplerStats stats_;                 // guarded by mu_
  std::vector<OomEvent> ooms_;         // guarded by mu_ (bounded ring of recent events)
};

}  // namespace statlet
