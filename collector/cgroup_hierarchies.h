// Which cgroup hierarchies this host mounts and where: pure v2, v1, or hybrid (v1
// controllers plus a cgroup2 mount, as systemd's "hybrid" mode and this project's CI host).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace statlet {

// The hierarchies statlet reads. kUnified is the cgroup2 mount (with or without controllers).
enum Hierarchy : int { kUnified = 0, kV1Cpu, kV1Cpuacct, kV1Memory, kV1Pids, kV1Blkio, kV1Hugetlb, kNumHierarchies };
const char* HierarchyName(Hierarchy h);

struct CgroupHierarchies {
  // Mount point of each hierarchy; empty when not mounted. v1 controllers co-mounted
  // (e.g. "cpu,cpuacct") share one path.
  std::array<std::string, kNumHierarchies> mount;
  // Controllers enabled at the cgroup2 root (cgroup.controllers), e.g. "cpu io memory pids".
  bool v2_cpu = false, v2_memory = false, v2_io = false, v2_pids = false, v2_hugetlb = false;

  bool has(Hierarchy h) const { return !mount[h].empty(); }
  // The hierarchy that answers a resource: v2 when the controller is on the unified
  // hierarchy, else the v1 mount, else kNumHierarchies (not available).
  Hierarchy cpu() const { return v2_cpu ? kUnified : has(kV1Cpuacct) ? kV1Cpuacct : kNumHierarchies; }
  Hierarchy memory() const { return v2_memory ? kUnified : has(kV1Memory) ? kV1Memory : kNumHierarchies; }
  Hierarchy pids() const { return v2_pids ? kUnified : has(kV1Pids) ? kV1Pids : kNumHierarchies; }
  Hierarchy io() const { return v2_io ? kUnified : has(kV1Blkio) ? kV1Blkio : kNumHierarchies; }
  Hierarchy hugetlb() const { return v2_hugetlb ? kUnified : has(kV1Hugetlb) ? kV1Hugetlb : kNumHierarchies; }
  const char* Mode() const;  // "v2", "hybrid", "v1"
};

// Parses /proc/self/mountinfo content; mounts outside `cgroup_mount` are ignored so a
// test can point statlet at a fixture tree. Controllers of the v2 root are read from
// `<unified>/cgroup.controllers` by DetectHierarchies.
StatusOr<CgroupHierarchies> ParseMountinfo(std::string_view mountinfo, std::string_view cgroup_mount);
void ParseV2Controllers(std::string_view controllers, CgroupHierarchies* h);

// Reads <proc_root>/self/mountinfo; falls back to probing `cgroup_mount` itself (a
// fixture tree, or a container without /proc/self/mountinfo): a cgroup.controllers file at
// its top means pure v2.
StatusOr<CgroupHierarchies> DetectHierarchies(const std::string& cgroup_mount, const std::string& proc_root);

// Of `subtrees` (paths relative to the hierarchy roots, e.g. "/kubepods.slice"), those that
// are a directory in no mounted hierarchy: a one-shot view of them would be empty.
std::vector<std::string> MissingSubtrees(const CgroupHierarchies& h, const std::vector<std::string>& subtrees);

}  // namespace statlet
