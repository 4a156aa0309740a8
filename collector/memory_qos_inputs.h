// What the Memory QoS view needs beyond the cgroups, as Sampler inputs: the kubelet's settings
// (its configuration file and version, kube/kubelet_settings.h) and the pods of this node as
// the API server knows them (kube/pod_watch.h). Like the other enrichment sources, each is
// optional and cheap to ask once per collection: it serves what it cached, never waits on the
// network.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "snapshot/snapshot.h"

namespace statlet {

// One container of a pod: its memory request and limit in bytes (0: none), as the kubelet
// applied them (status.containerStatuses[].resources when the API reports it, else the spec).
struct ContainerMemorySpec {
  std::string name;
  std::string container_id;  // without the runtime's "containerd://" prefix; "" before it runs
  uint64_t request = 0, limit = 0;
};

struct PodMemorySpec {
  std::string uid;
  QosClass qos = QosClass::kUnknown;  // status.qosClass
  // The containers that run for the pod's lifetime: its app containers and its restartable
  // init containers (sidecars).
  std::vector<ContainerMemorySpec> containers;
  uint64_t request = 0;  // the pod's request as the kubelet sums it (kube/pod_resources.h)
};

struct PodMemorySpecs {
  std::unordered_map<std::string, PodMemorySpec> by_uid;
  std::unordered_map<std::string, std::string> uid_by_container_id;
  // status.nodeInfo.kubeletVersion of this node's Node object; "" when not (yet) known.
  std::string kubelet_version;
  // The container of a pod by runtime id, else by the pod's uid and the container's name.
  const ContainerMemorySpec* Find(const std::string& container_id, const std::string& pod_uid,
                                  const std::string& name) const;
  const PodMemorySpec* Pod(const std::string& uid) const {
    auto it = by_uid.find(uid);
    return it == by_uid.end() ? nullptr : &it->second;
  }
};

class PodSpecSource {
 public:
  virtual ~PodSpecSource() = default;
  // The pods as last listed and watched; never null (empty while not yet listed).
  virtual std::shared_ptr<const PodMemorySpecs> Current() = 0;
  // Whether the API server answers (name: its URL), for the self metrics and logs.
  virtual SourceState State() const = 0;
};

class MemoryQosSettingsSource {
 public:
  virtual ~MemoryQosSettingsSource() = default;
  // The rules to judge a collection by, given the kubelet version the API server reports
  // ("" when none): re-judged when that version or the kubelet's configuration file changed
  // (one stat of the file per call). Never null.
  virtual std::shared_ptr<const MemoryQosBasis> Current(const std::string& apiserver_kubelet_version) = 0;
};

}  // namespace statlet
