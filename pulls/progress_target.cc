#include "pulls/progress_target.h"

#include "collector/enrichment.h"
#include "pulls/image_name.h"

namespace statlet::pulls {
namespace {

PodRef PodOf(const ContainerMetadata& m) { return PodRef{m.pod_namespace, m.pod_name, m.pod_uid}; }

bool SamePod(const PodRef& a, const PodRef& b) {
  if (!a.uid.empty() && !b.uid.empty()) return a.uid == b.uid;
  return a.namespace_ == b.namespace_ && a.name == b.name;
}

// Every sandbox the runtime lists is in by_container_id under its id (RuntimeClient).
const ContainerMetadata* FindSandbox(const MetadataMap& runtime, const std::string& id) {
  auto it = runtime.by_container_id.find(id);
  if (it != runtime.by_container_id.end() && it->second && it->second->is_sandbox) return it->second.get();
  return nullptr;
}

}  // namespace

bool Follows(const ProgressTarget& target, const PullView& view) {
  if (!target.image.empty() && view.image != target.image) return false;
  for (const PodRef& p : view.pods) {
    if (SamePod(p, target.pod)) return true;
  }
  return false;
}

StatusOr<ProgressTarget> ResolveTarget(const MetadataMap& runtime, const std::string& pod_sandbox_id,
                                       const std::string& container_id) {
  if (pod_sandbox_id.empty() && container_id.empty()) {
    return InvalidArgument("ImagePullProgress: set pod_sandbox_id or container_id (at least one, as KEP-5334 asks)");
  }
  ProgressTarget t;
  if (!container_id.empty()) {
    auto it = runtime.by_container_id.find(container_id);
    if (it == runtime.by_container_id.end() || !it->second || it->second->is_sandbox) {
      return NotFound("ImagePullProgress: no container " + container_id + " in the runtime's container list");
    }
    const ContainerMetadata& c = *it->second;
    if (!pod_sandbox_id.empty() && c.pod_sandbox_id != pod_sandbox_id) {
      return NotFound("ImagePullProgress: container " + container_id + " is not in pod sandbox " + pod_sandbox_id +
                      " (it is in " + c.pod_sandbox_id + ")");
    }
    t.pod = PodOf(c);
    auto name = ParseImageName(c.image);
    t.image = name.ok() ? name->Normalized() : c.image;
    return t;
  }
  const ContainerMetadata* s = FindSandbox(runtime, pod_sandbox_id);
  if (s == nullptr) {
    return NotFound("ImagePullProgress: no pod sandbox " + pod_sandbox_id + " in the runtime's sandbox list");
  }
  t.pod = PodOf(*s);
  return t;
}

}  // namespace statlet::pulls
