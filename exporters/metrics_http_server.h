// MetricsHttpServer: serves /metrics (path configurable; the same body on /metrics/cadvisor),
// /healthz, /readyz and a landing page on an HttpServer (event-driven, bounded per
// connection; see http_server.h), with optional TLS and basic auth (web config) and an
// optional plain address for probes.
//
// A scrape asks the SnapshotSource for a snapshot no older than max_age (single-flight and
// reuse live there), on the server's worker pool. The body comes from an ExpositionBuilder:
// the container families of one snapshot, encoded (and gzipped, when asked for) once per
// format and shared by every scrape of that snapshot, then the self metrics rendered for
// each scrape. /healthz and /readyz run on the event loop: they are answered while every
// worker is busy.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "exporters/exposition_builder.h"
#include "exporters/http_server.h"
#include "exporters/listen_socket.h"
#include "exporters/self_metrics.h"
#include "exporters/web_config.h"
#include "metrics/extra_families.h"
#include "metrics/snapshot_samples.h"
#include "snapshot/snapshot_source.h"

namespace statlet {

// Outside the 9100-9999 exporter range (fully allocated) and the Kubernetes node ports.
inline constexpr int kDefaultPort = 10340;

// Also answered with the telemetry path's body: where the kubelet serves cAdvisor's families.
inline constexpr char kCadvisorPath[] = "/metrics/cadvisor";

// The transport settings (HttpTransportOptions) and what the metrics routes add.
struct HttpServerOptions : HttpTransportOptions {
  std::string telemetry_path = "/metrics";
  std::chrono::nanoseconds max_age{0};  // passed to SnapshotSource::Get
  int gzip_level = 1;
};

class MetricsHttpServer {
 public:
  // `source` (and `self`, which may be null) must outlive the server.
  static StatusOr<std::unique_ptr<MetricsHttpServer>> Create(HttpServerOptions options, metrics::SampleRules rules,
                                                             SnapshotSource* source, SelfMetrics* self = nullptr);
  ~MetricsHttpServer();

  // Before Start: families appended to every exposition (`families` outlives the server).
  void AddFamilies(const metrics::ExtraSource* families) { builder_.AddFamilies(families); }
  // Before Start: GET `path` answers what `handler` returns (on a worker, behind the same
  // TLS and authorization as the metrics).
  struct RouteBody {
    int status = 200;
    std::string content_type;
    std::string body;
  };
  void AddRoute(const std::string& path, std::function<RouteBody()> handler);
  // Before Start: GET `prefix`<rest> answers what `handler` returns for <rest>: a body, or
  // (status 200) a stream sent as it is produced (http_server.h). The handler runs on the
  // event loop: it must return in microseconds. Same TLS and authorization as the metrics.
  struct StreamAnswer {
    int status = 200;
    std::string content_type;
    std::string body;                    // when not streamed
    std::shared_ptr<ByteStream> stream;  // when streamed
  };
  void AddStreamRoute(const std::string& prefix, std::function<StreamAnswer(const std::string& rest)> handler);

  // Binds the listen address(es) and serves from a background thread.
  Status Start();
  // Stops accepting and closes every connection (answers in flight get up to a second).
  // Idempotent.
  void Stop();
  int port() const { return http_->port(); }
  int health_port() const { return http_->health_port(); }
  // Once started: where the metrics are served, e.g. "http://127.0.0.1:10340/metrics" (the
  // bound port in place of a requested 0; ":10340" when listening on every address), and
  // the probe address, "http://127.0.0.1:10341" ("" without one).
  std::string MetricsUrl() const;
  std::string HealthUrl() const;
  // Once started: scheme://host:port of the main address, a wildcard host given as the
  // loopback address ("http://127.0.0.1:10340"): where URLs for local clients point.
  std::string BaseUrl() const;
  // /readyz answers 200 once set (after the first successful collection).
  void SetReady(bool ready) { ready_ = ready; }

  struct Counters {
    uint64_t scrapes = 0;
    uint64_t encodes = 0;  // expositions actually encoded (others reused bytes)
    uint64_t failed_scrapes = 0;
  };
  Counters counters() const;

 private:
  MetricsHttpServer(HttpServerOptions options, metrics::SampleRules rules, SnapshotSource* source, SelfMetrics* self);
  // The body producer of the telemetry path: a body and its content type.
  HttpResponse HandleMetrics(const HttpRequest& req);

  HttpServerOptions options_;
  SnapshotSource* source_;
  std::unique_ptr<HttpServer> http_;
  std::atomic<bool> ready_{false};

  SelfMetrics* self_;
  ExpositionBuilder builder_;
  std::mutex mu_;  // counters_
  Counters counters_;
};

}  // namespace statlet
