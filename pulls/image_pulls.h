// ImagePulls: everything the daemon runs for image pulls, started and stopped as one:
// the channel to the runtime, the content store client, the PullEngine, the gRPC image
// service the CRI server registers, the per-node NodeImagePulls view (and its optional
// writer to the API server), the pull families (served on /metrics, exported over OTLP) and
// KEP-5334's ImagePullProgress call with the progress streams its URLs open.
//
// The flags that set ImagePullOptions are declared in cmd/options_pull.cc.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace grpc {
class Service;
}

namespace statlet {
class RuntimeClient;
}

namespace statlet::metrics {
class ExtraSource;
}

namespace statlet::pulls {

class PullEngine;
class RuntimeChannel;
class NodePullsView;
class StatusWriter;
class PullMetrics;
class ProgressStreams;
class ProgressUrls;

struct ImagePullOptions {
  bool enabled = true;
  // containerd's socket for the content service; empty: the runtime endpoint's.
  std::string containerd_endpoint;
  std::string containerd_namespace = "k8s.io";
  std::chrono::seconds no_progress_timeout{0};
  std::chrono::milliseconds poll_interval{250};
  // Pulls statlet does not carry, followed in these containerd namespaces (empty: none),
  // asked every observe_interval while none runs.
  std::vector<std::string> observe_namespaces = {"k8s.io", "default"};
  std::chrono::milliseconds observe_interval{1000};
  bool keep_abandoned = true;
  size_t max_pulls = 32;
  size_t max_subscribers = 256;
  // The NodeImagePulls object: rebuilt every status_period (1s..1m) for node_name (empty:
  // $NODE_NAME, else the host name).
  std::chrono::seconds status_period{5};
  std::string node_name;
  // Server-side apply to the API server: "" (off), "in-cluster", or https://host:port.
  std::string apiserver;
  std::string apiserver_token_file;  // empty: the service account's
  std::string apiserver_ca_file;
  // Proxy mode (not a flag: the daemon sets it): the image service registers the pull
  // calls only, the CRI server passes the others to the runtime.
  bool pulls_only = false;
  // KEP-5334 progress URLs: how long one waits to be used, how many may wait, how many
  // streams may be open at once.
  std::chrono::seconds progress_url_ttl{30};
  size_t max_progress_urls = 1000;
  size_t max_progress_streams = 128;
};

class ImagePulls {
 public:
  // `runtime_endpoint`: the daemon's --runtime.endpoint (empty: auto-detect). `sandboxes`
  // (may be null; must outlive this) lists the pods ImagePullProgress names.
  static StatusOr<std::unique_ptr<ImagePulls>> Start(const ImagePullOptions& options,
                                                     const std::string& runtime_endpoint,
                                                     RuntimeClient* sandboxes = nullptr);
  ~ImagePulls();
  // Ends every pull call (UNAVAILABLE) and cancels the runtime's pulls. Call before the
  // CRI server stops; idempotent.
  void Stop();

  grpc::Service* service() { return service_.get(); }
  // RuntimeService's ImagePullProgress (registered beside the stats service).
  grpc::Service* progress_service() { return progress_service_.get(); }
  // Its URLs: the web listener sets their base and serves kProgressPathPrefix with them.
  ProgressUrls* progress_urls() { return progress_urls_.get(); }
  PullEngine* engine() { return engine_.get(); }
  // The NodeImagePulls object as JSON (what /imagepulls serves).
  std::shared_ptr<const std::string> NodeObject() const;
  // The pull families, as format-neutral samples the edges render.
  const metrics::ExtraSource* metrics() const;

 private:
  ImagePulls() = default;
  std::unique_ptr<RuntimeChannel> runtime_;
  std::unique_ptr<RuntimeChannel> containerd_;
  std::unique_ptr<PullEngine> engine_;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<StatusWriter> writer_;
  std::unique_ptr<NodePullsView> view_;
  std::unique_ptr<PullMetrics> metrics_;
  std::unique_ptr<ProgressStreams> progress_streams_;
  std::unique_ptr<ProgressUrls> progress_urls_;
  std::unique_ptr<grpc::Service> progress_service_;
};

}  // namespace statlet::pulls
