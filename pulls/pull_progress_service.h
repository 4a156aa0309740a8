// The KEP-5334 call on statlet's CRI socket: /runtime.v1.RuntimeService/ImagePullProgress
// (proto/kep5334_image_pull_progress.proto says why it is registered by its path). It maps
// the request's ids to a pod (and image) through the runtime's sandbox and container lists
// (RuntimeClient's cached map; an id it does not list yet makes it look again once) and
// answers a progress URL (pulls/progress_urls.h).
//
// The CRI server registers it beside the stats service, so in proxy mode gRPC matches it
// before the generic service that passes other calls to the runtime.
#pragma once

#include <chrono>
#include <memory>

namespace grpc {
class Service;
}

namespace statlet {
class RuntimeClient;
}

namespace statlet::pulls {

class ProgressUrls;

inline constexpr char kImagePullProgressMethod[] = "/runtime.v1.RuntimeService/ImagePullProgress";

// `urls` and `runtime` (null: every call is UNAVAILABLE) must outlive the service.
// `relist_wait`: how long a call waits for a fresh list when an id is not in the cached one.
std::unique_ptr<grpc::Service> NewPullProgressService(ProgressUrls* urls, RuntimeClient* runtime,
                                                      std::chrono::milliseconds relist_wait = std::chrono::seconds(2));

}  // namespace statlet::pulls
