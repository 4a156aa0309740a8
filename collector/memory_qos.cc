#include "collector/memory_qos.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "collector/memory_protection.h"

namespace statlet {

const ContainerMemorySpec* PodMemorySpecs::Find(const std::string& container_id, const std::string& pod_uid,
                                                const std::string& name) const {
  std::string uid = pod_uid;
  if (!container_id.empty()) {
    auto it = uid_by_container_id.find(container_id);
    if (it != uid_by_container_id.end()) uid = it->second;
  }
  const PodMemorySpec* pod = Pod(uid);
  if (pod == nullptr) return nullptr;
  for (const ContainerMemorySpec& c : pod->containers) {
    if (!container_id.empty() && c.container_id == container_id) return &c;
  }
  if (name.empty()) return nullptr;
  for (const ContainerMemorySpec& c : pod->containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
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

const char* MemoryRequestSourceName(MemoryRequestSource s) {
  switch (s) {
    case MemoryRequestSource::kRuntime: return "runtime";
    case MemoryRequestSource::kApiServer: return "apiserver";
    case MemoryRequestSource::kQosClass: return "qos_class";
    case MemoryRequestSource::kUnknown: break;
  }
  return "";
}

MemoryZone ZoneOf(const Opt<uint64_t>& usage, const Opt<uint64_t>& floor, const Opt<uint64_t>& high,
                  const Opt<uint64_t>& max, uint64_t at_limit_margin_bytes) {
  if (!usage) return MemoryZone::kUnknown;
  const uint64_t u = *usage;
  // Most severe first: a cgroup at its hard limit is also past memory.high.
  if (max && *max != kUnlimited) {
    const uint64_t edge = *max > at_limit_margin_bytes ? *max - at_limit_margin_bytes : 0;
    if (u >= edge) return MemoryZone::kAtLimit;
  }
  if (high && *high != kUnlimited && u >= *high) return MemoryZone::kThrottling;
  if (!floor && !high && !max) return MemoryZone::kUnknown;  // nothing to compare with
  if (floor && u < *floor) return MemoryZone::kBelowRequest;
  return MemoryZone::kAboveRequest;
}

bool KernelOlderThan(const std::string& release, int major, int minor) {
  int a = 0, b = 0;
  const char* p = release.data();
  const char* end = p + release.size();
  auto [m, ec] = std::from_chars(p, end, a);
  if (ec != std::errc() || m == end || *m != '.') return false;
  auto [n, ec2] = std::from_chars(m + 1, end, b);
  if (ec2 != std::errc() || n == m + 1) return false;
  return a < major || (a == major && b < minor);
}

namespace {

struct Resolved {
  Opt<uint64_t> request, limit;
  MemoryRequestSource source = MemoryRequestSource::kUnknown;
};

bool Positive(const Opt<uint64_t>& v) { return v && *v > 0 && *v != kUnlimited; }

bool IsAppContainer(const CgroupStats& c) {
  return c.id.kind == CgroupKind::kContainer && !(c.id.meta && c.id.meta->is_sandbox);
}

// A container's request, in the order the values are closest to what the kubelet applied:
// the unified memory.min / memory.low it passed to the runtime (a value of 0 protects
// nothing and says nothing of the request), the pod from the API server, what the QoS class
// implies (Guaranteed: every container's request equals its limit; BestEffort: none).
Resolved ResolveContainer(const CgroupStats& c, QosClass qos, const PodMemorySpecs* pods) {
  Resolved r;
  const ContainerMetadata* meta = c.id.meta.get();
  const ContainerMetadata::MemoryResources* res =
      meta != nullptr && meta->memory_resources.reported ? &meta->memory_resources : nullptr;
  if (res != nullptr) {
    r.limit = res->limit_bytes.value_or(0);
    if (Positive(res->unified_min_bytes)) {
      r.request = *res->unified_min_bytes;
    } else if (Positive(res->unified_low_bytes)) {
      r.request = *res->unified_low_bytes;
    }
    if (r.request) r.source = MemoryRequestSource::kRuntime;
  }
  if (!r.request && pods != nullptr) {
    if (const ContainerMemorySpec* spec =
            pods->Find(c.id.container_id, c.id.pod_uid, meta != nullptr ? meta->container_name : std::string())) {
      r.request = spec->request;
      if (!r.limit) r.limit = spec->limit;
      r.source = MemoryRequestSource::kApiServer;
    }
  }
  if (!r.request) {
    if (qos == QosClass::kBestEffort) {
      r.request = 0;
      r.limit = 0;
      r.source = MemoryRequestSource::kQosClass;
    } else if (qos == QosClass::kGuaranteed && Positive(r.limit)) {
      r.request = r.limit;
      r.source = MemoryRequestSource::kQosClass;
    }
  }
  return r;
}

// The weaker of two sources, for a pod summed from its containers.
MemoryRequestSource Weaker(MemoryRequestSource a, MemoryRequestSource b) {
  auto rank = [](MemoryRequestSource s) {
    switch (s) {
      case MemoryRequestSource::kRuntime: return 3;
      case MemoryRequestSource::kApiServer: return 2;
      case MemoryRequestSource::kQosClass: return 1;
      case MemoryRequestSource::kUnknown: return 0;
    }
    return 0;
  };
  return rank(a) < rank(b) ? a : b;
}

// What a pod's containers add up to, while they are seen.
struct PodSum {
  uint64_t request = 0;
  size_t containers = 0;
  bool all_known = true;
  MemoryRequestSource source = MemoryRequestSource::kRuntime;
};

// Per kubepods tree: its pods' requests summed per class, and whether each sum is complete.
struct TreeSums {
  ClassRequests sums;
  bool guaranteed_known = true, burstable_known = true;
  Opt<uint64_t> allocatable;
  uint64_t min_total = 0, low_total = 0;
  bool min_total_known = true, low_total_known = true;
  size_t pods = 0;
  bool high_in_use = false;  // some cgroup under kubepods has a memory.high
};

void SetExpected(const ExpectedKnobs& k, MemoryQosView* v) {
  v->expected_min_bytes = k.min;
  v->expected_low_bytes = k.low;
  v->expected_high_bytes = k.high;
}

}  // namespace

void ApplyMemoryQos(const MemoryQosInputs& in, Snapshot* snap) {
  NodeMemoryQos& node = snap->memory_qos;
  node = NodeMemoryQos();
  node.basis = in.basis;
  node.kernel_release = in.kernel_release;
  node.kernel_before_5_9 = KernelOlderThan(in.kernel_release, 5, 9);
  const MemoryQosRules rules = in.basis ? in.basis->rules : MemoryQosRules();
  const PodMemorySpecs* pods = in.pods.get();
  std::vector<CgroupStats>& cgroups = snap->cgroups;
  const size_t n = cgroups.size();

  // One pass: reset, cgroup v2 or not, each cgroup's kubepods tree (an index into `trees`,
  // or -1; parents come first in path order).
  const std::vector<int32_t> parents = snap->NearestAncestors();
  std::vector<int32_t> tree(n, -1);
  std::vector<TreeSums> trees;
  std::vector<size_t> tree_root;  // the kubepods cgroup of each tree
  bool v2 = false;
  for (size_t i = 0; i < n; ++i) {
    CgroupStats& c = cgroups[i];
    c.memory_qos = MemoryQosView();
    v2 |= c.memory.min_bytes.has_value();
    if (c.id.kind == CgroupKind::kKubepods) {
      tree[i] = static_cast<int32_t>(trees.size());
      TreeSums& t = trees.emplace_back();
      tree_root.push_back(i);
      const Opt<uint64_t>& max = c.memory.max_bytes;
      if (max && *max != kUnlimited) t.allocatable = max;
    } else if (parents[i] >= 0) {
      tree[i] = tree[static_cast<size_t>(parents[i])];
    }
  }
  node.applied = v2 && rules.Applies();
  const ProtectionBounds bounds = PassedDown(*snap, parents);
  MarkCappedProtection(bounds, snap);

  auto allocatable_of = [&](size_t i) -> Opt<uint64_t> {
    return tree[i] >= 0 ? trees[static_cast<size_t>(tree[i])].allocatable : std::nullopt;
  };
  auto pod_of = [&](size_t i) -> int32_t {
    const int32_t p = parents[i];
    return p >= 0 && cgroups[static_cast<size_t>(p)].id.kind == CgroupKind::kPod ? p : -1;
  };
  auto qos_of = [&](const CgroupStats& c) {
    if (c.id.qos != QosClass::kUnknown || pods == nullptr) return c.id.qos;
    const PodMemorySpec* p = pods->Pod(c.id.pod_uid);
    return p != nullptr ? p->qos : QosClass::kUnknown;
  };
  const bool class_decides = rules.reservation == MemoryReservationPolicy::kTieredReservation;

  // Containers: request, limit, expected knobs, zone; their pods' sums; memory.high in use.
  std::vector<PodSum> pod_sums(n);
  for (size_t i = 0; i < n; ++i) {
    CgroupStats& c = cgroups[i];
    const MemoryStats& m = c.memory;
    if (tree[i] >= 0 && tree_root[static_cast<size_t>(tree[i])] != i && m.high_bytes && *m.high_bytes != kUnlimited) {
      trees[static_cast<size_t>(tree[i])].high_in_use = true;
    }
    if (!IsAppContainer(c)) continue;
    const QosClass qos = qos_of(c);
    const Resolved r = ResolveContainer(c, qos, pods);
    MemoryQosView& v = c.memory_qos;
    v.request_bytes = r.request;
    v.limit_bytes = r.limit;
    v.request_source = r.source;
    if (node.applied && r.request && r.limit) {
      SetExpected(ContainerKnobs(rules, qos, *r.request, *r.limit, allocatable_of(i)), &v);
    }
    if (const int32_t p = pod_of(i); p >= 0) {
      PodSum& s = pod_sums[static_cast<size_t>(p)];
      ++s.containers;
      if (r.request) {
        s.request += *r.request;
        s.source = Weaker(s.source, r.source);
      } else {
        s.all_known = false;
      }
    }
    // The zone: usage against the protection that holds for the request — the knob the
    // rules protect the class with, as far as the ancestors pass it down; where the rules
    // do not apply, whichever of memory.min and memory.low the cgroup has (cgroup v1: the
    // request).
    Opt<uint64_t> floor;
    const Opt<uint64_t> min =
        m.min_bytes ? Opt<uint64_t>(EffectiveProtection(*m.min_bytes, bounds.min[i])) : std::nullopt;
    const Opt<uint64_t> low =
        m.low_bytes ? Opt<uint64_t>(EffectiveProtection(*m.low_bytes, bounds.low[i])) : std::nullopt;
    if (node.applied && !(class_decides && qos == QosClass::kUnknown)) {
      const std::optional<ProtectionKnob> knob = ProtectingKnob(rules, qos);
      floor = !knob ? Opt<uint64_t>(0) : *knob == ProtectionKnob::kMin ? min : low;
    } else if (min || low) {
      floor = std::max(min.value_or(0), low.value_or(0));
    } else {
      floor = v.request_bytes;
    }
    v.protection_judged = bounds.min[i].has_value() && bounds.low[i].has_value();
    v.zone = ZoneOf(m.usage_bytes, floor, m.high_bytes, m.max_bytes, in.at_limit_margin_bytes);
  }

  // Pods: the API server's request (as the kubelet sums it, init containers and overhead
  // included), else the sum of the containers seen.
  for (size_t i = 0; i < n; ++i) {
    CgroupStats& c = cgroups[i];
    if (c.id.kind != CgroupKind::kPod) continue;
    const QosClass qos = qos_of(c);
    MemoryQosView& v = c.memory_qos;
    const PodMemorySpec* spec = pods != nullptr ? pods->Pod(c.id.pod_uid) : nullptr;
    const PodSum& s = pod_sums[i];
    if (spec != nullptr) {
      v.request_bytes = spec->request;
      v.request_source = MemoryRequestSource::kApiServer;
    } else if (qos == QosClass::kBestEffort) {
      v.request_bytes = 0;
      v.request_source = MemoryRequestSource::kQosClass;
    } else if (s.containers > 0 && s.all_known) {
      v.request_bytes = s.request;
      v.request_source = s.source;
    }
    if (node.applied && v.request_bytes) SetExpected(PodKnobs(rules, qos, *v.request_bytes), &v);
    if (tree[i] < 0) continue;
    TreeSums& t = trees[static_cast<size_t>(tree[i])];
    ++t.pods;
    if (qos == QosClass::kGuaranteed || qos == QosClass::kBurstable) {
      bool& known = qos == QosClass::kGuaranteed ? t.guaranteed_known : t.burstable_known;
      uint64_t& sum = qos == QosClass::kGuaranteed ? t.sums.guaranteed : t.sums.burstable;
      if (v.request_bytes) sum += *v.request_bytes;
      else known = false;
    } else if (qos == QosClass::kUnknown) {
      t.guaranteed_known = t.burstable_known = false;
    }
    if (v.expected_min_bytes) t.min_total += *v.expected_min_bytes;
    else t.min_total_known = false;
    if (v.expected_low_bytes) t.low_total += *v.expected_low_bytes;
    else t.low_total_known = false;
  }

  // QoS and kubepods cgroups: from the sums of their tree's pods, where those are complete.
  if (node.applied) {
    const bool none = rules.reservation == MemoryReservationPolicy::kNone;
    for (size_t i = 0; i < n; ++i) {
      CgroupStats& c = cgroups[i];
      if (tree[i] < 0) continue;
      const TreeSums& t = trees[static_cast<size_t>(tree[i])];
      if (c.id.kind == CgroupKind::kQos) {
        ExpectedKnobs k = QosCgroupKnobs(rules, c.id.qos, t.sums);
        if (c.id.qos == QosClass::kBurstable && !none && !t.burstable_known) k.min = k.low = std::nullopt;
        SetExpected(k, &c.memory_qos);
      } else if (c.id.kind == CgroupKind::kKubepods) {
        ExpectedKnobs k = KubepodsKnobs(rules, t.sums);
        if (!none && !(t.guaranteed_known && t.burstable_known)) k.min = std::nullopt;
        if (!none && !t.burstable_known) k.low = std::nullopt;
        SetExpected(k, &c.memory_qos);
      }
    }
  }

  // The node: the kubepods tree with pods (the first in path order, else the first tree).
  int32_t primary = -1;
  for (size_t k = 0; k < trees.size(); ++k) {
    if (primary < 0 || (trees[static_cast<size_t>(primary)].pods == 0 && trees[k].pods > 0)) {
      primary = static_cast<int32_t>(k);
    }
  }
  if (primary >= 0) {
    const TreeSums& t = trees[static_cast<size_t>(primary)];
    const size_t root = tree_root[static_cast<size_t>(primary)];
    node.kubepods_path = cgroups[root].id.cgroup_path;
    node.allocatable_bytes = t.allocatable;
    if (node.applied) {
      if (t.min_total_known) node.min_total_bytes = t.min_total;
      if (t.low_total_known) node.low_total_bytes = t.low_total;
    }
    node.memory_high_in_use = t.high_in_use;
  }
}

}  // namespace statlet
