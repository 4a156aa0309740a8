// The v1 hierarchies' part of the cgroup_stats probe: one cgroup_v1_iter walk per mounted
// cpu, cpuacct and memory hierarchy (co-mounted controllers share one), each rendering
// that hierarchy's files (cgroup_stats_render.h, V1IterFile) for the collector.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "collector/cgroup_hierarchies.h"
#include "collector/kept_file.h"

namespace statlet::bpf {

class CgroupV1Walks {
 public:
  CgroupV1Walks();
  ~CgroupV1Walks();
  CgroupV1Walks(const CgroupV1Walks&) = delete;
  CgroupV1Walks& operator=(const CgroupV1Walks&) = delete;

  // Loads one walk per hierarchy of `h` it renders files of; a hierarchy whose walk cannot
  // load or run is logged and left to cgroupfs. Returns how many walks run.
  size_t Start(const CgroupHierarchies& h, uint32_t max_cgroups);

  // A local index (0 on) for file `file` of hierarchy `h`, or -1.
  int FileIndex(Hierarchy h, std::string_view file) const;
  // Runs the walks over `hierarchies` (bit h: hierarchy h). A walk that fails, or is not
  // run, renders nothing until it runs again; the number of failed walks is returned.
  uint64_t Refresh(uint32_t hierarchies);
  bool Render(uint64_t cgroup_id, int index, ReadBuffer* buf) const;
  // Unmaps the walks' arrays; nothing renders until the next Refresh maps them again.
  void ReleaseMappings();
  // Cgroups the walks visited beyond their maps, in the last Refresh.
  uint64_t unstored() const { return unstored_; }

 private:
  struct Walk;
  std::vector<std::unique_ptr<Walk>> walks_;
  uint64_t page_size_ = 4096;
  uint64_t unstored_ = 0;
};

}  // namespace statlet::bpf
