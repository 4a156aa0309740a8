// A Pod object of the API server (core/v1, JSON) → what Memory QoS needs of it: its QoS class,
// its containers' memory requests and limits and runtime ids, and the pod's request as the
// kubelet sums it (k8s.io/component-helpers resource.PodRequests).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "collector/memory_qos_inputs.h"

namespace statlet::kube {

// An error for an object without metadata.uid or with a quantity that is not one.
StatusOr<PodMemorySpec> PodMemorySpecFromJson(const nlohmann::json& pod);

// "containerd://0123…" → "0123…" (the runtime's id, as cgroup paths carry it).
std::string RuntimeContainerId(const std::string& status_container_id);

}  // namespace statlet::kube
