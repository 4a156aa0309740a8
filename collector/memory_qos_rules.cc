#include "collector/memory_qos_rules.h"

#include <charconv>
#include <cmath>

namespace statlet {

const char* MemoryQosGenerationName(MemoryQosGeneration g) {
  switch (g) {
    case MemoryQosGeneration::kUnknown: return "unknown";
    case MemoryQosGeneration::kNone: return "none";
    case MemoryQosGeneration::kV1_22: return "v1.22";
    case MemoryQosGeneration::kV1_27: return "v1.27";
    case MemoryQosGeneration::kV1_36: return "v1.36";
    case MemoryQosGeneration::kV1_37: return "v1.37";
  }
  return "unknown";
}

const char* MemoryReservationPolicyName(MemoryReservationPolicy p) {
  switch (p) {
    case MemoryReservationPolicy::kMinForEveryRequest: return "";
    case MemoryReservationPolicy::kNone: return "None";
    case MemoryReservationPolicy::kTieredReservation: return "TieredReservation";
  }
  return "";
}

// The KubeletConfiguration enum's spellings (kubernetes/kubelet config/v1beta1/types.go:
// NoneMemoryReservationPolicy = "None", TieredReservationMemoryReservationPolicy =
// "TieredReservation").
bool ParseMemoryReservationPolicy(std::string_view s, MemoryReservationPolicy* out) {
  if (s == "None") *out = MemoryReservationPolicy::kNone;
  else if (s == "TieredReservation") *out = MemoryReservationPolicy::kTieredReservation;
  else return false;
  return true;
}

const char* KubeletSettingSourceName(KubeletSettingSource s) {
  switch (s) {
    case KubeletSettingSource::kUnknown: return "unknown";
    case KubeletSettingSource::kDefault: return "default";
    case KubeletSettingSource::kConfigFile: return "config";
    case KubeletSettingSource::kFlag: return "flag";
    case KubeletSettingSource::kApiServer: return "apiserver";
  }
  return "unknown";
}

const char* MemoryQosRulesLabel(const MemoryQosRules& r) {
  if (r.generation == MemoryQosGeneration::kUnknown) return "unknown";
  if (!r.Applies()) return "off";
  return MemoryQosGenerationName(r.generation);
}

std::optional<int> KubeletMinorVersion(std::string_view v) {
  if (!v.empty() && v[0] == 'v') v.remove_prefix(1);
  int major = 0, minor = 0;
  const char* p = v.data();
  const char* end = v.data() + v.size();
  auto [m, ec] = std::from_chars(p, end, major);
  if (ec != std::errc() || m == end || *m != '.' || major != 1) return std::nullopt;
  auto [n, ec2] = std::from_chars(m + 1, end, minor);
  if (ec2 != std::errc() || n == m + 1) return std::nullopt;
  // What follows the minor: ".patch", "-pre.release", "+build", or nothing.
  if (n != end && *n != '.' && *n != '-' && *n != '+') return std::nullopt;
  return minor;
}

MemoryQosGeneration GenerationOfMinor(int minor) {
  if (minor < 22) return MemoryQosGeneration::kNone;
  if (minor < 27) return MemoryQosGeneration::kV1_22;
  if (minor < 36) return MemoryQosGeneration::kV1_27;  // v1.28's beta was cancelled (KEP)
  if (minor == 36) return MemoryQosGeneration::kV1_36;
  return MemoryQosGeneration::kV1_37;
}

// KEP-2570 at a6a23fab: "In Beta (v1.37), the MemoryQoS feature gate is enabled by default";
// alpha (off) before.
bool DefaultFeatureGate(MemoryQosGeneration g) { return g == MemoryQosGeneration::kV1_37; }

// kubernetes/kubelet config/v1beta1/types.go: "Default: 0.8" at v0.22.0, "Default: 0.9" at
// v0.27.0 to v0.36.0 (kubernetes/kubernetes#115371), "If nil, memory.high is not set …
// Default: nil" from kubernetes/kubernetes#140007 (the v1.37 blog: "No memory.high,
// memory.min, or memory.low values are written to cgroups unless you explicitly configure
// them").
std::optional<double> DefaultThrottlingFactor(MemoryQosGeneration g) {
  switch (g) {
    case MemoryQosGeneration::kV1_22: return 0.8;
    case MemoryQosGeneration::kV1_27:
    case MemoryQosGeneration::kV1_36: return 0.9;
    default: return std::nullopt;
  }
}

bool HasReservationPolicy(MemoryQosGeneration g) {
  return g == MemoryQosGeneration::kV1_36 || g == MemoryQosGeneration::kV1_37;
}

// memoryReservationPolicy "Default: None" (types.go from v0.36.0); before v1.36 every
// request became memory.min (KEP "Alpha v1.22" and "Alpha v2" mapping rules).
MemoryReservationPolicy DefaultReservationPolicy(MemoryQosGeneration g) {
  return HasReservationPolicy(g) ? MemoryReservationPolicy::kNone : MemoryReservationPolicy::kMinForEveryRequest;
}

std::optional<ProtectionKnob> ProtectingKnob(const MemoryQosRules& rules, QosClass qos) {
  if (!rules.Applies() || qos == QosClass::kBestEffort) return std::nullopt;
  switch (rules.reservation) {
    case MemoryReservationPolicy::kMinForEveryRequest: return ProtectionKnob::kMin;
    case MemoryReservationPolicy::kNone: return std::nullopt;
    case MemoryReservationPolicy::kTieredReservation:
      if (qos == QosClass::kGuaranteed) return ProtectionKnob::kMin;
      if (qos == QosClass::kBurstable) return ProtectionKnob::kLow;
      return std::nullopt;
  }
  return std::nullopt;
}

namespace {

// memory.min and memory.low of a container or pod cgroup holding `request`.
//   before v1.36: "memory.min = requests.memory" for every container and pod with a
//     request (KEP "Alpha v1.22" / "Alpha v2" mapping rules 1 and 2);
//   v1.36+ None: "no memory.min or memory.low is written" (v1.36 blog);
//   v1.36+ TieredReservation: Guaranteed memory.min = request, Burstable memory.low =
//     request, BestEffort neither (v1.36 blog's table; KEP mapping rules 1 and 2).
ExpectedKnobs Protection(const MemoryQosRules& rules, QosClass qos, uint64_t request) {
  ExpectedKnobs k;
  switch (rules.reservation) {
    case MemoryReservationPolicy::kMinForEveryRequest:
      k.min = request;
      k.low = 0;
      break;
    case MemoryReservationPolicy::kNone:
      k.min = 0;
      k.low = 0;
      break;
    case MemoryReservationPolicy::kTieredReservation:
      if (qos == QosClass::kUnknown) break;  // the class decides the knob
      k.min = qos == QosClass::kGuaranteed ? request : 0;
      k.low = qos == QosClass::kBurstable ? request : 0;
      break;
  }
  return k;
}

}  // namespace

// memory.high of a container, by generation:
//   v1.22 (KEP at ca09c089; kuberuntime_container_linux.go of v1.22): high = factor ×
//     (limit, or node allocatable without one), truncated to bytes, set only when above the
//     request ("memory.high>memory.min"). No page rounding; a BestEffort container gets
//     factor × allocatable; a Guaranteed one none (factor × limit < limit = request).
//   v1.27 to v1.36 (KEP at 03a72738, kubernetes/kubernetes#115371): only when request !=
//     limit, high = floor[(request + factor × (limit or allocatable − request)) / page] ×
//     page, set when non-zero and above the request. A BestEffort container (request =
//     limit = 0) gets none (kubernetes/kubernetes#137685).
//   v1.37 (kubernetes/kubernetes#138139, in the first release after v1.36.0; inferred, see
//     docs/memory-qos.md): the condition becomes request != limit or request = 0, so a
//     BestEffort container gets floor[(factor × allocatable) / page] × page; and with no
//     factor (the default nil) no container gets memory.high.
std::optional<uint64_t> ContainerMemoryHigh(const MemoryQosRules& rules, uint64_t request, uint64_t limit,
                                            std::optional<uint64_t> node_allocatable) {
  if (!rules.throttling_factor) return kUnlimited;
  const double factor = *rules.throttling_factor;
  const MemoryQosGeneration g = rules.generation;
  const bool v122 = g == MemoryQosGeneration::kV1_22;
  if (!v122) {
    const bool considered = request != limit || (g == MemoryQosGeneration::kV1_37 && request == 0);
    if (!considered) return kUnlimited;
  }
  uint64_t ceiling = limit;
  if (ceiling == 0) {
    // The kubelet's GetNodeAllocatableAbsolute; statlet's stand-in is the kubepods cgroup's
    // memory.max (docs/memory-qos.md says when they differ).
    if (!node_allocatable || *node_allocatable == kUnlimited) return std::nullopt;
    if (*node_allocatable == 0) return kUnlimited;  // the kubelet skips a zero allocatable
    ceiling = *node_allocatable;
  }
  int64_t high = 0;
  if (v122) {
    high = static_cast<int64_t>(static_cast<double>(ceiling) * factor);
  } else {
    // As the kubelet computes it, in float64: floor the raw value, divide by the page,
    // truncate, multiply back.
    const int64_t page = static_cast<int64_t>(rules.page_size == 0 ? 1 : rules.page_size);
    const double raw = std::floor(static_cast<double>(request) +
                                  (static_cast<double>(ceiling) - static_cast<double>(request)) * factor);
    high = static_cast<int64_t>(raw / static_cast<double>(page)) * page;
  }
  if (high <= 0 || static_cast<uint64_t>(high) <= request) return kUnlimited;
  return static_cast<uint64_t>(high);
}

ExpectedKnobs ContainerKnobs(const MemoryQosRules& rules, QosClass qos, uint64_t request, uint64_t limit,
                             std::optional<uint64_t> node_allocatable) {
  if (!rules.Applies()) return {};
  ExpectedKnobs k = Protection(rules, qos, request);
  k.high = ContainerMemoryHigh(rules, request, limit, node_allocatable);
  return k;
}

ExpectedKnobs PodKnobs(const MemoryQosRules& rules, QosClass qos, uint64_t pod_request) {
  if (!rules.Applies()) return {};
  // A BestEffort pod has no request: nothing written (ResourceConfigForPod sets memory.min
  // only when the pod's requests are above 0).
  return Protection(rules, qos, qos == QosClass::kBestEffort ? 0 : pod_request);
}

// The QoS cgroups (qos_container_manager_linux.go setMemoryQoS, run at start and every
// minute): before v1.36 the Burstable cgroup's memory.min = the Burstable pods' requests;
// v1.36+ TieredReservation moves it to memory.low ("The Burstable QoS cgroup sets
// memory.low = sum(burstable_requests)", KEP mapping rule 5; its memory.min "keeps kernel
// default, not explicitly written"). The BestEffort cgroup gets nothing.
ExpectedKnobs QosCgroupKnobs(const MemoryQosRules& rules, QosClass qos, const ClassRequests& sums) {
  if (!rules.Applies()) return {};
  ExpectedKnobs k{0, 0, std::nullopt};
  if (qos != QosClass::kBurstable) return k;
  switch (rules.reservation) {
    case MemoryReservationPolicy::kMinForEveryRequest: k.min = sums.burstable; break;
    case MemoryReservationPolicy::kNone: break;
    case MemoryReservationPolicy::kTieredReservation: k.low = sums.burstable; break;
  }
  return k;
}

// kubepods: memory.min = Guaranteed + Burstable requests (setMemoryQoS's guaranteedMin, whose
// cgroup is the kubepods root; KEP mapping rule 5 keeps it under TieredReservation). Its
// memory.low = the Burstable requests only from v1.37 (kubernetes/kubernetes#140267: "the
// parent kubepods.slice never had memory.low set" in v1.36).
ExpectedKnobs KubepodsKnobs(const MemoryQosRules& rules, const ClassRequests& sums) {
  if (!rules.Applies()) return {};
  ExpectedKnobs k{0, 0, std::nullopt};
  switch (rules.reservation) {
    case MemoryReservationPolicy::kMinForEveryRequest: k.min = sums.guaranteed + sums.burstable; break;
    case MemoryReservationPolicy::kNone: break;
    case MemoryReservationPolicy::kTieredReservation:
      k.min = sums.guaranteed + sums.burstable;
      if (rules.generation == MemoryQosGeneration::kV1_37) k.low = sums.burstable;
      break;
  }
  return k;
}

}  // namespace statlet
