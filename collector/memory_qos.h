// The Memory QoS view of a snapshot (KEP-2570): for every container, pod, QoS and kubepods
// cgroup, the request it was judged by and the knobs the judged kubelet would leave there
// (collector/memory_qos_rules.h); for every cgroup whether its protection is capped by its
// ancestors (collector/memory_protection.h); for every container the zone its usage is in;
// for the node the kubelet's totals and the kernel's memory.high livelock risk. Applied once
// per snapshot by the Sampler; every edge only formats the result.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "collector/memory_qos_inputs.h"
#include "collector/memory_qos_rules.h"
#include "snapshot/snapshot.h"

namespace statlet {

struct MemoryQosInputs {
  // The rules judged by (MemoryQosSettingsSource::Current); null: unknown, nothing expected.
  std::shared_ptr<const MemoryQosBasis> basis;
  // The node's pods from the API server; null when no API server is configured.
  std::shared_ptr<const PodMemorySpecs> pods;
  std::string kernel_release;  // uname's release, for the livelock risk ("" unknown)
  // A container counts as at_limit when usage >= memory.max − this margin.
  uint64_t at_limit_margin_bytes = 64 * 4096;
};

// The zones a container can be in, in the order a growing allocation walks them.
inline constexpr MemoryZone kMemoryZones[] = {MemoryZone::kBelowRequest, MemoryZone::kAboveRequest,
                                              MemoryZone::kThrottling, MemoryZone::kAtLimit};
const char* MemoryZoneName(MemoryZone z);                    // "below_request", ... ; "" for kUnknown
const char* MemoryRequestSourceName(MemoryRequestSource s);  // "runtime", "apiserver", "qos_class"; "" unknown

// usage, high, max as MemoryStats holds them (absent: unknown; kUnlimited: "max"). floor: the
// protection that holds for the request (absent: nothing to judge it by).
MemoryZone ZoneOf(const Opt<uint64_t>& usage, const Opt<uint64_t>& floor, const Opt<uint64_t>& high,
                  const Opt<uint64_t>& max, uint64_t at_limit_margin_bytes);

// Whether a kernel release ("5.4.0-150-generic", "6.1.0-13-amd64") is older than major.minor;
// false when it cannot be read.
bool KernelOlderThan(const std::string& release, int major, int minor);

// Fills every cgroup's memory_qos (requests, expected knobs, capped protection, zones) and the
// snapshot's node-wide memory_qos.
void ApplyMemoryQos(const MemoryQosInputs& in, Snapshot* snap);

}  // namespace statlet
