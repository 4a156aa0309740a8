// The kubelet's configuration file (a KubeletConfiguration, kubelet.config.k8s.io/v1beta1,
// YAML or JSON; kubeadm writes it to /var/lib/kubelet/config.yaml): the fields Memory QoS
// depends on, with the spellings of kubernetes/kubelet config/v1beta1/types.go.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace statlet::kube {

struct KubeletConfigFacts {
  std::optional<bool> memory_qos_gate;  // featureGates.MemoryQoS
  // memoryThrottlingFactor; absent and null are the same (the kubelet's pointer stays nil,
  // then takes its version's default).
  std::optional<double> throttling_factor;
  std::optional<std::string> reservation_policy;  // memoryReservationPolicy, as written
  // What the kubelet itself would refuse or ignore (an unexpected kind, a factor outside
  // (0, 1]), for the log.
  std::vector<std::string> warnings;
};

// Parses a configuration document; an error for text that is not a YAML mapping or holds a
// field of the wrong type.
StatusOr<KubeletConfigFacts> ParseKubeletConfig(const std::string& text);

}  // namespace statlet::kube
