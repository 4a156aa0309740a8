#include "collector/sampler.h"

#include <time.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "base/monotonic_clock.h"

namespace statlet {
namespace {

constexpr size_t kMaxRecentOoms = 64;

// The runtime's names of a container (by id) or of a pod (its sandbox, by pod uid).
void JoinMetadata(const MetadataMap& meta, Identity* id) {
  if (!id->container_id.empty()) {
    auto it = meta.by_container_id.find(id->container_id);
    if (it != meta.by_container_id.end()) id->meta = it->second;
  } else if (id->kind == CgroupKind::kPod && !id->pod_uid.empty()) {
    auto it = meta.sandbox_by_pod_uid.find(id->pod_uid);
    if (it != meta.sandbox_by_pod_uid.end()) id->meta = it->second;
  }
}

// The probes count the tasks of each cgroup itself; cgroupfs counters are hierarchical.
// Adding every cgroup's values to its nearest reported ancestor (children sort after their
// parents, so a reverse walk sees each subtree complete) makes them hierarchical too: a
// pod's per-CPU time then sums to its cpu.stat usage. `members`: what the probes fill.
void RollUpBpf(const std::vector<BpfRollUp>& members, Snapshot* snap) {
  if (members.empty()) return;
  const std::vector<int32_t> ancestor = snap->NearestAncestors();
  for (size_t i = snap->cgroups.size(); i-- > 0;) {
    if (ancestor[i] < 0) continue;
    const BpfCgroupStats& from = snap->cgroups[i].bpf;
    BpfCgroupStats* to = &snap->cgroups[static_cast<size_t>(ancestor[i])].bpf;
    for (const BpfRollUp& member : members) member.Add(from, to);
  }
}

}  // namespace

struct Sampler::Flight {
  explicit Flight(CollectParts p) : parts(p) {}
  const CollectParts parts;
  std::condition_variable cv;
  bool done = false;
  StatusOr<SnapshotPtr> result = Status(StatusCode::kUnavailable, "collection in flight");
};

Sampler::Sampler(std::unique_ptr<Collector> collector, MetadataSource* metadata, BpfSource* bpf)
    : collector_(std::move(collector)), metadata_(metadata), bpf_(bpf) {}

SamplerStats Sampler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

StatusOr<SnapshotPtr> Sampler::Get(std::chrono::nanoseconds max_age, CollectParts parts) {
  std::unique_lock<std::mutex> lock(mu_);
  reuse_window_ns_ = std::max<int64_t>(reuse_window_ns_, max_age.count());
  for (;;) {
    if (last_ && max_age.count() > 0 && MonotonicNowNs() - last_->monotonic_ns <= max_age.count() &&
        last_->parts.Covers(parts)) {
      ++stats_.reuses;
      return last_;
    }
    if (!in_flight_) break;
    std::shared_ptr<Flight> f = in_flight_;
    if (f->parts.Covers(parts)) {
      ++stats_.joins;
      f->cv.wait(lock, [&] { return f->done; });
      return f->result;
    }
    // The collection under way does not read what this caller needs: the next one reads
    // the union of what every caller waiting for it needs (whoever starts it).
    ++stats_.waits;
    wanted_next_ = wanted_next_ | parts;
    f->cv.wait(lock, [&] { return f->done; });
  }
  auto flight = std::make_shared<Flight>(parts | wanted_next_);
  wanted_next_ = CollectParts::None();
  in_flight_ = flight;
  ++stats_.collections;
  lock.unlock();

  StatusOr<SnapshotPtr> result = CollectOnce(flight->parts);
  if (result.ok() && observer_) observer_(**result);

  lock.lock();
  flight->result = result;
  flight->done = true;
  in_flight_.reset();
  if (result.ok()) last_ = *result;
  flight->cv.notify_all();
  return result;
}

size_t Sampler::ReleaseStale() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_ || MonotonicNowNs() - last_->monotonic_ns <= reuse_window_ns_) return 0;
  const bool last_holder = last_.use_count() == 1;  // else a call still sends from it
  const size_t bytes = last_->cgroups.capacity() * sizeof(CgroupStats);
  last_.reset();
  // No collection runs while mu_ is held and none is in flight: the walks' arrays are
  // nobody's until the next one, which maps them again.
  if (bpf_ != nullptr && !in_flight_) bpf_->ReleaseMappings();
  return last_holder ? bytes : 0;
}

// An exited container the collection still found (its cgroup not yet removed) keeps the
// collection's values, now final too, and gains the exit; one it no longer found is
// reported from its record. The newest record of a path wins (a cgroup made again).
static void MergeExits(const std::vector<std::shared_ptr<const CgroupStats>>& records, Snapshot* snap) {
  if (records.empty()) return;
  const size_t collected = snap->cgroups.size();
  std::unordered_map<std::string_view, size_t> added;
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    const CgroupStats& r = **it;
    auto found = std::lower_bound(snap->cgroups.begin(), snap->cgroups.begin() + static_cast<std::ptrdiff_t>(collected),
                                  r.id.cgroup_path,
                                  [](const CgroupStats& c, const std::string& p) { return c.id.cgroup_path < p; });
    if (found != snap->cgroups.begin() + static_cast<std::ptrdiff_t>(collected) &&
        found->id.cgroup_path == r.id.cgroup_path) {
      if (!found->exit && !found->populated && found->id.cgroup_id == r.id.cgroup_id) found->exit = r.exit;
      continue;
    }
    if (!added.emplace(r.id.cgroup_path, 0).second) continue;
    snap->cgroups.push_back(r);
  }
  auto by_path = [](const CgroupStats& a, const CgroupStats& b) { return a.id.cgroup_path < b.id.cgroup_path; };
  std::sort(snap->cgroups.begin() + static_cast<std::ptrdiff_t>(collected), snap->cgroups.end(), by_path);
  std::inplace_merge(snap->cgroups.begin(), snap->cgroups.begin() + static_cast<std::ptrdiff_t>(collected),
                     snap->cgroups.end(), by_path);
}

StatusOr<SnapshotPtr> Sampler::CollectOnce(CollectParts parts) {
  std::shared_ptr<const MetadataMap> meta = metadata_ != nullptr ? metadata_->Current() : nullptr;
  auto collected = meta != nullptr ? collector_->CollectKnowing(parts, *meta) : collector_->Collect(parts);
  if (!collected.ok()) return collected.status();
  auto snap = std::make_shared<Snapshot>(std::move(*collected));
  if (machine_ != nullptr) snap->machine = machine_->Current();
  if (exits_ != nullptr) MergeExits(exits_->Live(snap->monotonic_ns), snap.get());

  if (metadata_ != nullptr) {
    snap->runtime = metadata_->State();
    for (auto& c : snap->cgroups) JoinMetadata(*meta, &c.id);
    // A container whose cgroup is gone is still listed by the runtime until it is removed.
    for (auto& id : snap->vanished) JoinMetadata(*meta, &id);
  }

  if (bpf_ != nullptr) {
    snap->bpf_probes = bpf_->ProbeStates();
    std::vector<uint64_t> live;
    live.reserve(snap->cgroups.size());
    // The probes' per-CPU time stands in only where cgroupfs gave none (cgroup v2 has no
    // per-CPU file): on a host whose v1 cpuacct gave every read cgroup its own, no walk.
    bool per_cpu_wanted = false;
    for (const auto& c : snap->cgroups) {
      if (c.id.cgroup_id == 0) continue;
      live.push_back(c.id.cgroup_id);
      const bool sandbox = c.id.meta != nullptr && c.id.meta->is_sandbox;
      if (c.cpu.per_cpu_ns.empty() && snap->parts.ReadsFilesOf(c.id.kind == CgroupKind::kContainer, sandbox)) {
        per_cpu_wanted = true;
      }
    }
    std::unordered_map<uint64_t, BpfCgroupStats> by_id;
    std::vector<OomEvent> new_ooms;
    bpf_->Collect(live, &by_id, &new_ooms, per_cpu_wanted, snap->parts.Lists(/*pod_or_container=*/false));
    std::unordered_map<uint64_t, const Identity*> identity_of;
    for (auto& c : snap->cgroups) {
      if (c.id.cgroup_id == 0) continue;
      identity_of[c.id.cgroup_id] = &c.id;
      auto it = by_id.find(c.id.cgroup_id);
      if (it != by_id.end()) c.bpf = std::move(it->second);
    }
    RollUpBpf(bpf_->RollUps(), snap.get());
    for (auto& c : snap->cgroups) {
      if (c.cpu.per_cpu_ns.empty() && !c.bpf.per_cpu_ns.empty()) {
        c.cpu.per_cpu_ns = c.bpf.per_cpu_ns;
        c.cpu.per_cpu_from_bpf = true;
      }
    }
    // A killed container's cgroup is often removed before the next collection: the
    // collector still names it among the vanished.
    if (!new_ooms.empty()) {
      for (const auto& id : snap->vanished) {
        if (id.cgroup_id != 0) identity_of.emplace(id.cgroup_id, &id);
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& e : new_ooms) {
      auto it = identity_of.find(e.cgroup_id);
      if (it != identity_of.end()) {
        e.cgroup_path = it->second->cgroup_path;
        e.cgroup = std::make_shared<const Identity>(*it->second);
      }
      ooms_.push_back(std::move(e));
    }
    if (ooms_.size() > kMaxRecentOoms) ooms_.erase(ooms_.begin(), ooms_.end() - kMaxRecentOoms);
    snap->recent_ooms = ooms_;
  }

  {
    MemoryQosInputs in;
    if (qos_sources_.pods != nullptr) in.pods = qos_sources_.pods->Current();
    if (qos_sources_.settings != nullptr) {
      in.basis = qos_sources_.settings->Current(in.pods ? in.pods->kubelet_version : std::string());
    }
    in.kernel_release = qos_sources_.kernel_release;
    in.at_limit_margin_bytes = qos_sources_.at_limit_margin_bytes;
    ApplyMemoryQos(in, snap.get());
  }
  stall_.Update(snap.get());
  return SnapshotPtr(std::move(snap));
}

}  // namespace statlet
