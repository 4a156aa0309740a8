#include "metrics/container_oom_kills.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace statlet::metrics {

ContainerOomKills::ContainerOomKills(ContainerOomKillsOptions options) : opts_(options) {}

void ContainerOomKills::FoldLocked(const std::string& container_id, const Instance& inst) {
  if (!inst.name.empty()) {
    auto it = entries_.find({inst.pod_uid, inst.name});
    if (it != entries_.end()) it->second.folded += inst.earlier + inst.last;
  }
  if (folded_.insert(container_id).second) {
    folded_ids_.push_back(container_id);
    if (folded_ids_.size() > opts_.max_folded) {
      folded_.erase(folded_ids_.front());
      folded_ids_.pop_front();
    }
  }
}

void ContainerOomKills::Observe(const Snapshot& snap) {
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
    if (id.empty() || folded_.contains(id)) continue;

    auto it = instances_.find(id);
    if (it == instances_.end()) {
      if (instances_.size() >= opts_.max_instances) {
        ++dropped_;
        continue;
      }
      it = instances_.emplace(id, Instance{pod_uid, "", 0, 0, 0, false}).first;
    }
    Instance& inst = it->second;
    inst.seen_seq = seq;
    if (const std::optional<uint64_t> v = OomKillsOf(c)) {
      if (*v < inst.last) inst.earlier += inst.last;  // a reset: keep what it had counted
      inst.last = *v;
    }
    if (meta == nullptr || meta->container_name.empty()) continue;
    const std::pair<std::string_view, std::string_view> key{inst.pod_uid, meta->container_name};
    auto e = entries_.find(key);
    if (e == entries_.end()) {
      if (!inst.name.empty()) continue;  // its pod's names went: it is let go with them
      if (entries_.size() >= opts_.max_entries) {
        if (!inst.left_out) ++dropped_;
        inst.left_out = true;
        continue;
      }
      e = entries_.emplace(std::pair<std::string, std::string>(key), Entry{}).first;
    }
    inst.name = meta->container_name;
    if (!meta->pod_namespace.empty()) e->second.namespace_ = meta->pod_namespace;
    if (!meta->pod_name.empty()) e->second.pod = meta->pod_name;
  }

  // Instances no snapshot showed for fold_after collections: folded into their name.
  for (auto it = instances_.begin(); it != instances_.end();) {
    if (seq - it->second.seen_seq >= opts_.fold_after) {
      FoldLocked(it->first, it->second);
      it = instances_.erase(it);
    } else {
      ++it;
    }
  }
  // Pods: every pod that has names or instances, and whether this snapshot showed it.
  for (const auto& [key, entry] : entries_) pods_unseen_.try_emplace(key.first, 0);
  for (const auto& [id, inst] : instances_) pods_unseen_.try_emplace(inst.pod_uid, 0);
  for (auto it = pods_unseen_.begin(); it != pods_unseen_.end();) {
    if (pods_seen.contains(it->first)) {
      it->second = 0;
      ++it;
      continue;
    }
    if (++it->second < opts_.pod_gone_after) {
      ++it;
      continue;
    }
    const std::string& uid = it->first;
    entries_.erase(entries_.lower_bound({uid, ""}), entries_.lower_bound({uid + '\0', ""}));
    // Its instances' ids are remembered: their exit records, still retained, must not
    // bring the names back.
    for (auto inst = instances_.begin(); inst != instances_.end();) {
      if (inst->second.pod_uid != uid) {
        ++inst;
        continue;
      }
      FoldLocked(inst->first, Instance{});
      inst = instances_.erase(inst);
    }
    it = pods_unseen_.erase(it);
  }
}

std::vector<ContainerOomKills::Total> ContainerOomKills::Totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::pair<std::string, std::string>, uint64_t, KeyLess> sum;
  for (const auto& [key, e] : entries_) sum[key] = e.folded;
  for (const auto& [id, inst] : instances_) {
    if (inst.name.empty()) continue;
    auto it = sum.find(std::pair<std::string_view, std::string_view>(inst.pod_uid, inst.name));
    if (it != sum.end()) it->second += inst.earlier + inst.last;
  }
  std::vector<Total> out;
  out.reserve(sum.size());
  for (const auto& [key, kills] : sum) {
    const Entry& e = entries_.at(key);
    out.push_back({e.namespace_, e.pod, key.second, kills});
  }
  std::sort(out.begin(), out.end(), [](const Total& a, const Total& b) {
    return std::tie(a.namespace_, a.pod, a.container) < std::tie(b.namespace_, b.pod, b.container);
  });
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
  for (Total& t : Totals()) {
    ExtraSeries s;
    s.label_values = {std::move(t.namespace_), std::move(t.pod), std::move(t.container)};
    s.value = Value::Count(t.oom_kills);
    f.series.push_back(std::move(s));
  }
  out->push_back(std::move(f));
}

}  // namespace statlet::metrics
