// The runtime.v1.ImageService statlet serves on its CRI socket (the gRPC edge of the pull
// engine; callback API, so no call holds a thread while it waits):
//   * PullImageWithProgress (KEP-3542) and PullImageProgress (the 2019 KEP): streams of
//     reports from the PullEngine, each call with its own granularity and verbosity.
//   * PullImage: the runtime's pull through the same engine (joins pulls in flight), with
//     statlet's default no-progress timeout.
//   * ListImages, ImageStatus, RemoveImage, ImageFsInfo: passed to the runtime byte for
//     byte, with the caller's deadline and cancellation, so that `crictl
//     --image-endpoint` pointed at statlet works for everything.
//   * StreamImages answers UNIMPLEMENTED (crictl does not use it; containerd 1.6 does
//     not serve it).
// In proxy mode (`pulls_only`, docs/cri.md) only PullImage and the two progress
// calls are registered (PullsOnlyMethods): the CRI socket's router sends those to this
// service, and the other image calls to the runtime with their metadata and trailers.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "pulls/pull_engine.h"
#include "pulls/runtime_puller.h"

namespace grpc {
class Service;
}

namespace statlet::pulls {

struct ImageServiceOptions {
  // For PullImage, PullImageProgress and a PullImageWithProgress that leaves the field
  // unset (0: none).
  std::chrono::seconds default_no_progress_timeout{0};
  // Cap on a passed-through call (the caller's own deadline applies when shorter).
  std::chrono::milliseconds forward_timeout{120000};
  // Passed-through calls in flight at once; more answer RESOURCE_EXHAUSTED.
  int max_forwarded_calls = 64;
  // Register PullImage, PullImageWithProgress and PullImageProgress only (proxy mode).
  bool pulls_only = false;
};

// The methods a `pulls_only` service registers, as full paths
// ("/runtime.v1.ImageService/PullImage", …).
const std::vector<std::string>& PullsOnlyMethods();

// `engine` and `runtime` must outlive the service.
std::unique_ptr<grpc::Service> NewImageService(PullEngine* engine, RuntimeChannel* runtime,
                                               ImageServiceOptions options);

}  // namespace statlet::pulls
