#include "cri/daemon_hooks.h"

namespace statlet::cri {
std::unique_ptr<RuntimeClient> StartRuntimeClient(const CriDaemonOptions& o) {
  if (o.runtime_endpoint == "none") return nullptr;
  RuntimeClientOptions ro;
  ro.endpoint = o.runtime_endpoint;
  ro.stats_period = o.runtime_stats_period;
  ro.refresh_period = o.runtime_refresh_period;
  auto client = std::make_unique<RuntimeClient>(ro);
  // The first round runs at once in the background: serving never waits for the runtime
  // (a hung socket would hold it for the call timeout). Snapshots are named as soon as
  // that round is done; an absent or failing runtime is retried with backoff.
  client->Start();
  return client;
}

StatusOr<std::unique_ptr<CriServer>> StartCriServer(SnapshotSource* source, const CriDaemonOptions& o,
                                                    const metrics::SampleRules& rules, metrics::CallObserver* calls,
                                                    grpc::Service* image_service, RuntimeClient* runtime,
                                                    grpc::Service* runtime_extra,
                                                    const std::vector<std::string>& local_methods) {
  if (o.listen.empty()) return std::unique_ptr<CriServer>();
  CriServerOptions so;
  so.listen_path = o.listen;
  so.service.max_age = o.max_age;
  so.service.max_unary_metrics_bytes = o.max_unary_metrics_bytes;
  so.service.rules = rules;
  so.call_observer = calls;
  so.image_service = image_service;
  so.runtime_extra = runtime_extra;
  so.service.runtime = runtime;
  if (o.proxy) {
    PassThroughOptions po;
    po.runtime_endpoint = o.runtime_endpoint;
    po.max_calls = o.proxy_max_calls;
    po.max_message_bytes = o.max_unary_metrics_bytes;
    po.local_methods = local_methods;
    if (runtime != nullptr) po.on_change = [runtime](std::string_view) { runtime->NoteChange(); };
    so.proxy = std::move(po);
    so.service.wait_for_changes = true;
  }
  return CriServer::Start(source, so);
}

}  // namespace statlet::cri
