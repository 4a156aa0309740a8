// Snapshots built in code for encoder tests and the encoder benchmark: a node with a root
// cgroup, kubepods/QoS parents, and pods of one sandbox plus `containers_per_pod` containers,
// every field filled the way a cgroup v2 host with PSI fills it, plus what the eBPF probes and
// the runtime client add.
#pragma once

#include <cstddef>
#include <memory>

#include "snapshot/snapshot.h"

namespace statlet::testing {

struct SnapshotShape {
  size_t pods = 3;
  size_t containers_per_pod = 2;
  uint32_t num_cpus = 2;
  bool with_metadata = true;
  // eBPF probe values on every cgroup, probe and runtime states, and recent OOM kills.
  bool with_bpf = true;
  uint64_t sequence = 1;
};

Snapshot MakeNodeSnapshot(const SnapshotShape& shape);
// Number of series of each cgroup kind is not fixed; this counts sample lines of a text
// exposition (lines not starting with '#').
size_t CountSamples(const std::string& exposition);

}  // namespace statlet::testing
