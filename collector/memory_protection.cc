#include "collector/memory_protection.h"

#include <algorithm>
#include <string_view>

namespace statlet {

ProtectionBounds PassedDown(const Snapshot& snap, const std::vector<int32_t>& parents) {
  const size_t n = snap.cgroups.size();
  ProtectionBounds b;
  b.min.assign(n, std::nullopt);
  b.low.assign(n, std::nullopt);
  // Paths are sorted: a parent's bound is known before its children's.
  for (size_t i = 0; i < n; ++i) {
    const std::string_view path = snap.cgroups[i].id.cgroup_path;
    if (path.size() <= 1) continue;  // the root: exempt, not bounded
    // The nearest ancestor in the snapshot is a prefix directory of the path
    // (Snapshot::NearestAncestors); it is the parent when no '/' follows it. Otherwise a
    // cgroup in between is missing: unknown. (A forward find is a memchr.)
    const int32_t p = i < parents.size() ? parents[i] : -1;
    const std::string_view up = p >= 0 ? std::string_view(snap.cgroups[static_cast<size_t>(p)].id.cgroup_path) : "/";
    const size_t rest = up == "/" ? 1 : up.size() + 1;
    if (path.find('/', rest) != std::string_view::npos) continue;
    if (up == "/") {  // a child of the root: nothing above it
      b.min[i] = kUnlimited;
      b.low[i] = kUnlimited;
      continue;
    }
    const size_t j = static_cast<size_t>(p);
    const MemoryStats& pm = snap.cgroups[j].memory;
    if (b.min[j] && pm.min_bytes) b.min[i] = std::min(*b.min[j], *pm.min_bytes);
    if (b.low[j] && pm.low_bytes) b.low[i] = std::min(*b.low[j], *pm.low_bytes);
  }
  return b;
}

void MarkCappedProtection(const ProtectionBounds& bounds, Snapshot* snap) {
  for (size_t i = 0; i < snap->cgroups.size(); ++i) {
    CgroupStats& c = snap->cgroups[i];
    const MemoryStats& m = c.memory;
    if (m.min_bytes && *m.min_bytes > 0 && bounds.min[i]) c.memory_qos.min_capped = *m.min_bytes > *bounds.min[i];
    if (m.low_bytes && *m.low_bytes > 0 && bounds.low[i]) c.memory_qos.low_capped = *m.low_bytes > *bounds.low[i];
  }
}

}  // namespace statlet
