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
};

// Whether `view` is a pull the target follows: made for the pod (by uid when both name
// one, else by namespace and name) and, when the target names an image, of that image.
bool Follows(const ProgressTarget& target, const PullView& view);

// The target of a request: the container's pod and image when `container_id` is set (it
// must then be in `pod_sandbox_id` when that is set too), else the sandbox's pod. Errors:
// INVALID_ARGUMENT when neither is set, NOT_FOUND (naming the id) when the runtime does
// not list it.
StatusOr<ProgressTarget> ResolveTarget(const MetadataMap& runtime, const std::string& pod_sandbox_id,
                                       const std::string& container_id);

}  // namespace statlet::pulls
