#include "collector/memory_qos.h"

#include <cmath>

namespace statlet {

const char* MemoryHighFormulaName(MemoryHighFormula f) { return f == MemoryHighFormula::kV1_22 ? "v1.22" : "v1.27"; }

bool ParseMemoryHighFormula(std::string_view s, MemoryHighFormula* out) {
  if (s == "v1.22") *out = MemoryHighFormula::kV1_22;
  else if (s == "v1.27") *out = MemoryHighFormula::kV1_27;
  else return false;
  return true;
}

// The KEP's cases (KEP-2570): requests = limits (Guaranteed) leaves memory.high at "max";
// no limit substitutes node allocatable; no request counts as 0. The v1.22 formula sets
// memory.high only when it lands above the request ("no throttling" rows of the table).
ExpectedMemoryQos ExpectedKnobs(uint64_t request, uint64_t limit, std::optional<uint64_t> node_allocatable,
                                const MemoryQosPolicy& policy) {
  ExpectedMemoryQos out;
  out.min_bytes = request;
  if (limit != 0 && request >= limit) return out;  // Guaranteed: no throttle below the limit
  uint64_t ceiling = limit;
  if (ceiling == 0) {
    if (!node_allocatable || *node_allocatable == 0 || *node_allocatable == kUnlimited) return out;
    ceiling = *node_allocatable;
  }
  const double factor = policy.throttling_factor;
  uint64_t high = 0;
  if (policy.formula == MemoryHighFormula::kV1_22) {
    high = static_cast<uint64_t>(static_cast<double>(ceiling) * factor);
  } else {
    if (ceiling <= request) return out;
    const double page = static_cast<double>(policy.page_size == 0 ? 1 : policy.page_size);
    const double raw = static_cast<double>(request) + factor * static_cast<double>(ceiling - request);
    high = static_cast<uint64_t>(std::floor(raw / page)) * static_cast<uint64_t>(page);
  }
  if (high > request) out.high_bytes = high;
  return out;
}

const char* MemoryZoneName(MemoryZone z) {
  switch (z) {
    case MemoryZone::kBelowRequest: return "below_request";
    case MemoryZone::kAboveRequest: return "above_request";
    case MemoryZone::kThrottling: return "throttling";
    case MemoryZone::kAtLimit: return "at_limit";
    case MemoryZone::kUnknown: break;
  }
  return "";
}

MemoryZone ZoneOf(const Opt<uint64_t>& usage, const Opt<uint64_t>& min, const Opt<uint64_t>& high,
                  const Opt<uint64_t>& max, const Opt<uint64_t>& request, const MemoryQosPolicy& policy) {
  if (!usage) return MemoryZone::kUnknown;
  const uint64_t u = *usage;
  // Most severe first: a cgroup at its hard limit is also past memory.high.
  if (max && *max != kUnlimited) {
    const uint64_t edge = *max > policy.at_limit_margin_bytes ? *max - policy.at_limit_margin_bytes : 0;
    if (u >= edge) return MemoryZone::kAtLimit;
  }
  if (high && *high != kUnlimited && u >= *high) return MemoryZone::kThrottling;
  const Opt<uint64_t>& floor = min ? min : request;
  if (!floor && !high && !max) return MemoryZone::kUnknown;  // nothing to compare with
  if (floor && u < *floor) return MemoryZone::kBelowRequest;
  return MemoryZone::kAboveRequest;
}

void ApplyMemoryQos(const MemoryQosPolicy& policy, Snapshot* snap) {
  NodeMemoryQos& node = snap->memory_qos;
  node = NodeMemoryQos();
  for (const auto& c : snap->cgroups) {
    if (c.id.kind == CgroupKind::kKubepods && c.memory.max_bytes && *c.memory.max_bytes != kUnlimited) {
      node.allocatable_bytes = c.memory.max_bytes;
      break;
    }
  }
  // Applied: the cgroup v2 knobs exist (memory.min is readable) and the kubelet passed its
  // Memory QoS knobs to the runtime for some container. Without both, expected values
  // would be numbers nobody set.
  for (const auto& c : snap->cgroups) {
    if (c.id.kind != CgroupKind::kContainer || !c.id.meta || c.id.meta->is_sandbox) continue;
    const auto& r = c.id.meta->memory_resources;
    if (c.memory.min_bytes && (r.unified_min_bytes || r.unified_high_bytes)) {
      node.applied = true;
      break;
    }
  }
  for (auto& c : snap->cgroups) {
    c.memory_qos = MemoryQosView();
    if (c.id.kind != CgroupKind::kContainer || (c.id.meta && c.id.meta->is_sandbox)) continue;
    Opt<uint64_t> request;
    if (c.id.meta && c.id.meta->memory_resources.reported) {
      const auto& r = c.id.meta->memory_resources;
      request = r.unified_min_bytes;
      if (node.applied) {
        ExpectedMemoryQos e =
            ExpectedKnobs(r.unified_min_bytes.value_or(0), r.limit_bytes.value_or(0), node.allocatable_bytes, policy);
        c.memory_qos.expected_min_bytes = e.min_bytes;
        c.memory_qos.expected_high_bytes = e.high_bytes;
      }
    }
    const MemoryStats& m = c.memory;
    c.memory_qos.zone = ZoneOf(m.usage_bytes, m.min_bytes, m.high_bytes, m.max_bytes, request, policy);
  }
}

}  // namespace statlet
