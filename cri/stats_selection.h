// CriView: a snapshot seen the way the CRI sees it — containers and pod sandboxes with
// their CRI ids, joined to their cgroups — and the upstream filter semantics on top.
// Ids come from the runtime's metadata when the Sampler joined it, else from the cgroup
// path (container id; the pod uid stands in for the sandbox id). While the runtime
// answers, only the containers it names are listed: a sandbox is one of them, and it is
// never listed as a container.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "snapshot/snapshot.h"

namespace statlet::cri {

struct ContainerEntry {
  const CgroupStats* cgroup = nullptr;
  const ContainerMetadata* meta = nullptr;  // null without runtime metadata
  std::string id;
  std::string pod_sandbox_id;  // empty for a container outside any pod
  int pod_index = -1;          // into CriView::pods, -1 when none
};

struct PodEntry {
  const CgroupStats* cgroup = nullptr;
  const ContainerMetadata* meta = nullptr;  // the sandbox's (or a container's) metadata
  std::string id;
  std::vector<int> containers;               // into CriView::containers
  const NetNamespaceStats* netns = nullptr;  // the pod's network namespace, if known
};

struct CriView {
  const Snapshot* snapshot = nullptr;
  std::vector<ContainerEntry> containers;  // in cgroup path order, sandboxes excluded
  std::vector<PodEntry> pods;              // in cgroup path order
};

// Builds the view; `snapshot` must outlive it.
CriView BuildCriView(const Snapshot& snapshot);

// The pod's name, namespace, uid and attempt and its labels/annotations, from whichever
// metadata is at hand.
struct PodInfo {
  std::string name, namespace_, uid;
  uint32_t attempt = 0;
  const std::map<std::string, std::string>* labels = nullptr;
  const std::map<std::string, std::string>* annotations = nullptr;
};
PodInfo PodInfoOf(const CriView& view, const PodEntry& pod);

// Filters with upstream semantics: all fields ANDed, an empty field matches everything,
// ids match in full or by prefix (as crictl and the runtimes accept truncated ids), the
// label selector matches when each pair is among the object's labels.
struct ContainerFilter {
  std::string id;
  std::string pod_sandbox_id;
  std::map<std::string, std::string> label_selector;
};
struct PodFilter {
  std::string id;
  std::map<std::string, std::string> label_selector;
};

Status ValidateLabelSelector(const std::map<std::string, std::string>& selector);
bool Matches(const CriView& view, const ContainerEntry& c, const ContainerFilter& f);
bool Matches(const CriView& view, const PodEntry& p, const PodFilter& f);

// Resolves one container / pod by full id or unique prefix: NOT_FOUND when nothing
// matches, INVALID_ARGUMENT for an empty or ambiguous id.
StatusOr<const ContainerEntry*> FindContainer(const CriView& view, const std::string& id);
StatusOr<const PodEntry*> FindPod(const CriView& view, const std::string& id);

}  // namespace statlet::cri
