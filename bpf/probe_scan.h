// Implementation of ScanCgroupMap (a template, so the visitor inlines).
#pragma once

#include <cstring>

#include "bpf/percpu_map.h"

namespace statlet::bpf {

template <typename Visit>
bool ScanCgroupMap(int fd, size_t key_size, size_t value_size, uint32_t max_entries, CollectContext& ctx,
                   Visit&& visit) {
  std::vector<uint8_t> dead_keys;
  std::vector<uint8_t> other_keys;  // neither live nor known dead
  size_t entries = 0;
  Status st = ForEachPerCpuEntry(fd, key_size, value_size, [&](const uint8_t* key, const uint8_t* values) {
    entries++;
    uint64_t id;
    std::memcpy(&id, key, sizeof(id));
    if (ctx.pruner->IsLive(id)) {
      visit(id, key, values);
    } else {
      other_keys.insert(other_keys.end(), key, key + key_size);
    }
  });
  // Above three quarters full, entries of untracked cgroups go even when they still exist.
  const bool crowded = entries * 4 > static_cast<size_t>(max_entries) * 3;
  for (size_t off = 0; off < other_keys.size(); off += key_size) {
    uint64_t id;
    std::memcpy(&id, other_keys.data() + off, sizeof(id));
    if (ctx.pruner->ShouldPrune(id, crowded)) {
      dead_keys.insert(dead_keys.end(), other_keys.begin() + off, other_keys.begin() + off + key_size);
    }
  }
  DeleteKeys(fd, key_size, dead_keys);
  return st.ok();
}

}  // namespace statlet::bpf
