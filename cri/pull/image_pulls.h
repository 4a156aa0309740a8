// ImagePulls: everything the daemon runs for image pulls, started and stopped as one:
// the channel to the runtime, the content store client, the PullEngine and the gRPC image
// service the CRI server registers.
//
// The flags that set ImagePullOptions live with the daemon's other options
// (cmd/daemon_options.cc, section "pull").
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"

namespace grpc {
class Service;
}

namespace statlet::cri::pull {

class PullEngine;
class RuntimeChannel;

struct ImagePullOptions {
  bool enabled = true;
  // containerd's socket for the content service; empty: the runtime endpoint's.
  std::string containerd_endpoint;
  std::string containerd_namespace = "k8s.io";
  std::chrono::seconds no_progress_timeout{0};
  std::chrono::milliseconds poll_interval{250};
  bool keep_abandoned = true;
  size_t max_pulls = 32;
  size_t max_subscribers = 256;
};

class ImagePulls {
 public:
  // `runtime_endpoint`: the daemon's --runtime.endpoint (empty: auto-detect).
  static StatusOr<std::unique_ptr<ImagePulls>> Start(const ImagePullOptions& options,
                                                     const std::string& runtime_endpoint);
  ~ImagePulls();
  // Ends every pull call (UNAVAILABLE) and cancels the runtime's pulls. Call before the
  // CRI server stops; idempotent.
  void Stop();

  grpc::Service* service() { return service_.get(); }
  PullEngine* engine() { return engine_.get(); }

 private:
  ImagePulls() = default;
  std::unique_ptr<RuntimeChannel> runtime_;
  std::unique_ptr<RuntimeChannel> containerd_;
  std::unique_ptr<PullEngine> engine_;
  std::unique_ptr<grpc::Service> service_;
};

}  // namespace statlet::cri::pull
