// Memory QoS (KEP-2570) value rules: the memory.min / memory.high the kubelet would set for
// a container's requests and limits, and the zone a container's usage is in against the
// knobs its cgroup really has. Pure functions of their arguments; the Sampler applies them
// once per snapshot (ApplyMemoryQos) and every edge only formats the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "snapshot/snapshot.h"

namespace statlet {

enum class MemoryHighFormula : uint8_t {
  kV1_22,  // high = factor × (limit or node allocatable); unset unless above the request
  kV1_27,  // high = floor[(request + factor × (limit or allocatable − request)) / page] × page
};
const char* MemoryHighFormulaName(MemoryHighFormula f);  // "v1.22", "v1.27"
bool ParseMemoryHighFormula(std::string_view s, MemoryHighFormula* out);

struct MemoryQosPolicy {
  MemoryHighFormula formula = MemoryHighFormula::kV1_27;
  double throttling_factor = 0.9;  // the kubelet's memoryThrottlingFactor (v1.27 default)
  uint64_t page_size = 4096;       // the kubelet rounds memory.high down to a page
  // A container counts as at_limit when usage >= memory.max − this margin.
  uint64_t at_limit_margin_bytes = 64 * 4096;
};

// What the kubelet's Memory QoS would write into a container's cgroup.
struct ExpectedMemoryQos {
  uint64_t min_bytes = 0;            // memory.min: the request (0: not set)
  uint64_t high_bytes = kUnlimited;  // memory.high: kUnlimited when left at "max"
};

// request, limit: bytes, 0 when the container sets none. node_allocatable: the kubepods
// cgroup's memory.max, used when there is no limit (empty: unknown, then no memory.high).
ExpectedMemoryQos ExpectedKnobs(uint64_t request, uint64_t limit, std::optional<uint64_t> node_allocatable,
                                const MemoryQosPolicy& policy);

// The zones a container can be in, in the order a growing allocation walks them.
inline constexpr MemoryZone kMemoryZones[] = {MemoryZone::kBelowRequest, MemoryZone::kAboveRequest,
                                              MemoryZone::kThrottling, MemoryZone::kAtLimit};
const char* MemoryZoneName(MemoryZone z);  // "below_request", ... ; "" for kUnknown

// usage, min, high, max as MemoryStats holds them (absent: unknown; kUnlimited: "max").
// `request` stands in for memory.min where the cgroup has none (cgroup v1).
MemoryZone ZoneOf(const Opt<uint64_t>& usage, const Opt<uint64_t>& min, const Opt<uint64_t>& high,
                  const Opt<uint64_t>& max, const Opt<uint64_t>& request, const MemoryQosPolicy& policy);

// Fills every cgroup's memory.qos (expected knobs, zone) and the snapshot's node-wide
// memory_qos (allocatable, applied). Node allocatable: the kubepods cgroup's memory.max.
void ApplyMemoryQos(const MemoryQosPolicy& policy, Snapshot* snap);

}  // namespace statlet
