// Recognises what a cgroup path is from its name alone: the kubelet's layouts under both
// cgroup drivers (systemd: kubepods.slice/kubepods-burstable.slice/
// kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope; cgroupfs:
// kubepods/burstable/pod<uid>/<id>), with containerd, CRI-O and Docker container names,
// and runtime containers outside Kubernetes (docker-<id>.scope, /docker/<id>).
#pragma once

#include <string>
#include <string_view>

#include "snapshot/snapshot.h"

namespace statlet {

struct PathClass {
  CgroupKind kind = CgroupKind::kOther;
  QosClass qos = QosClass::kUnknown;
  RuntimeKind runtime = RuntimeKind::kUnknown;
  CgroupDriver driver = CgroupDriver::kUnknown;
  std::string container_id;
  std::string pod_uid;   // dashes restored for the systemd driver's underscores
  std::string pod_path;  // the pod cgroup's path, for containers
};

PathClass ClassifyCgroupPath(std::string_view path);

// "<prefix><64 hex>[.scope]" → id; returns false when `name` is not such a container name.
bool ParseContainerScope(std::string_view name, RuntimeKind* runtime, std::string* id);

}  // namespace statlet
