// What one KEP-5334 ImagePullProgress URL follows (docs/image-pulls.md): the pulls made
// for a pod, or for one image of that pod (a container's), and how the ids of the request
// map to it through the runtime's sandbox and container lists.
#pragma once

#include <string>

#include "base/status.h"
#include "pulls/pull_view.h"
#include "snapshot/snapshot.h"

namespace statlet {
struct MetadataMap;
}

namespace statlet::pulls {

struct ProgressTarget {
  PodRef pod;
  std::string image;  // normalized (ImageName::Normalized); empty: every image of the pod
  // A container's other names for its image, for runtimes that do not keep the name the
  // pod wrote (containerd 1.6 has no user_specified_image: its ContainerStatus gives the
  // image's first repository tag and first repository digest, its ListContainers the
  // image id the kubelet created the container with).
  std::string image_ref;   // the runtime's image_ref as it gave it ("sha256:…" or "repo@sha256:…")
  std::string by_digest;   // normalized "repo@sha256:…" when image_ref is one
  std::string repository;  // domain/path of the image (or of image_ref): other tags of it match
};

// Whether `view` is a pull the target follows: made for the pod (by uid when both name
// one, else by namespace and name) and, when the target names an image, of that image:
// by its normalized name, by the digest reference the runtime gave, by the runtime's
// answer once the pull succeeded, else by repository (the runtime may give another tag
// of the image than the one the pod names).
bool Follows(const ProgressTarget& target, const PullView& view);

// The target of a request: the container's pod and image when `container_id` is set (it
// must then be in `pod_sandbox_id` when that is set too), else the sandbox's pod. Errors:
// INVALID_ARGUMENT when neither is set, NOT_FOUND (naming the id) when the runtime does
// not list it, and NOT_FOUND saying so when the runtime knows the container's image only
// by its id (no name nor repository a pull could be matched by).
StatusOr<ProgressTarget> ResolveTarget(const MetadataMap& runtime, const std::string& pod_sandbox_id,
                                       const std::string& container_id);

}  // namespace statlet::pulls
