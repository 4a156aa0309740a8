#include "pulls/image_pulls.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/service_type.h>

#include "base/log.h"
#include "base/node_name.h"
#include "pulls/containerd_content.h"
#include "pulls/containerd_observed.h"
#include "pulls/image_service.h"
#include "pulls/node_pulls.h"
#include "pulls/observed_pulls.h"
#include "pulls/progress_streams.h"
#include "pulls/progress_urls.h"
#include "pulls/pull_engine.h"
#include "pulls/pull_metrics.h"
#include "pulls/pull_progress_service.h"
#include "pulls/runtime_puller.h"
#include "pulls/status_writer.h"
#include "runtime/runtime_client.h"

namespace statlet::pulls {

StatusOr<std::unique_ptr<ImagePulls>> ImagePulls::Start(const ImagePullOptions& o, const std::string& runtime_endpoint,
                                                        RuntimeClient* sandboxes) {
  // The name must be valid where it names an object on the API server, or was given.
  auto node = ResolveNodeName(o.node_name, /*strict=*/!o.apiserver.empty());
  if (!node.ok()) return InvalidArgument("pull.node-name: " + node.status().message());
  std::unique_ptr<StatusWriter> writer;
  if (!o.apiserver.empty()) {
    StatusWriterOptions wo;
    wo.url = o.apiserver;  // "in-cluster" or a URL
    if (!o.apiserver_token_file.empty()) wo.token_file = o.apiserver_token_file;
    if (!o.apiserver_ca_file.empty()) wo.ca_file = o.apiserver_ca_file;
    wo.node_name = *node;
    wo.min_interval = o.status_period;
    auto w = StatusWriter::Create(wo);
    if (!w.ok()) return w.status();
    writer = std::move(*w);
  }
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
  eo.observe_interval = o.observe_interval;
  eo.runtime_namespace = o.containerd_namespace;
  self->engine_ = std::make_unique<PullEngine>(eo, std::make_unique<ContainerdContent>(containerd, co),
                                               NewCriRuntimePuller(self->runtime_.get()));
  if (!o.observe_namespaces.empty()) {
    std::vector<std::unique_ptr<ObservedSource>> sources;
    for (const auto& ns : o.observe_namespaces) {
      sources.push_back(std::make_unique<ContainerdObserved>(containerd, ns, co.call_timeout));
    }
    ObservedPullsOptions obo;
    obo.no_progress_timeout = o.no_progress_timeout;
    self->engine_->Observe(std::make_unique<ObservedPulls>(obo, std::move(sources)));
  }
  self->engine_->Start();
  ImageServiceOptions so;
  so.default_no_progress_timeout = o.no_progress_timeout;
  so.pulls_only = o.pulls_only;
  self->service_ = NewImageService(self->engine_.get(), self->runtime_.get(), so);
  self->writer_ = std::move(writer);
  StatusWriter* w = self->writer_.get();
  NodePullsView::Listener listener;
  if (w != nullptr) {
    listener = [w](std::shared_ptr<const std::string> object, const std::string& content) {
      w->Offer(object, content);
    };
    w->Start();
  }
  self->view_ =
      std::make_unique<NodePullsView>(self->engine_.get(), NodePullsOptions{*node, o.status_period}, listener);
  self->view_->Start();
  self->metrics_ = std::make_unique<PullMetrics>(self->engine_.get(), self->writer_.get());
  PullEngine* engine = self->engine_.get();
  ProgressStreamsOptions pso;
  pso.max_streams = o.max_progress_streams;
  pso.interval = o.poll_interval;
  self->progress_streams_ = std::make_unique<ProgressStreams>(
      ProgressFeed{[engine] { return engine->Pulls(); }, [engine] { return engine->generation(); }}, pso);
  ProgressTokensOptions pto;
  pto.ttl = o.progress_url_ttl;
  pto.max_outstanding = o.max_progress_urls;
  self->progress_urls_ = std::make_unique<ProgressUrls>(pto, self->progress_streams_.get());
  self->progress_service_ = NewPullProgressService(self->progress_urls_.get(), sandboxes);
  return self;
}

ImagePulls::~ImagePulls() { Stop(); }

void ImagePulls::Stop() {
  if (progress_streams_) progress_streams_->Stop();
  if (engine_) engine_->Stop();
  if (view_) view_->Stop();
  if (writer_) writer_->Stop();
}

std::shared_ptr<const std::string> ImagePulls::NodeObject() const { return view_->Current(); }

const metrics::ExtraSource* ImagePulls::metrics() const { return metrics_.get(); }

}  // namespace statlet::pulls
