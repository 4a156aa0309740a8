#include "pulls/progress_target.h"

#include <string_view>

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

// An image id ("sha256:<hex>", or the bare hex) rather than a name: it parses as a name
// (docker.io/library/sha256:<hex>) but names nothing a pull is made for.
bool IsImageId(const std::string& s) {
  std::string_view hex(s);
  if (hex.rfind("sha256:", 0) == 0) hex.remove_prefix(7);
  if (hex.size() != 64) return false;
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string Repository(const ImageName& n) { return n.domain + "/" + n.path; }

bool SameImage(const ProgressTarget& t, const PullView& view) {
  if (t.image.empty() && t.repository.empty()) return true;  // the whole pod
  if (!t.image.empty() && view.image == t.image) return true;
  if (!t.by_digest.empty() && view.image == t.by_digest) return true;
  if (!t.image_ref.empty() && view.image_ref == t.image_ref) return true;
  if (t.repository.empty()) return false;
  auto name = ParseImageName(view.image);
  return name.ok() && Repository(*name) == t.repository;
}

// The target's image from what the runtime says of the container.
Status SetImage(const ContainerMetadata& c, ProgressTarget* t) {
  if (!c.image.empty() && !IsImageId(c.image)) {
    if (auto name = ParseImageName(c.image); name.ok()) {
      t->image = name->Normalized();
      t->repository = Repository(*name);
    } else {
      t->image = c.image;
    }
  }
  t->image_ref = c.image_ref;
  if (!c.image_ref.empty() && !IsImageId(c.image_ref)) {
    if (auto ref = ParseImageName(c.image_ref); ref.ok() && !ref->digest.empty()) {
      t->by_digest = ref->Normalized();
      if (t->repository.empty()) t->repository = Repository(*ref);
    }
  }
  if (t->image.empty() && t->by_digest.empty()) {
    return NotFound("ImagePullProgress: the runtime knows the image of container " + c.container_id +
                    " only by its id (" + (c.image.empty() ? c.image_ref : c.image) +
                    "), with no name or repository a pull could be matched by; follow its pod (pod_sandbox_id)");
  }
  return Status::Ok();
}

}  // namespace

bool Follows(const ProgressTarget& target, const PullView& view) {
  if (!SameImage(target, view)) return false;
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
    if (Status s = SetImage(c, &t); !s.ok()) return s;
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
