// A SnapshotSource over one fixed snapshot, for the tests of what serves snapshots (the
// HTTP server, the CRI server): their answers are then a function of that snapshot. Every
// Get answers it, or the failure set by Fail. Thread-safe.
#pragma once

#include <mutex>

#include "snapshot/snapshot_source.h"

namespace statlet::testing {

class FixedSnapshotSource final : public SnapshotSource {
 public:
  explicit FixedSnapshotSource(Snapshot snapshot);

  StatusOr<SnapshotPtr> Get(std::chrono::nanoseconds max_age, CollectParts parts) override;
  using SnapshotSource::Get;
  // Every Get answered is counted as a reuse: the snapshot was never collected.
  SamplerStats stats() const override;

  // From now on Get answers `status` (Ok: the snapshot again).
  void Fail(Status status);
  // From now on Get answers `snapshot`.
  void Set(Snapshot snapshot);
  // The Gets answered with the snapshot.
  int gets() const;

 private:
  SnapshotPtr snapshot_;
  mutable std::mutex mu_;
  Status failure_;
  SamplerStats stats_;
};

}  // namespace statlet::testing
