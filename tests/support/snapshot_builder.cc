#include "tests/support/snapshot_builder.h"

#include <algorithm>

namespace statlet::testing {

SnapshotBuilder::SnapshotBuilder(int64_t timestamp_ns, uint64_t sequence, uint32_t num_cpus) {
  s_.timestamp_ns = timestamp_ns;
  s_.sequence = sequence;
  s_.num_cpus = num_cpus;
}

CgroupStats& SnapshotBuilder::Add(std::string path, CgroupKind kind) {
  CgroupStats& c = s_.cgroups.emplace_back();
  c.id.cgroup_path = std::move(path);
  c.id.kind = kind;
  return c;
}

CgroupStats& SnapshotBuilder::AddPod(std::string path, const std::string& uid) {
  CgroupStats& c = Add(std::move(path), CgroupKind::kPod);
  c.id.pod_uid = uid;
  return c;
}

CgroupStats& SnapshotBuilder::AddContainer(const std::string& pod_path, const std::string& id, const std::string& uid) {
  CgroupStats& c = Add(pod_path + "/" + id, CgroupKind::kContainer);
  c.id.container_id = id;
  c.id.pod_uid = uid;
  c.id.parent_path = pod_path;
  return c;
}

void SnapshotBuilder::AddNetns(uint64_t inode, std::vector<NetInterfaceStats> interfaces) {
  s_.netns[inode] = NetNamespaceStats{inode, std::move(interfaces)};
}

Snapshot SnapshotBuilder::Build() {
  std::sort(s_.cgroups.begin(), s_.cgroups.end(),
            [](const CgroupStats& a, const CgroupStats& b) { return a.id.cgroup_path < b.id.cgroup_path; });
  return std::move(s_);
}

}  // namespace statlet::testing
