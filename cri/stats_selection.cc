#include "cri/stats_selection.h"

#include <unordered_map>

namespace statlet::cri {
namespace {

const ContainerMetadata* MetaOf(const CgroupStats& c) { return c.id.meta.get(); }

bool IdMatches(const std::string& filter, const std::string& id) {
  return filter.empty() || id.compare(0, filter.size(), filter) == 0;
}

bool LabelsMatch(const std::map<std::string, std::string>& selector, const std::map<std::string, std::string>* labels) {
  if (selector.empty()) return true;
  if (labels == nullptr) return false;
  for (const auto& [k, v] : selector) {
    auto it = labels->find(k);
    if (it == labels->end() || it->second != v) return false;
  }
  return true;
}

std::string PodIdFrom(const ContainerMetadata* meta, const CgroupStats& pod) {
  if (meta != nullptr) {
    if (!meta->pod_sandbox_id.empty()) return meta->pod_sandbox_id;
    if (meta->is_sandbox && !meta->container_id.empty()) return meta->container_id;
  }
  if (!pod.id.pod_uid.empty()) return pod.id.pod_uid;
  return pod.id.cgroup_path;
}

// An id as error messages quote it: a client's id can be a megabyte, and a status message
// that large fails the call on the client's side (its metadata limit) as something else.
std::string Quoted(const std::string& id) {
  constexpr size_t kShown = 72;
  if (id.size() <= kShown) return "\"" + id + "\"";
  return "\"" + id.substr(0, kShown) + "...\" (" + std::to_string(id.size()) + " bytes)";
}

template <typename Entry, typename Pred>
StatusOr<const Entry*> FindUnique(const std::vector<Entry>& entries, const std::string& id, const char* what,
                                  Pred&& matches) {
  if (id.empty()) return InvalidArgument(std::string(what) + " id is empty");
  const Entry* found = nullptr;
  int prefix_matches = 0;
  for (const auto& e : entries) {
    if (e.id == id) return &e;
    if (matches(e)) {
      found = &e;
      ++prefix_matches;
    }
  }
  if (prefix_matches == 1) return found;
  if (prefix_matches > 1) {
    return InvalidArgument(std::string(what) + " id prefix " + Quoted(id) + " is ambiguous: it matches " +
                           std::to_string(prefix_matches) + " " + what + "s");
  }
  return NotFound(std::string(what) + " " + Quoted(id) + " not found");
}

bool Leftover(const PodEntry& p, const std::vector<ContainerEntry>& containers, const std::vector<int>& mine) {
  if (p.meta != nullptr || p.cgroup->populated) return false;
  for (int ci : mine) {
    if (containers[ci].meta != nullptr) return false;
  }
  return true;
}

// Removes leftover pods and their containers, renumbering the indexes between them.
void DropLeftoverPods(CriView* view) {
  std::vector<std::vector<int>> by_pod(view->pods.size());
  for (size_t i = 0; i < view->containers.size(); ++i) {
    if (view->containers[i].pod_index >= 0) by_pod[view->containers[i].pod_index].push_back(static_cast<int>(i));
  }
  std::vector<int> new_pod(view->pods.size(), -1);
  std::vector<PodEntry> pods;
  for (size_t i = 0; i < view->pods.size(); ++i) {
    if (Leftover(view->pods[i], view->containers, by_pod[i])) continue;
    new_pod[i] = static_cast<int>(pods.size());
    pods.push_back(std::move(view->pods[i]));
  }
  if (pods.size() == view->pods.size()) {
    view->pods = std::move(pods);
    return;
  }
  std::vector<ContainerEntry> containers;
  for (auto& c : view->containers) {
    if (c.pod_index >= 0 && new_pod[c.pod_index] < 0) continue;
    if (c.pod_index >= 0) c.pod_index = new_pod[c.pod_index];
    containers.push_back(std::move(c));
  }
  view->pods = std::move(pods);
  view->containers = std::move(containers);
}

}  // namespace

CriView BuildCriView(const Snapshot& snapshot) {
  CriView view;
  view.snapshot = &snapshot;
  std::unordered_map<std::string, int> pod_by_path;
  for (const auto& c : snapshot.cgroups) {
    if (c.id.kind != CgroupKind::kPod) continue;
    PodEntry p;
    p.cgroup = &c;
    p.meta = MetaOf(c);
    pod_by_path.emplace(c.id.cgroup_path, static_cast<int>(view.pods.size()));
    view.pods.push_back(std::move(p));
  }
  for (const auto& c : snapshot.cgroups) {
    if (c.id.kind != CgroupKind::kContainer) continue;
    const ContainerMetadata* meta = MetaOf(c);
    auto pod_it = c.id.parent_path.empty() ? pod_by_path.end() : pod_by_path.find(c.id.parent_path);
    int pod_index = pod_it == pod_by_path.end() ? -1 : pod_it->second;
    if (meta != nullptr && meta->is_sandbox) {
      // The pause container names its pod but is not listed among the containers.
      if (pod_index >= 0 && view.pods[pod_index].meta == nullptr) view.pods[pod_index].meta = meta;
      continue;
    }
    // With the runtime answering, a container cgroup it does not name is none of the
    // containers it lists: a sandbox it is still starting (RunPodSandbox adds it to the
    // runtime's lists only once its task runs), a container it removed whose cgroup or exit
    // record lingers, a cgroup of some other manager. No CRI client knows such an id. A
    // container the runtime lists by now but statlet's metadata does not yet name is read
    // again after a round of the runtime client (CriStatsService::LoadSnapshot). A
    // container kept only by its exit record answers from it while the runtime lists it.
    if (meta == nullptr && snapshot.runtime && snapshot.runtime->up) continue;
    ContainerEntry e;
    e.cgroup = &c;
    e.meta = meta;
    e.id = meta != nullptr && !meta->container_id.empty() ? meta->container_id : c.id.container_id;
    if (e.id.empty()) e.id = c.id.cgroup_path;
    e.pod_index = pod_index;
    view.containers.push_back(std::move(e));
  }
  // With the runtime answering, a pod cgroup it does not know and with no process left is
  // a leftover (a removed pod whose cgroup lingers): runtimes do not list it, nor its
  // containers.
  if (snapshot.runtime && snapshot.runtime->up) DropLeftoverPods(&view);
  // Pods without their own metadata borrow it from a container; then ids and netns.
  for (size_t i = 0; i < view.containers.size(); ++i) {
    auto& e = view.containers[i];
    if (e.pod_index < 0) continue;
    PodEntry& p = view.pods[e.pod_index];
    p.containers.push_back(static_cast<int>(i));
    if (p.meta == nullptr && e.meta != nullptr) p.meta = e.meta;
  }
  for (auto& p : view.pods) {
    p.id = PodIdFrom(p.meta, *p.cgroup);
    if (!p.cgroup->host_network) p.netns = snapshot.Netns(*p.cgroup);
    for (int ci : p.containers) {
      if (p.netns != nullptr) break;
      const CgroupStats& cc = *view.containers[ci].cgroup;
      if (!cc.host_network) p.netns = snapshot.Netns(cc);
    }
  }
  for (auto& e : view.containers) {
    if (e.meta != nullptr && !e.meta->pod_sandbox_id.empty()) {
      e.pod_sandbox_id = e.meta->pod_sandbox_id;
    } else if (e.pod_index >= 0) {
      e.pod_sandbox_id = view.pods[e.pod_index].id;
    } else {
      e.pod_sandbox_id = e.cgroup->id.pod_uid;
    }
  }
  return view;
}

PodInfo PodInfoOf(const CriView& view, const PodEntry& pod) {
  PodInfo info;
  info.uid = pod.cgroup->id.pod_uid;
  const ContainerMetadata* m = pod.meta;
  if (m == nullptr) return info;
  info.name = m->pod_name;
  info.namespace_ = m->pod_namespace;
  if (!m->pod_uid.empty()) info.uid = m->pod_uid;
  info.attempt = m->pod_attempt;
  // A sandbox's own labels are the pod's; a container's metadata carries them separately.
  bool own = m->is_sandbox && m->pod_labels.empty();
  info.labels = own ? &m->labels : &m->pod_labels;
  info.annotations = m->is_sandbox && m->pod_annotations.empty() ? &m->annotations : &m->pod_annotations;
  return info;
}

Status ValidateLabelSelector(const std::map<std::string, std::string>& selector) {
  for (const auto& [k, v] : selector) {
    if (k.empty()) return InvalidArgument("label_selector has an empty key (value \"" + v + "\")");
  }
  return Status::Ok();
}

bool Matches(const CriView& view, const ContainerEntry& c, const ContainerFilter& f) {
  if (!IdMatches(f.id, c.id)) return false;
  if (!IdMatches(f.pod_sandbox_id, c.pod_sandbox_id)) return false;
  return LabelsMatch(f.label_selector, c.meta != nullptr ? &c.meta->labels : nullptr);
}

bool Matches(const CriView& view, const PodEntry& p, const PodFilter& f) {
  if (!IdMatches(f.id, p.id)) return false;
  if (f.label_selector.empty()) return true;
  return LabelsMatch(f.label_selector, PodInfoOf(view, p).labels);
}

StatusOr<const ContainerEntry*> FindContainer(const CriView& view, const std::string& id) {
  return FindUnique(view.containers, id, "container", [&](const ContainerEntry& e) { return IdMatches(id, e.id); });
}

StatusOr<const PodEntry*> FindPod(const CriView& view, const std::string& id) {
  return FindUnique(view.pods, id, "pod sandbox", [&](const PodEntry& e) { return IdMatches(id, e.id); });
}

}  // namespace statlet::cri
