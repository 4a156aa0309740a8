#include "collector/memory_protection.h"

#include <algorithm>
#include <string_view>

namespace statlet {
namespace {

std::string_view Dirname(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

ProtectionBounds PassedDown(const Snapshot& snap, const std::vector<int32_t>& parents) {
  const size_t n = snap.cgroups.size();
  ProtectionBounds b;
  b.min.assign(n, std::nullopt);
  b.low.assign(n, std::nullopt);
  // Paths are sorted: a parent's bound is known before its children's.
  for (size_t i = 0; i < n; ++i) {
    const std::string& path = snap.cgroups[i].id.cgroup_path;
    if (path == "/") continue;  // the root: exempt, not bounded
    const std::string_view up = Dirname(path);
    if (up == "/") {
      b.min[i] = kUnlimited;
      b.low[i] = kUnlimited;
      continue;
    }
    const int32_t p = i < parents.size() ? parents[i] : -1;
    if (p < 0 || snap.cgroups[static_cast<size_t>(p)].id.cgroup_path != up) continue;  // a gap: unknown
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
