#include "exporters/metrics_http_server.h"

#include <algorithm>

#include "base/log.h"
#include "exporters/content_negotiation.h"

namespace statlet {

MetricsHttpServer::MetricsHttpServer(HttpServerOptions options, metrics::SampleRules rules, SnapshotSource* source,
                                     SelfMetrics* self)
    : options_(std::move(options)),
      source_(source),
      self_(self),
      builder_(std::move(rules), self, options_.gzip_level) {}

MetricsHttpServer::~MetricsHttpServer() {
  if (http_) http_->Stop();
}

StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Create(HttpServerOptions options,
                                                                       metrics::SampleRules rules,
                                                                       SnapshotSource* source, SelfMetrics* self) {
  if (source == nullptr) return InvalidArgument("no snapshot source");
  if (options.telemetry_path.empty() || options.telemetry_path[0] != '/') {
    return InvalidArgument("telemetry path must start with '/': " + options.telemetry_path);
  }
  if (options.gzip_level < 1 || options.gzip_level > 9) return InvalidArgument("gzip level must be 1..9");
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(std::move(options), std::move(rules), source, self));
  MetricsHttpServer* s = server.get();
  const std::string& path = s->options_.telemetry_path;
  std::vector<HttpRoute> routes;
  routes.push_back({path, [s](const HttpRequest& req) { return s->HandleMetrics(req); }, /*on_worker=*/true});
  // The path the kubelet serves cAdvisor's families on: kube-prometheus selects them by
  // metrics_path="/metrics/cadvisor" (deploy/kube-prometheus/). Same body, same handler.
  if (path != kCadvisorPath) {
    routes.push_back(
        {kCadvisorPath, [s](const HttpRequest& req) { return s->HandleMetrics(req); }, /*on_worker=*/true});
  }
  routes.push_back({"/healthz", [](const HttpRequest&) { return HttpResponse::Text(200, "ok\n"); },
                    /*on_worker=*/false, /*on_health_listener=*/true});
  routes.push_back({"/readyz",
                    [s](const HttpRequest&) {
                      return s->ready_ ? HttpResponse::Text(200, "ready\n")
                                       : HttpResponse::Text(503, "not ready: no collection has completed yet\n");
                    },
                    /*on_worker=*/false, /*on_health_listener=*/true});
  const std::string landing = "<html><head><title>statlet</title></head><body><h1>statlet</h1><p><a href=\"" + path +
                              "\">Metrics</a></p><p><a href=\"/healthz\">Health</a> <a href=\"/readyz\">Ready</a></p>"
                              "</body></html>\n";
  routes.push_back({"/", [landing](const HttpRequest&) {
                      HttpResponse r = HttpResponse::Text(200, landing);
                      r.content_type = "text/html; charset=utf-8";
                      return r;
                    }});
  auto http = HttpServer::Create(s->options_, std::move(routes));
  if (!http.ok()) return http.status();
  s->http_ = std::move(*http);
  return server;
}

Status MetricsHttpServer::Start() {
  if (Status st = http_->Start(); !st.ok()) return st;
  const std::string health = HealthUrl();
  log::Info("serving metrics on " + MetricsUrl() + ", /healthz and /readyz beside it" +
            (health.empty() ? std::string() : ", and without auth on " + health + "/healthz and /readyz"));
  return Status::Ok();
}

namespace {

// "host:port" with the bound port in place of the requested one.
std::string BoundAddress(const std::string& listen_address, int port) {
  std::string host;
  int requested = 0;
  if (!ParseListenAddress(listen_address, &host, &requested).ok()) return listen_address;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return host + ":" + std::to_string(port);
}

}  // namespace

std::string MetricsHttpServer::MetricsUrl() const {
  return std::string(options_.web.tls() ? "https" : "http") + "://" +
         BoundAddress(options_.listen_address, http_->port()) + options_.telemetry_path;
}

std::string MetricsHttpServer::BaseUrl() const {
  std::string host;
  int requested = 0;
  if (!ParseListenAddress(options_.listen_address, &host, &requested).ok()) host.clear();
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return std::string(options_.web.tls() ? "https" : "http") + "://" + host + ":" + std::to_string(http_->port());
}

std::string MetricsHttpServer::HealthUrl() const {
  if (options_.health_listen_address.empty()) return "";
  return "http://" + BoundAddress(options_.health_listen_address, http_->health_port());
}

void MetricsHttpServer::Stop() {
  if (http_) http_->Stop();
}

void MetricsHttpServer::AddRoute(const std::string& path, std::function<RouteBody()> handler) {
  http_->AddRoute({path,
                   [handler = std::move(handler)](const HttpRequest&) {
                     RouteBody b = handler();
                     HttpResponse r;
                     r.status = b.status;
                     r.content_type = std::move(b.content_type);
                     r.body = std::make_shared<const std::string>(std::move(b.body));
                     return r;
                   },
                   /*on_worker=*/true});
}

void MetricsHttpServer::AddStreamRoute(const std::string& prefix,
                                       std::function<StreamAnswer(const std::string& rest)> handler) {
  HttpRoute route{prefix,
                  [prefix, handler = std::move(handler)](const HttpRequest& req) {
                    HttpResponse r;
                    if (req.method == "HEAD") {
                      // The handler spends what the path names (a single-use token): only a
                      // GET, which gets the stream, may.
                      r.status = 405;
                      r.headers.emplace_back("Allow", "GET");
                      r.body = std::make_shared<const std::string>("a stream's URL is used by GET only\n");
                      return r;
                    }
                    StreamAnswer a = handler(req.path.substr(prefix.size()));
                    r.status = a.status;
                    r.content_type = std::move(a.content_type);
                    r.body = std::make_shared<const std::string>(std::move(a.body));
                    r.stream = std::move(a.stream);
                    return r;
                  },
                  /*on_worker=*/false};
  route.prefix = true;
  http_->AddRoute(std::move(route));
}

MetricsHttpServer::Counters MetricsHttpServer::counters() const {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mu_));
  Counters c = counters_;
  c.encodes = builder_.encodes();
  return c;
}

HttpResponse MetricsHttpServer::HandleMetrics(const HttpRequest& req) {
  const ExpositionFormat format = NegotiateFormat(req.accept);
  const bool gzip = AcceptsGzip(req.accept_encoding);
  const auto started = std::chrono::steady_clock::now();
  StatusOr<SnapshotPtr> snap = source_->Get(options_.max_age);
  StatusOr<ExpositionBuilder::Body> body = snap.ok() ? builder_.Build(*snap, source_->stats(), format, gzip)
                                                     : StatusOr<ExpositionBuilder::Body>(snap.status());
  if (self_) {
    self_->ObserveScrape(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), !snap.ok());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.scrapes;
    if (!body.ok()) ++counters_.failed_scrapes;
  }
  if (!body.ok()) {
    log::Once(log::Level::kWarn, "scrape:" + body.status().message(), "scrape failed: " + body.status().ToString());
    return HttpResponse::Text(503, "collection failed: " + body.status().ToString() + "\n");
  }
  ready_ = true;  // a successful collection, even if the start-up one failed
  HttpResponse r;
  r.content_type = std::string(ContentType(format));
  // The shared head, then this scrape's tail.
  r.pieces = std::move(body->head);
  r.tail = std::move(body->tail);
  if (gzip) r.headers.emplace_back("Content-Encoding", "gzip");
  r.headers.emplace_back("Vary", "Accept-Encoding");
  return r;
}

}  // namespace statlet
