#include "collector/snapshot.h"

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

const NetNamespaceStats* Snapshot::Netns(const CgroupStats& c) const {
  if (!c.netns_inode) return nullptr;
  auto it = netns.find(*c.netns_inode);
  return it == netns.end() ? nullptr : &it->second;
}

}  // namespace statlet
