#include "tests/support/fixed_snapshot_source.h"

namespace statlet::testing {

FixedSnapshotSource::FixedSnapshotSource(Snapshot snapshot)
    : snapshot_(std::make_shared<Snapshot>(std::move(snapshot))) {}

StatusOr<SnapshotPtr> FixedSnapshotSource::Get(std::chrono::nanoseconds, CollectParts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.ok()) return failure_;
  ++stats_.reuses;
  return snapshot_;
}

SamplerStats FixedSnapshotSource::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void FixedSnapshotSource::Fail(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  failure_ = std::move(status);
}

void FixedSnapshotSource::Set(Snapshot snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_ = std::make_shared<Snapshot>(std::move(snapshot));
}

int FixedSnapshotSource::gets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(stats_.reuses);
}

}  // namespace statlet::testing
