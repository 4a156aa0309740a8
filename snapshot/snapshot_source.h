// What servers and exporters depend on: a source of snapshots. The Sampler implements it
// (collection at request time, single-flight, reuse while younger than max_age); tests
// can implement it over a fixed snapshot.
#pragma once

#include <chrono>
#include <cstdint>

#include "base/status.h"
#include "snapshot/snapshot.h"

namespace statlet {

struct SamplerStats {
  uint64_t collections = 0;  // collections actually run
  uint64_t joins = 0;        // callers that joined a collection in flight
  uint64_t reuses = 0;       // callers served a cached snapshot younger than max_age
  uint64_t waits = 0;        // callers that waited out a collection lacking their parts
};

class SnapshotSource {
 public:
  virtual ~SnapshotSource() = default;
  // Returns a snapshot no older than `max_age` (0: always a fresh or in-flight collection)
  // that holds the optional `parts` (see CollectParts). Callers arriving while a
  // collection that reads their parts runs wait for it and share its result.
  virtual StatusOr<SnapshotPtr> Get(std::chrono::nanoseconds max_age, CollectParts parts) = 0;
  StatusOr<SnapshotPtr> Get(std::chrono::nanoseconds max_age) { return Get(max_age, CollectParts::All()); }
  virtual SamplerStats stats() const = 0;
};

}  // namespace statlet
