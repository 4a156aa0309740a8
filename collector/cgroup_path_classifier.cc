#include "collector/cgroup_path_classifier.h"

#include <vector>

namespace statlet {
namespace {

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return !s.empty();
}

bool ConsumePrefix(std::string_view* s, std::string_view prefix) {
  if (s->substr(0, prefix.size()) != prefix) return false;
  s->remove_prefix(prefix.size());
  return true;
}
bool ConsumeSuffix(std::string_view* s, std::string_view suffix) {
  if (s->size() < suffix.size() || s->substr(s->size() - suffix.size()) != suffix) return false;
  s->remove_suffix(suffix.size());
  return true;
}

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    size_t p = path.find('/');
    std::string_view c = path.substr(0, p);
    if (!c.empty()) out.push_back(c);
    if (p == std::string_view::npos) break;
    path.remove_prefix(p);
  }
  return out;
}

// "pod<uid>" (cgroupfs) or "kubepods[-<qos>]-pod<uid_with_underscores>.slice" (systemd).
bool ParsePodComponent(std::string_view c, std::string* uid, CgroupDriver* driver) {
  std::string_view s = c;
  if (ConsumeSuffix(&s, ".slice")) {
    size_t p = s.rfind("-pod");
    if (p == std::string_view::npos || s.substr(0, 8) != "kubepods") return false;
    s.remove_prefix(p + 4);
    if (s.empty()) return false;
    uid->assign(s);
    for (char& ch : *uid)
      if (ch == '_') ch = '-';
    *driver = CgroupDriver::kSystemd;
    return true;
  }
  if (!ConsumePrefix(&s, "pod") || s.empty()) return false;
  uid->assign(s);
  *driver = CgroupDriver::kCgroupfs;
  return true;
}

bool ParseQosComponent(std::string_view c, QosClass* qos) {
  if (c == "burstable" || c == "kubepods-burstable.slice") *qos = QosClass::kBurstable;
  else if (c == "besteffort" || c == "kubepods-besteffort.slice") *qos = QosClass::kBestEffort;
  else return false;
  return true;
}

}  // namespace

bool ParseContainerScope(std::string_view name, RuntimeKind* runtime, std::string* id) {
  std::string_view s = name;
  ConsumeSuffix(&s, ".scope");
  RuntimeKind rt = RuntimeKind::kUnknown;
  if (ConsumePrefix(&s, "cri-containerd-")) rt = RuntimeKind::kContainerd;
  else if (s.substr(0, 12) == "crio-conmon-") return false;  // CRI-O's monitor, not the container
  else if (ConsumePrefix(&s, "crio-")) rt = RuntimeKind::kCrio;
  else if (ConsumePrefix(&s, "docker-")) rt = RuntimeKind::kDocker;
  else if (ConsumePrefix(&s, "libpod-")) rt = RuntimeKind::kUnknown;
  if (s.size() != 64 || !IsHex(s)) return false;
  *runtime = rt;
  id->assign(s);
  return true;
}

PathClass ClassifyCgroupPath(std::string_view path) {
  PathClass pc;
  auto comps = Components(path);
  if (comps.empty()) {
    pc.kind = CgroupKind::kRoot;
    return pc;
  }
  size_t k = comps.size();
  for (size_t i = 0; i < comps.size(); ++i) {
    if (comps[i] == "kubepods" || comps[i] == "kubepods.slice") {
      k = i;
      break;
    }
  }
  if (k == comps.size()) {
    // Outside Kubernetes: a runtime's container scope, or /docker/<id>, /<namespace>/<id>.
    std::string_view last = comps.back();
    if (ParseContainerScope(last, &pc.runtime, &pc.container_id)) {
      pc.kind = CgroupKind::kContainer;
      pc.driver = last.size() > 6 && last.substr(last.size() - 6) == ".scope" ? CgroupDriver::kSystemd
                                                                              : CgroupDriver::kCgroupfs;
      if (comps.size() >= 2 && comps[comps.size() - 2] == "docker") pc.runtime = RuntimeKind::kDocker;
    }
    return pc;
  }
  pc.driver = comps[k] == "kubepods.slice" ? CgroupDriver::kSystemd : CgroupDriver::kCgroupfs;
  size_t i = k + 1;
  if (i == comps.size()) {
    pc.kind = CgroupKind::kKubepods;
    return pc;
  }
  if (ParseQosComponent(comps[i], &pc.qos)) {
    ++i;
    if (i == comps.size()) {
      pc.kind = CgroupKind::kQos;
      return pc;
    }
  } else {
    pc.qos = QosClass::kGuaranteed;
  }
  CgroupDriver pod_driver;
  if (!ParsePodComponent(comps[i], &pc.pod_uid, &pod_driver)) {
    pc.qos = QosClass::kUnknown;
    return pc;  // something else under kubepods (kOther)
  }
  pc.driver = pod_driver;
  ++i;
  // Rebuild the pod path from the original string (keeps the caller's leading slash).
  {
    size_t pos = 0;
    for (size_t c = 0; c < i; ++c) pos = path.find(comps[c], pos) + comps[c].size();
    pc.pod_path.assign(path.substr(0, pos));
  }
  if (i == comps.size()) {
    pc.kind = CgroupKind::kPod;
    return pc;
  }
  std::string_view c = comps[i];
  if (i + 1 == comps.size()) {
    if (ParseContainerScope(c, &pc.runtime, &pc.container_id)) {
      pc.kind = CgroupKind::kContainer;
      return pc;
    }
    // cgroupfs driver: the bare id; accept any hex id length a runtime may use.
    if (IsHex(c) && c.size() >= 12) {
      pc.kind = CgroupKind::kContainer;
      pc.container_id.assign(c);
      return pc;
    }
  }
  pc.kind = CgroupKind::kOther;  // e.g. a cgroup nested inside a container, or conmon
  pc.container_id.clear();
  return pc;
}

}  // namespace statlet
