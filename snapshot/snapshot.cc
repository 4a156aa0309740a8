#include "snapshot/snapshot.h"

#include <algorithm>

namespace statlet {

const char* CgroupKindName(CgroupKind k) {
  switch (k) {
    case CgroupKind::kRoot: return "root";
    case CgroupKind::kKubepods: return "kubepods";
    case CgroupKind::kQos: return "qos";
    case CgroupKind::kPod: return "pod";
    case CgroupKind::kContainer: return "container";
    case CgroupKind::kOther: return "other";
  }
  return "other";
}

const char* QosClassName(QosClass q) {
  switch (q) {
    case QosClass::kGuaranteed: return "guaranteed";
    case QosClass::kBurstable: return "burstable";
    case QosClass::kBestEffort: return "besteffort";
    case QosClass::kUnknown: break;
  }
  return "";
}

const char* RuntimeKindName(RuntimeKind r) {
  switch (r) {
    case RuntimeKind::kContainerd: return "containerd";
    case RuntimeKind::kCrio: return "crio";
    case RuntimeKind::kDocker: return "docker";
    case RuntimeKind::kUnknown: break;
  }
  return "";
}

const char* ExitReasonName(ExitReason r) {
  switch (r) {
    case ExitReason::kCompleted: return "completed";
    case ExitReason::kOomKilled: return "oom_killed";
    case ExitReason::kKilled: return "killed";
  }
  return "";
}

const CgroupStats* Snapshot::FindByPath(const std::string& path) const {
  auto it = std::lower_bound(cgroups.begin(), cgroups.end(), path,
                             [](const CgroupStats& c, const std::string& p) { return c.id.cgroup_path < p; });
  return it != cgroups.end() && it->id.cgroup_path == path ? &*it : nullptr;
}

const CgroupStats* Snapshot::FindByContainerId(const std::string& id) const {
  if (id.empty()) return nullptr;
  for (const auto& c : cgroups) {
    if (c.id.container_id == id) return &c;
  }
  return nullptr;
}

std::vector<int32_t> Snapshot::NearestAncestors() const {
  // Paths are sorted, so a cgroup's ancestors precede it and a stack of the open chain
  // of ancestors answers each lookup: pop until the top is a prefix directory of the path.
  std::vector<int32_t> parent(cgroups.size(), -1);
  std::vector<int32_t> chain;
  auto is_under = [](const std::string& path, const std::string& root) {
    if (root == "/") return path != "/";
    return path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/';
  };
  for (size_t i = 0; i < cgroups.size(); ++i) {
    const std::string& p = cgroups[i].id.cgroup_path;
    while (!chain.empty() && !is_under(p, cgroups[static_cast<size_t>(chain.back())].id.cgroup_path)) chain.pop_back();
    if (!chain.empty()) parent[i] = chain.back();
    chain.push_back(static_cast<int32_t>(i));
  }
  return parent;
}

const NetNamespaceStats* Snapshot::Netns(const CgroupStats& c) const {
  if (!c.netns_inode) return nullptr;
  auto it = netns.find(*c.netns_inode);
  return it == netns.end() ? nullptr : &it->second;
}

}  // namespace statlet
