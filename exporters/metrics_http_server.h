// MetricsHttpServer: serves /metrics (path configurable), /healthz, /readyz and a landing
// page on an HttpServer (event-driven, bounded per connection; see http_server.h), with
// optional TLS and basic auth (web config) and an optional plain address for probes.
//
// A scrape asks the SnapshotSource for a snapshot no older than max_age (single-flight and
// reuse live there), on the server's worker pool. The exposition of one snapshot is
// encoded — and gzipped, when asked for — once per format; every scrape served from the
// same snapshot shares those bytes. /healthz and /readyz run on the event loop: they are
// answered while every worker is busy.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "collector/snapshot_source.h"
#include "exporters/gzip_compressor.h"
#include "exporters/http_server.h"
#include "exporters/listen_socket.h"
#include "exporters/prometheus_encoder.h"
#include "exporters/web_config.h"

namespace statlet {

// Outside the 9100-9999 exporter range (fully allocated) and the Kubernetes node ports.
inline constexpr int kDefaultPort = 10340;

// The transport settings (HttpTransportOptions) and what the metrics routes add.
struct HttpServerOptions : HttpTransportOptions {
  std::string telemetry_path = "/metrics";
  std::chrono::nanoseconds max_age{0};  // passed to SnapshotSource::Get
  int gzip_level = 1;
};

class MetricsHttpServer {
 public:
  // `source` must outlive the server.
  static StatusOr<std::unique_ptr<MetricsHttpServer>> Create(HttpServerOptions options, EncoderOptions encoder,
                                                             SnapshotSource* source);
  ~MetricsHttpServer();

  // Binds the listen address(es) and serves from a background thread.
  Status Start();
  // Stops accepting and closes every connection (answers in flight get up to a second).
  // Idempotent.
  void Stop();
  int port() const { return http_->port(); }
  int health_port() const { return http_->health_port(); }
  // /readyz answers 200 once set (after the first successful collection).
  void SetReady(bool ready) { ready_ = ready; }

  struct Counters {
    uint64_t scrapes = 0;
    uint64_t encodes = 0;        // expositions actually encoded (others reused bytes)
    uint64_t failed_scrapes = 0;
  };
  Counters counters() const;

 private:
  MetricsHttpServer(HttpServerOptions options, EncoderOptions encoder, SnapshotSource* source);
  // The body producer of the telemetry path: a body and its content type.
  HttpResponse HandleMetrics(const HttpRequest& req);
  StatusOr<std::shared_ptr<const std::string>> Exposition(const SnapshotPtr& snap, ExpositionFormat format,
                                                          bool gzip);

  HttpServerOptions options_;
  SnapshotSource* source_;
  std::unique_ptr<HttpServer> http_;
  std::atomic<bool> ready_{false};

  // Encoding state, one encode at a time.
  std::mutex mu_;
  PrometheusEncoder encoder_;
  GzipCompressor gzip_;
  std::string plain_scratch_;  // the uncompressed exposition before gzip
  struct CachedBody {
    uint64_t sequence = UINT64_MAX;
    std::shared_ptr<std::string> bytes;
  };
  CachedBody bodies_[2][2];  // [format][gzip]
  Counters counters_;
};

}  // namespace statlet
