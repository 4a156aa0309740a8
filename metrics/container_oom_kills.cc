#include "metrics/container_oom_kills.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>
#include <utility>

namespace statlet::metrics {

ContainerOomKills::ContainerOomKills(ContainerOomKillsOptions options) : opts_(options) {}

void ContainerOomKills::FoldLocked(const std::string& container_id, const Instance& inst, uint64_t pod_serial) {
  auto [f, inserted] = folded_.try_emplace(container_id);
  if (!inserted) folded_order_.erase(f->second.order);
  f->second.pod_uid = pod_serial != 0 ? inst.pod_uid : std::string();
  f->second.pod_serial = pod_serial;
  f->second.series = inst.series;
  f->second.counted = inst.counted();
  folded_order_.push_back(&f->first);
  f->second.order = std::prev(folded_order_.end());
  if (folded_order_.size() > opts_.max_folded) {
    auto oldest = folded_.find(*folded_order_.front());
    folded_order_.pop_front();
    folded_.erase(oldest);
  }
}

void ContainerOomKills::NameLocked(Instance& inst, Pod& pod, const ContainerMetadata& meta) {
  const SeriesView key{meta.pod_namespace, meta.pod_name, meta.container_name};
  auto s = series_.find(key);
  if (s == series_.end()) {
    if (series_.size() >= opts_.max_entries) {
      if (!inst.left_out) ++dropped_;
      inst.left_out = true;
      return;
    }
    s = series_.emplace(SeriesKey(meta.pod_namespace, meta.pod_name, meta.container_name), Series{}).first;
  }
  if (std::find(pod.series.begin(), pod.series.end(), s) == pod.series.end()) {
    pod.series.push_back(s);
    ++s->second.pods;
  }
  inst.series = &s->second;
  inst.series->total += inst.counted();
}

void ContainerOomKills::Observe(const Snapshot& snap) {
  if (!opts_.served) return;
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t seq = ++seq_;
  std::unordered_set<std::string_view> pods_seen;
  for (const CgroupStats& c : snap.cgroups) {
    const ContainerMetadata* meta = c.id.meta.get();
    const std::string& pod_uid = !c.id.pod_uid.empty() ? c.id.pod_uid : meta != nullptr ? meta->pod_uid : c.id.pod_uid;
    if (pod_uid.empty()) continue;
    // An exit record outlives its pod for the retention: only cgroups that still exist say
    // the pod lives.
    if (!c.exit) pods_seen.insert(pod_uid);
    if (c.id.kind != CgroupKind::kContainer || (meta != nullptr && meta->is_sandbox)) continue;
    const std::string& id = !c.id.container_id.empty() ? c.id.container_id
                            : meta != nullptr          ? meta->container_id
                                                       : c.id.container_id;
    if (id.empty()) continue;

    auto it = instances_.find(id);
    if (it == instances_.end()) {
      // Folded in earlier: tracked again from what it was folded with, unless its pod went
      // since (its exit record, retained after the pod, must not bring the pod back).
      auto f = folded_.find(id);
      if (f != folded_.end()) {
        auto p = pods_.find(f->second.pod_uid);
        if (f->second.pod_serial == 0 || p == pods_.end() || p->second.serial != f->second.pod_serial) continue;
      }
      if (instances_.size() >= opts_.max_instances) {
        ++dropped_;
        continue;
      }
      Instance inst{.pod_uid = pod_uid};
      if (f != folded_.end()) {
        inst.series = f->second.series;
        inst.last = f->second.counted;
        folded_order_.erase(f->second.order);
        folded_.erase(f);
      }
      it = instances_.emplace(id, std::move(inst)).first;
      auto [p, made] = pods_.try_emplace(pod_uid);
      if (made) {
        p->second.serial = ++pod_serials_;
        p->second.seen_seq = seq - 1;  // as if seen by the collection before: gone after pod_gone_after
      }
    }
    Instance& inst = it->second;
    inst.seen_seq = seq;
    const uint64_t before = inst.counted();
    if (const std::optional<uint64_t> v = OomKillsOf(c)) {
      if (*v < inst.last) inst.earlier += inst.last;  // a reset: keep what it had counted
      inst.last = *v;
    }
    if (inst.series != nullptr) {
      inst.series->total += inst.counted() - before;
    } else if (meta != nullptr && !meta->container_name.empty() && !meta->pod_name.empty() &&
               !meta->pod_namespace.empty()) {
      // Named once the runtime gave the pod's names too (a container listed before its
      // sandbox has only its own): the series' key is fixed when it is named.
      NameLocked(inst, pods_.at(inst.pod_uid), *meta);
    }
  }

  // Instances no snapshot showed for fold_after collections: folded into their series.
  for (auto it = instances_.begin(); it != instances_.end();) {
    if (seq - it->second.seen_seq >= opts_.fold_after) {
      auto p = pods_.find(it->second.pod_uid);
      FoldLocked(it->first, it->second, p != pods_.end() ? p->second.serial : 0);
      it = instances_.erase(it);
    } else {
      ++it;
    }
  }
  // Pods no cgroup showed for pod_gone_after collections: a series goes with the last pod of
  // its name; one that another pod of the name still holds keeps what this pod counted.
  // Copies, not views of pods_' keys: the pods are erased below while the set is read.
  std::unordered_set<std::string> gone;
  for (auto& [uid, pod] : pods_) {
    if (pods_seen.contains(uid)) pod.seen_seq = seq;
    if (seq - pod.seen_seq < opts_.pod_gone_after) continue;
    for (SeriesMap::iterator s : pod.series) {
      if (--s->second.pods == 0) series_.erase(s);
    }
    gone.insert(uid);
  }
  if (gone.empty()) return;
  // Their instances' ids are remembered: their exit records, still retained, must not
  // bring the names back.
  for (auto it = instances_.begin(); it != instances_.end();) {
    if (!gone.contains(it->second.pod_uid)) {
      ++it;
      continue;
    }
    it->second.series = nullptr;
    FoldLocked(it->first, it->second, 0);
    it = instances_.erase(it);
  }
  for (auto it = pods_.begin(); it != pods_.end();) {
    it = gone.contains(it->first) ? pods_.erase(it) : std::next(it);
  }
}

std::vector<ContainerOomKills::Total> ContainerOomKills::Totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Total> out;
  out.reserve(series_.size());
  for (const auto& [key, s] : series_) out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), s.total});
  return out;
}

uint64_t ContainerOomKills::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void ContainerOomKills::Collect(std::vector<ExtraFamily>* out) const {
  ExtraFamily f;
  f.name = kContainerOomKillsFamily;
  f.type = ExtraType::kCounter;
  f.help =
      "Processes of a pod's container chosen by the OOM killer, summed over the container's restarts while the pod "
      "lives (names from the runtime).";
  f.labels = {"namespace", "pod", "container"};
  {
    std::lock_guard<std::mutex> lock(mu_);
    f.series.reserve(series_.size());
    for (const auto& [key, s] : series_) {
      ExtraSeries& e = f.series.emplace_back();
      // Each label copied once (an initializer list would copy each twice).
      e.label_values.reserve(3);
      e.label_values.emplace_back(std::get<0>(key));
      e.label_values.emplace_back(std::get<1>(key));
      e.label_values.emplace_back(std::get<2>(key));
      e.value = Value::Count(s.total);
    }
  }
  out->push_back(std::move(f));
}

}  // namespace statlet::metrics
