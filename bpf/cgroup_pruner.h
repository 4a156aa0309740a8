// Decides which per-cgroup map entries to drop at a collection.
//
// Entries of the live (tracked) cgroups stay. An entry of any other cgroup is dropped when
// that cgroup no longer exists — checked by opening the cgroup by id through the v2
// mount (open_by_handle_at with a kernfs file handle) — or when its map is crowded. When
// the existence check is unavailable, every non-live entry is dropped.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace statlet::bpf {

class CgroupPruner {
 public:
  // `cgroup2_root_fd` is an O_PATH/O_DIRECTORY fd of the unified mount, or -1.
  CgroupPruner(const std::vector<uint64_t>& live_ids, int cgroup2_root_fd);

  bool IsLive(uint64_t id) const { return live_.count(id) != 0; }
  // For a non-live id: whether to delete its entry. Existence checks are cached per pruner.
  bool ShouldPrune(uint64_t id, bool map_crowded);
  const std::unordered_set<uint64_t>& live() const { return live_; }

 private:
  bool CgroupExists(uint64_t id);

  std::unordered_set<uint64_t> live_;
  int root_fd_;
  std::unordered_map<uint64_t, bool> exists_;
};

// Opens the unified cgroup mount for CgroupPruner: `path` if given, else /sys/fs/cgroup
// when it is cgroup2, else /sys/fs/cgroup/unified. Returns -1 when none is found.
int OpenCgroup2Root(const std::string& path);

}  // namespace statlet::bpf
