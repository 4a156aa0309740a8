#include "metrics/snapshot_samples.h"

#include <strings.h>

#include <cstdio>

#include "metrics/snapshot_samples_visit.h"

namespace statlet::metrics {

namespace visit_detail {

std::string_view CpuLabel(size_t cpu) {
  static const std::vector<std::string>* labels = [] {
    auto* v = new std::vector<std::string>();
    for (size_t i = 0; i < 8192; ++i) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "cpu%02zu", i);
      v->emplace_back(buf);
    }
    return v;
  }();
  return cpu < labels->size() ? std::string_view((*labels)[cpu]) : std::string_view();
}

std::string_view Decimal(uint32_t v, std::string* buf) {
  static const std::vector<std::string>* labels = [] {
    auto* t = new std::vector<std::string>();
    for (uint32_t i = 0; i < 4096; ++i) t->push_back(std::to_string(i));
    return t;
  }();
  if (v < labels->size()) return (*labels)[v];
  *buf = std::to_string(v);
  return *buf;
}

}  // namespace visit_detail

namespace {

// Whether two OOM events would carry the same labels (same victim cgroup, pid, comm and
// constraint); the older one is then left out, so that no two series share a label set.
bool SameOomSeries(const OomEvent& a, const OomEvent& b) {
  return a.cgroup_id == b.cgroup_id && a.pid == b.pid && a.constraint_memcg == b.constraint_memcg && a.comm == b.comm &&
         a.cgroup_path == b.cgroup_path;
}

// The pod's network namespace: its own, or the one its containers share (they follow the
// pod in path order). Null for host-network pods unless `host_interfaces` (cAdvisor's
// behaviour: the host's namespace).
const NetNamespaceStats* PodNamespace(const Snapshot& s, size_t index, bool host_interfaces) {
  const CgroupStats& pod = s.cgroups[index];
  if (pod.host_network && !host_interfaces) return nullptr;
  if (const NetNamespaceStats* ns = s.Netns(pod)) return ns;
  for (size_t i = index + 1; i < s.cgroups.size(); ++i) {
    const CgroupStats& c = s.cgroups[i];
    if (c.id.parent_path != pod.id.cgroup_path) {
      if (c.id.cgroup_path.compare(0, pod.id.cgroup_path.size(), pod.id.cgroup_path) != 0) break;
      continue;
    }
    if (c.host_network && !host_interfaces) return nullptr;
    if (const NetNamespaceStats* ns = s.Netns(c)) return ns;
  }
  return nullptr;
}

bool IsNamedSandbox(const CgroupStats& c) {
  return c.id.kind == CgroupKind::kContainer && c.id.meta && c.id.meta->is_sandbox;
}

}  // namespace

bool CountsInterface(const SampleRules& rules, std::string_view name) {
  for (const std::string& prefix : rules.ignored_interface_prefixes) {
    if (!prefix.empty() && name.size() >= prefix.size() &&
        strncasecmp(name.data(), prefix.data(), prefix.size()) == 0) {
      return false;
    }
  }
  return true;
}

std::span<const double> RunqueueLatencyBounds() {
  static const std::array<double, 63> bounds = [] {
    std::array<double, 63> b{};
    // Bucket i counts waits in [2^i, 2^(i+1)) us: its upper bound in seconds, rounded once
    // from the exact quotient.
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>(uint64_t{2} << i) / 1e6;
    return b;
  }();
  return bounds;
}

SnapshotSamples::SnapshotSamples(SampleRules rules, DeviceNames::Namer namer)
    : rules_(std::move(rules)), devices_(std::move(namer)) {
  if (!rules_.selection.ServesGroup(MetricGroup::kPercpu)) rules_.per_cpu = false;
}

void SnapshotSamples::Bind(const Snapshot& s) {
  snap_ = &s;
  count_ = s.cgroups.size();
  if (rules_.max_cgroups && count_ > rules_.max_cgroups) count_ = rules_.max_cgroups;
  dropped_cgroups_ = s.cgroups.size() - count_;
  dropped_interfaces_ = 0;
  if (rules_.max_interfaces) {
    for (const auto& [inode, ns] : s.netns) {
      if (ns.interfaces.size() > rules_.max_interfaces)
        dropped_interfaces_ += ns.interfaces.size() - rules_.max_interfaces;
    }
  }
  container_net_.assign(count_, nullptr);
  pod_net_.assign(count_, nullptr);
  // Pods whose sandbox container the runtime named: the sandbox carries their network.
  for (size_t i = 0; i < count_; ++i) {
    const CgroupStats& c = s.cgroups[i];
    switch (c.id.kind) {
      case CgroupKind::kRoot:
        container_net_[i] = s.Netns(c);  // the host's interfaces
        break;
      case CgroupKind::kPod: pod_net_[i] = PodNamespace(s, i, rules_.host_network_interfaces); break;
      case CgroupKind::kContainer:
        if (c.host_network && !rules_.host_network_interfaces) break;
        if (c.id.pod_uid.empty() && !c.id.meta) {
          container_net_[i] = s.Netns(c);  // a bare runtime container owns its namespace
        } else if (IsNamedSandbox(c) && rules_.network_carrier == NetworkCarrier::kSandboxOrPod) {
          container_net_[i] = s.Netns(c);
        }
        break;
      default: break;
    }
  }
  // Pods without a named sandbox in the snapshot carry their own namespace (kPod: all).
  for (size_t i = 0; i < count_; ++i) {
    const CgroupStats& pod = s.cgroups[i];
    if (pod.id.kind != CgroupKind::kPod || pod_net_[i] == nullptr) continue;
    bool sandbox_carries = false;
    if (rules_.network_carrier == NetworkCarrier::kSandboxOrPod) {
      for (size_t j = i + 1; j < count_; ++j) {
        const CgroupStats& c = s.cgroups[j];
        if (c.id.cgroup_path.compare(0, pod.id.cgroup_path.size(), pod.id.cgroup_path) != 0) break;
        if (c.id.parent_path == pod.id.cgroup_path && IsNamedSandbox(c)) {
          if (container_net_[j] == nullptr) container_net_[j] = pod_net_[i];  // sandbox without its own entry
          sandbox_carries = true;
          break;
        }
      }
    }
    if (!sandbox_carries) container_net_[i] = pod_net_[i];
  }
  pid_labels_.resize(s.recent_ooms.size());
  for (size_t i = 0; i < s.recent_ooms.size(); ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%u", s.recent_ooms[i].pid);
    pid_labels_[i].assign(buf);
  }
}

void SnapshotSamples::ForEachSample(FamilyId id, size_t cgroup, SampleSink& sink) {
  if (Serves(id)) VisitCgroup(id, cgroup, sink);
}

void SnapshotSamples::ForEachEventSample(FamilyId id, SampleSink& sink) {
  if (id != FamilyId::kStatletOomKillTimestampSeconds || !Serves(id)) return;
  // Bounded by the Sampler's recent list (newest last): at most that many series, each
  // leaving when newer kills push it out.
  const std::vector<OomEvent>& events = snap_->recent_ooms;
  for (size_t i = 0; i < events.size(); ++i) {
    const OomEvent& e = events[i];
    bool newer_twin = false;
    for (size_t j = i + 1; j < events.size() && !newer_twin; ++j) newer_twin = SameOomSeries(e, events[j]);
    if (newer_twin) continue;
    sink.AddEvent(e, {e.comm, e.constraint_memcg ? "memcg" : "global", pid_labels_[i]},
                  Value::Nanos(static_cast<uint64_t>(std::max<int64_t>(0, e.timestamp_ns))));
  }
}

}  // namespace statlet::metrics
