// Decides which per-cgroup map entries to drop at a collection.
//
// Entries of the live (tracked) cgroups stay. An entry of any other cgroup is dropped when
// that cgroup no longer exists — checked by opening the cgroup by id through the v2
// mount (open_by_handle_at with a kernfs file handle) — or when its map is crowded. When
// the existence check is unavailable, every non-live entry is dropped.
//
// A collection that did not list every cgroup (only pods and containers) drops only entries
// of cgroups known gone: the cgroups it left out are still reported by the next full
// collection, which must find their counters where they were.
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
  // `every_cgroup_listed`: whether `live_ids` holds every cgroup a collection reports.
  CgroupPruner(const std::vector<uint64_t>& live_ids, int cgroup2_root_fd, bool every_cgroup_listed = true);

  bool IsLive(uint64_t id) const { return live_.count(id) != 0; }
  // For a non-live id: whether to delete its entry. Existence checks are cached per pruner.
  bool ShouldPrune(uint64_t id, bool map_crowded);
  const std::unordered_set<uint64_t>& live() const { return live_; }

 private:
  enum class Existence : uint8_t { kExists, kGone, kUnknown };
  Existence CgroupExists(uint64_t id);

  std::unordered_set<uint64_t> live_;
  int root_fd_;
  bool every_cgroup_listed_;
  std::unordered_map<uint64_t, Existence> exists_;
};

// Opens the unified cgroup mount for CgroupPruner: `path` if given, else /sys/fs/cgroup
// when it is cgroup2, else /sys/fs/cgroup/unified. Returns -1 when none is found.
int OpenCgroup2Root(const std::string& path);

}  // namespace statlet::bpf
