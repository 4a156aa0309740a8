// What servers and exporters depend on: a source of snapshots. The Sampler implements it
// (collection at request time, single-flight, reuse while younger than max_age); tests
// can implement it over a fixed snapshot.
#pragma once

#include <chrono>
#include <cstdint>

#include "base/status.h"
#include "collector/snapshot.h"

namespace statlet {

struct SamplerStats {
  uint64_t collections = 0;       // collections actually run
  uint64_t joins = 0;             // callers that joined a collection in flight
  uint64_t reuses = 0;            // callers served a cached snapshot younger than max_age
};

class SnapshotSource {
 public:
  virtual ~SnapshotSource() = default;
  // Returns a snapshot no older than `max_age` (0: always a fresh or in-flight collection).
  // Callers arriving while a collection runs wait for it and share its result.
  virtual StatusOr<SnapshotPtr> Get(std::chrono::nanoseconds max_age) = 0;
  virtual SamplerStats stats() const = 0;
};

}  // namespace statlet
