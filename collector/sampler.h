// Sampler: the SnapshotSource of the daemon. Collects at request time with single-flight
// (callers arriving during a collection join it), reuses a result younger than max_age,
// computes rates against the previous snapshot, and joins metadata and eBPF values.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "collector/collector.h"
#include "collector/enrichment.h"
#include "collector/snapshot_source.h"

namespace statlet {

class Sampler : public SnapshotSource {
 public:
  // `metadata` and `bpf` may be null; they must outlive the Sampler.
  Sampler(std::unique_ptr<Collector> collector, MetadataSource* metadata, BpfSource* bpf);

  StatusOr<SnapshotPtr> Get(std::chrono::nanoseconds max_age) override;
  SamplerStats stats() const override;
  // Called after every successful collection, on the collecting thread, outside the lock
  // (self metrics: collection durations). Set before the first Get.
  void SetCollectionObserver(std::function<void(const Snapshot&)> observer) { observer_ = std::move(observer); }

 private:
  struct Flight;
  StatusOr<SnapshotPtr> CollectOnce(const SnapshotPtr& prev);

  std::unique_ptr<Collector> collector_;
  std::function<void(const Snapshot&)> observer_;
  MetadataSource* metadata_;
  BpfSource* bpf_;

  mutable std::mutex mu_;
  std::shared_ptr<Flight> in_flight_;  // guarded by mu_
  SnapshotPtr last_;                   // guarded by mu_
  SamplerStats stats_;                 // guarded by mu_
  std::vector<OomEvent> ooms_;         // guarded by mu_ (bounded ring of recent events)
};

}  // namespace statlet
