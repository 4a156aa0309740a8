// The cgroup v2 protection hierarchy: a cgroup's memory.min / memory.low protects it only as
// far as its ancestors' do. Linux Documentation/admin-guide/cgroup-v2.rst: "Effective min
// boundary is limited by memory.min values of all ancestor cgroups" (and the same for
// memory.low), and "The root cgroup should be exempt from resource control". So the most a
// cgroup's configured value can be worth is the smallest value configured on any ancestor
// below the root; a configured value above that is capped.
//
// Over-commit among siblings (children asking for more than their parent passes down, which
// the kernel then shares in proportion to usage) depends on usage at reclaim time and is not
// judged here; the node-wide totals against allocatable show it for the kubepods tree.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "snapshot/snapshot.h"

namespace statlet {

// Per cgroup of a snapshot (same index): the smallest memory.min / memory.low configured on
// its ancestors below the root. kUnlimited for a child of the root (nothing above it limits
// it); nullopt when an ancestor is not in the snapshot or its value was not read.
struct ProtectionBounds {
  std::vector<std::optional<uint64_t>> min, low;
};

// `parents`: Snapshot::NearestAncestors() of the same snapshot.
ProtectionBounds PassedDown(const Snapshot& snap, const std::vector<int32_t>& parents);

// Sets every cgroup's memory_qos.min_capped / low_capped: configured above what its
// ancestors pass down. Left absent where the cgroup configures none (0 or unread) or the
// bound is unknown.
void MarkCappedProtection(const ProtectionBounds& bounds, Snapshot* snap);

// The protection a configured value is worth under `bound` (nullopt bound: the configured
// value, the most it can be).
inline uint64_t EffectiveProtection(uint64_t configured, const std::optional<uint64_t>& bound) {
  return bound && *bound < configured ? *bound : configured;
}

}  // namespace statlet
