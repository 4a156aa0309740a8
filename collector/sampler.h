// Sampler: the SnapshotSource of the daemon. Collects at request time with single-flight
// (callers arriving during a collection join it), reuses a result younger than max_age,
// and joins metadata and eBPF values. It keeps the last snapshot only while some caller
// could still reuse it (ReleaseStale): rates and events need nothing of it.
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
#include "collector/exit_records.h"
#include "collector/machine_source.h"
#include "collector/memory_high_stall.h"
#include "collector/memory_qos.h"
#include "collector/memory_qos_inputs.h"
#include "snapshot/snapshot_source.h"

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
  // Drops the last snapshot once it is older than the largest max_age any caller has asked
  // with (no caller can reuse it then; ~2 KB a cgroup) and, when no collection runs, the
  // eBPF walks' mapped arrays (BpfSource::ReleaseMappings). Returns the bytes of its
  // entries when that freed it, 0 otherwise (none, still reusable, or a call still
  // answering from it, which frees it once sent). Called periodically (the daemon's
  // memory trimmer).
  size_t ReleaseStale();
  // The Memory QoS view's inputs (the kubelet's settings and the API server's pods, either
  // may be null) and the memory.high stall detector's thresholds. Set before the first Get;
  // the sources must stay valid while the Sampler collects.
  struct MemoryQosSources {
    MemoryQosSettingsSource* settings = nullptr;
    PodSpecSource* pods = nullptr;
    std::string kernel_release;
    uint64_t at_limit_margin_bytes = 64 * 4096;
  };
  // Exited containers' final stats, merged into every snapshot while they are retained
  // (null: none). Must outlive the Sampler; set before the first Get.
  void SetExitRecords(ExitRecords* records) { exits_ = records; }
  void SetMemoryQos(MemoryQosSources sources, const MemoryHighStallOptions& stall) {
    qos_sources_ = std::move(sources);
    stall_ = MemoryHighStallDetector(stall);
  }
  // The machine's facts every snapshot carries (null: none). Set before the first Get; it
  // must outlive the Sampler.
  void SetMachine(MachineSource* machine) { machine_ = machine; }

 private:
  struct Flight;
  StatusOr<SnapshotPtr> CollectOnce(CollectParts parts);

  std::unique_ptr<Collector> collector_;
  std::function<void(const Snapshot&)> observer_;
  MetadataSource* metadata_;
  BpfSource* bpf_;
  ExitRecords* exits_ = nullptr;
  MemoryQosSources qos_sources_;
  MachineSource* machine_ = nullptr;
  // Fed by CollectOnce only; collections are single-flight, so one thread at a time.
  MemoryHighStallDetector stall_{MemoryHighStallOptions()};

  mutable std::mutex mu_;
  std::shared_ptr<Flight> in_flight_;  // guarded by mu_
  SnapshotPtr last_;                   // guarded by mu_
  int64_t reuse_window_ns_ = 0;        // guarded by mu_: the largest max_age asked for
  CollectParts wanted_next_;           // guarded by mu_: parts callers wait for
  SamplerStats stats_;                 // guarded by mu_
  std::vector<OomEvent> ooms_;         // guarded by mu_ (bounded ring of recent events)
};

}  // namespace statlet
