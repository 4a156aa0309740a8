// What the kubelet would ask the runtime for, read from a DaemonSet manifest: the pod's
// namespaces and labels, and the container's image, args, env, mounts (hostPath volumes,
// read-only where the manifest says so), resources and security context. The e2e stage
// runs statlet's own deploy/kubernetes/daemonset.yaml this way under containerd.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "tests/e2e/cri_driver.h"

namespace statlet::e2e {

struct ManifestHost {
  // A hostPath of the manifest → the path that stands in for it on this host ("/run/containerd"
  // → the stage's containerd directory); a path not listed is used as it is.
  std::map<std::string, std::string> host_paths;
  std::string node_name;  // spec.nodeName, for fieldRef env
  // What the kubelet adds to every container's env (KUBERNETES_SERVICE_HOST, …).
  std::map<std::string, std::string> service_env;
};

struct ManifestPod {
  PodSpec pod;                                  // name, namespace, labels, host namespaces
  lifecycle::ContainerConfig container;         // as the kubelet translates the pod template
  std::vector<std::string> added_capabilities;  // securityContext.capabilities.add
  std::string image;                            // the container's image reference
};

// The DaemonSet's first container (`container` names another), from the first DaemonSet of
// a multi-document YAML file. Errors name what the translation does not support.
StatusOr<ManifestPod> PodFromDaemonSet(const std::string& manifest_path, const ManifestHost& host,
                                       const std::string& container = "");

// "128Mi" → 134217728 (the suffixes Kubernetes quantities use for memory).
StatusOr<int64_t> ParseMemoryQuantity(const std::string& text);

}  // namespace statlet::e2e
