#include "cri/pull/image_pulls.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/service_type.h>

#include "cri/pull/containerd_content.h"
#include "cri/pull/image_service.h"
#include "cri/pull/pull_engine.h"
#include "cri/pull/runtime_puller.h"
#include "cri/runtime_client.h"

namespace statlet::cri::pull {

StatusOr<std::unique_ptr<ImagePulls>> ImagePulls::Start(const ImagePullOptions& o, const std::string& runtime_endpoint) {
  std::unique_ptr<ImagePulls> self(new ImagePulls());
  self->runtime_ = std::make_unique<RuntimeChannel>(runtime_endpoint, DefaultRuntimeSockets());
  RuntimeChannel* containerd = self->runtime_.get();
  if (!o.containerd_endpoint.empty()) {
    self->containerd_ = std::make_unique<RuntimeChannel>(o.containerd_endpoint, std::vector<std::string>());
    containerd = self->containerd_.get();
  }
  ContainerdContentOptions co;
  co.namespace_ = o.containerd_namespace;
  PullEngineOptions eo;
  eo.poll_interval = o.poll_interval;
  eo.abandoned_no_progress_timeout = o.no_progress_timeout;
  eo.keep_abandoned = o.keep_abandoned;
  eo.max_pulls = o.max_pulls;
  eo.max_subscribers = o.max_subscribers;
  self->engine_ = std::make_unique<PullEngine>(eo, std::make_unique<ContainerdContent>(containerd, co),
                                               NewCriRuntimePuller(self->runtime_.get()));
  self->engine_->Start();
  ImageServiceOptions so;
  so.default_no_progress_timeout = o.no_progress_timeout;
  self->service_ = NewImageService(self->engine_.get(), self->runtime_.get(), so);
  return self;
}

ImagePulls::~ImagePulls() { Stop(); }

void ImagePulls::Stop() {
  if (engine_) engine_->Stop();
}

}  // namespace statlet::cri::pull
