// Memory QoS (KEP-2570) as each kubelet generation writes it: the memory.min, memory.low and
// memory.high a kubelet leaves on a container, pod, QoS and kubepods cgroup, from the
// requests and limits, the node's allocatable memory and the kubelet's settings, and the
// defaults of those settings per version. Pure functions; the one place these rules live.
//
// Sources (docs/memory-qos.md lists them per rule): kubernetes/enhancements
// keps/sig-node/2570-memory-qos/README.md at the revisions of v1.22 (ca09c089), v1.27
// (03a72738), v1.36 (476d6d9d) and v1.37 (a6a23fab); kubernetes/kubelet
// config/v1beta1/types.go per tag; the blog posts "Kubernetes v1.36: Tiered Memory Protection
// with Memory QoS" and "Kubernetes v1.37: Memory QoS Graduates to Beta"; kubernetes/kubernetes
// pull requests 115371, 137719, 138139, 140007 and 140267.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "snapshot/snapshot.h"

namespace statlet {

const char* MemoryQosGenerationName(MemoryQosGeneration g);          // "unknown", "none", "v1.22" … "v1.37"
const char* MemoryReservationPolicyName(MemoryReservationPolicy p);  // "", "None", "TieredReservation"
bool ParseMemoryReservationPolicy(std::string_view s, MemoryReservationPolicy* out);  // "None", "TieredReservation"
const char* KubeletSettingSourceName(KubeletSettingSource s);  // "unknown", "default", "config", "flag", "apiserver"
// The rules label of statlet_node_memory_qos_info: the generation, "off" when the kubelet
// writes no knobs (feature gate off, or a kubelet before v1.22), "unknown".
const char* MemoryQosRulesLabel(const MemoryQosRules& r);

// A kubelet version as the Node object or the kubelet print it ("v1.36.2", "1.37.0-rc.1",
// "v1.37.1+k3s1") → its minor version (major must be 1). nullopt when not a version.
std::optional<int> KubeletMinorVersion(std::string_view version);
// The generation whose rules a kubelet of that minor version follows.
MemoryQosGeneration GenerationOfMinor(int minor);
// The newest minor version with upstream facts; later versions are judged by its rules.
inline constexpr int kNewestKnownMinor = 37;

// The MemoryQoS feature gate's default: on from v1.37 (beta).
bool DefaultFeatureGate(MemoryQosGeneration g);
// memoryThrottlingFactor's default: 0.8 (v1.22), 0.9 (v1.27 to v1.36), none (v1.37: nil,
// no memory.high unless the node sets one).
std::optional<double> DefaultThrottlingFactor(MemoryQosGeneration g);
// The reservation policy a generation applies when the configuration names none.
MemoryReservationPolicy DefaultReservationPolicy(MemoryQosGeneration g);
// Whether a generation knows memoryReservationPolicy (v1.36+).
bool HasReservationPolicy(MemoryQosGeneration g);

// Which knob protects a request of a pod of class `qos`; nullopt when none does (BestEffort,
// policy None, rules that do not apply, an unknown class under TieredReservation).
enum class ProtectionKnob : uint8_t { kMin, kLow };
std::optional<ProtectionKnob> ProtectingKnob(const MemoryQosRules& rules, QosClass qos);

// What the kubelet leaves in a cgroup's memory files: min / low 0 where it sets none (the
// kernel's default), high kUnlimited where it leaves "max". A field is absent when it cannot
// be told (memory.high of a container without a limit while node allocatable is unknown;
// memory.high of pods, QoS and kubepods cgroups, which the kubelet manages only for pods
// with pod-level resources from v1.37, not modelled).
struct ExpectedKnobs {
  std::optional<uint64_t> min, low, high;
};

// A container of a pod of class `qos`: request and limit in bytes (0: none).
// node_allocatable: bytes, absent when unknown (then no memory.high for a container
// without a limit).
ExpectedKnobs ContainerKnobs(const MemoryQosRules& rules, QosClass qos, uint64_t request, uint64_t limit,
                             std::optional<uint64_t> node_allocatable);
// memory.high of a container alone (kUnlimited: "max"; nullopt: cannot be told).
std::optional<uint64_t> ContainerMemoryHigh(const MemoryQosRules& rules, uint64_t request, uint64_t limit,
                                            std::optional<uint64_t> node_allocatable);
// A pod cgroup: its request as the kubelet sums it (collector/memory_qos.h).
ExpectedKnobs PodKnobs(const MemoryQosRules& rules, QosClass qos, uint64_t pod_request);

// The requests of the pods of one kubepods tree, summed per class.
struct ClassRequests {
  uint64_t guaranteed = 0, burstable = 0;
};
// A QoS cgroup (kubepods/burstable, kubepods/besteffort) of class `qos`.
ExpectedKnobs QosCgroupKnobs(const MemoryQosRules& rules, QosClass qos, const ClassRequests& sums);
// The kubepods cgroup (where Guaranteed pods sit too).
ExpectedKnobs KubepodsKnobs(const MemoryQosRules& rules, const ClassRequests& sums);

}  // namespace statlet
