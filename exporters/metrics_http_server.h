// MetricsHttpServer: serves /metrics (path configurable), /healthz, /readyz and a landing
// page over HTTP/1.1 (cpp-httplib), with keep-alive, read/write timeouts, a request size cap,
// optional TLS and basic auth (web config), and a fixed thread pool for concurrent scrapes.
//
// A scrape asks the SnapshotSource for a snapshot no older than max_age (single-flight and
// reuse live there); the body comes from an ExpositionBuilder (container families shared by
// every scrape of one snapshot, then the self metrics).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "collector/snapshot_source.h"
#include "exporters/exposition_builder.h"
#include "exporters/extra_families.h"
#include "exporters/self_metrics.h"
#include "exporters/web_config.h"
#include "metrics/snapshot_samples.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace statlet {

// Outside the 9100-9999 exporter range (fully allocated) and the Kubernetes node ports.
inline constexpr int kDefaultPort = 10340;

struct HttpServerOptions {
  std::string listen_address = ":" + std::to_string(kDefaultPort);
  std::string telemetry_path = "/metrics";
  WebConfig web;
  std::chrono::seconds read_timeout{10};
  std::chrono::seconds write_timeout{30};
  std::chrono::seconds keep_alive_timeout{30};
  size_t keep_alive_max_requests = 1000;
  size_t max_request_bytes = 64 * 1024;
  size_t threads = 8;
  std::chrono::nanoseconds max_age{0};  // passed to SnapshotSource::Get
  int gzip_level = 1;
};

// Parses "host:port", ":port" (all interfaces) or "[v6]:port".
Status ParseListenAddress(const std::string& address, std::string* host, int* port);

class MetricsHttpServer {
 public:
  // `source` (and `self`, which may be null) must outlive the server.
  static StatusOr<std::unique_ptr<MetricsHttpServer>> Create(HttpServerOptions options, metrics::SampleRules rules,
                                                             SnapshotSource* source, SelfMetrics* self = nullptr);
  ~MetricsHttpServer();

  // Before Start: families appended to every exposition (`families` outlives the server).
  void AddFamilies(const ExtraFamilies* families) { builder_.AddFamilies(families); }
  // Before Start: GET `path` answers what `handler` returns, behind the same authorization.
  struct RouteBody {
    int status = 200;
    std::string content_type;
    std::string body;
  };
  void AddRoute(const std::string& path, std::function<RouteBody()> handler);

  // Binds the listen address and serves from a background thread.
  Status Start();
  // Stops accepting, finishes in-flight requests and joins the thread. Idempotent.
  void Stop();
  int port() const { return port_; }
  // /readyz answers 200 once set (after the first successful collection).
  void SetReady(bool ready) { ready_ = ready; }

  struct Counters {
    uint64_t scrapes = 0;
    uint64_t encodes = 0;        // expositions actually encoded (others reused bytes)
    uint64_t failed_scrapes = 0;
  };
  Counters counters() const;

 private:
  MetricsHttpServer(HttpServerOptions options, metrics::SampleRules rules, SnapshotSource* source,
                    SelfMetrics* self);
  static StatusOr<std::unique_ptr<MetricsHttpServer>> FinishCreate(std::unique_ptr<MetricsHttpServer> self,
                                                                   const std::string& host, int port);
  void HandleMetrics(const httplib::Request& req, httplib::Response& res);
  bool Authorized(const httplib::Request& req, httplib::Response& res);

  HttpServerOptions options_;
  SnapshotSource* source_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string host_;
  int port_ = 0;
  std::atomic<bool> ready_{false};
  std::atomic<bool> running_{false};

  SelfMetrics* self_;
  ExpositionBuilder builder_;
  std::mutex mu_;  // counters_
  Counters counters_;

  // Authorization headers that passed bcrypt, so each scrape does not pay for it again.
  std::mutex auth_mu_;
  std::vector<std::string> verified_auth_;
};

}  // namespace statlet
