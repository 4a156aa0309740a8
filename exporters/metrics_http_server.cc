#include "exporters/metrics_http_server.h"

#include <httplib.h>

#include <algorithm>

#include "base/log.h"
#include "exporters/content_negotiation.h"

namespace statlet {
namespace {

constexpr size_t kMaxVerifiedAuth = 64;

}  // namespace

Status ParseListenAddress(const std::string& address, std::string* host, int* port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return InvalidArgument("listen address " + address + ": expected host:port");
  std::string h = address.substr(0, colon);
  std::string p = address.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) h = "0.0.0.0";
  char* end = nullptr;
  long v = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || v < 0 || v > 65535) {
    return InvalidArgument("listen address " + address + ": bad port");
  }
  *host = h;
  *port = static_cast<int>(v);
  return Status::Ok();
}

MetricsHttpServer::MetricsHttpServer(HttpServerOptions options, metrics::SampleRules rules, SnapshotSource* source,
                                     SelfMetrics* self)
    : options_(std::move(options)),
      source_(source),
      self_(self),
      builder_(std::move(rules), self, options_.gzip_level) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Create(HttpServerOptions options,
                                                                       metrics::SampleRules rules,
                                                                       SnapshotSource* source, SelfMetrics* self) {
  if (source == nullptr) return InvalidArgument("no snapshot source");
  if (options.telemetry_path.empty() || options.telemetry_path[0] != '/') {
    return InvalidArgument("telemetry path must start with '/': " + options.telemetry_path);
  }
  if (options.gzip_level < 1 || options.gzip_level > 9) return InvalidArgument("gzip level must be 1..9");
  std::string host;
  int port = 0;
  if (Status s = ParseListenAddress(options.listen_address, &host, &port); !s.ok()) return s;
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(std::move(options), std::move(rules), source, self));
  return FinishCreate(std::move(server), host, port);
}

StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::FinishCreate(std::unique_ptr<MetricsHttpServer> self,
                                                                             const std::string& host, int port) {
  self->host_ = host;
  self->port_ = port;
  const WebConfig& web = self->options_.web;
  if (web.tls()) {
    auto ssl = std::make_unique<httplib::SSLServer>(
        web.cert_file.c_str(), web.key_file.c_str(),
        web.client_ca_file.empty() ? nullptr : web.client_ca_file.c_str());
    if (!ssl->is_valid()) {
      return InvalidArgument("TLS setup failed: check cert_file " + web.cert_file + ", key_file " + web.key_file +
                             (web.client_ca_file.empty() ? "" : ", client_ca_file " + web.client_ca_file));
    }
    self->server_ = std::move(ssl);
  } else {
    self->server_ = std::make_unique<httplib::Server>();
  }
  httplib::Server& svr = *self->server_;
  const HttpServerOptions& o = self->options_;
  svr.set_read_timeout(o.read_timeout.count(), 0);
  svr.set_write_timeout(o.write_timeout.count(), 0);
  svr.set_keep_alive_timeout(o.keep_alive_timeout.count());
  svr.set_keep_alive_max_count(o.keep_alive_max_requests);
  svr.set_payload_max_length(o.max_request_bytes);
  const size_t threads = std::max<size_t>(1, o.threads);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  if (!web.headers.empty()) {
    httplib::Headers headers;
    for (const auto& [k, v] : web.headers) headers.emplace(k, v);
    svr.set_default_headers(headers);
  }

  MetricsHttpServer* s = self.get();
  svr.Get(o.telemetry_path, [s](const httplib::Request& req, httplib::Response& res) { s->HandleMetrics(req, res); });
  svr.Get("/healthz", [s](const httplib::Request& req, httplib::Response& res) {
    if (!s->Authorized(req, res)) return;
    res.set_content("ok\n", "text/plain; charset=utf-8");
  });
  svr.Get("/readyz", [s](const httplib::Request& req, httplib::Response& res) {
    if (!s->Authorized(req, res)) return;
    if (s->ready_) {
      res.set_content("ready\n", "text/plain; charset=utf-8");
    } else {
      res.status = 503;
      res.set_content("not ready: no collection has completed yet\n", "text/plain; charset=utf-8");
    }
  });
  svr.Get("/", [s](const httplib::Request& req, httplib::Response& res) {
    if (!s->Authorized(req, res)) return;
    const std::string& path = s->options_.telemetry_path;
    res.set_content("<html><head><title>statlet</title></head><body><h1>statlet</h1><p><a href=\"" + path +
                        "\">Metrics</a></p><p><a href=\"/healthz\">Health</a> <a href=\"/readyz\">Ready</a></p>"
                        "</body></html>\n",
                    "text/html; charset=utf-8");
  });
  return self;
}

Status MetricsHttpServer::Start() {
  if (running_) return Status::Ok();
  if (port_ == 0) {
    int bound = server_->bind_to_any_port(host_.c_str());
    if (bound <= 0) return Unavailable("cannot bind " + host_ + ":0");
    port_ = bound;
  } else if (!server_->bind_to_port(host_.c_str(), port_)) {
    return Unavailable("cannot bind " + options_.listen_address + " (address in use or not permitted)");
  }
  running_ = true;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  log::Info("serving " + std::string(options_.web.tls() ? "https" : "http") + " on " + host_ + ":" +
            std::to_string(port_) + options_.telemetry_path);
  return Status::Ok();
}

void MetricsHttpServer::Stop() {
  if (!running_.exchange(false)) return;
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

MetricsHttpServer::Counters MetricsHttpServer::counters() const {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mu_));
  Counters c = counters_;
  c.encodes = builder_.encodes();
  return c;
}

bool MetricsHttpServer::Authorized(const httplib::Request& req, httplib::Response& res) {
  const WebConfig& web = options_.web;
  if (web.basic_auth_users.empty()) return true;
  const std::string& header = req.get_header_value("Authorization");
  {
    std::lock_guard<std::mutex> lock(auth_mu_);
    if (std::find(verified_auth_.begin(), verified_auth_.end(), header) != verified_auth_.end()) return true;
  }
  if (!header.empty() && CheckBasicAuth(web, header)) {
    std::lock_guard<std::mutex> lock(auth_mu_);
    if (verified_auth_.size() >= kMaxVerifiedAuth) verified_auth_.erase(verified_auth_.begin());
    verified_auth_.push_back(header);
    return true;
  }
  res.status = 401;
  res.set_header("WWW-Authenticate", "Basic realm=\"statlet\"");
  res.set_content("Unauthorized\n", "text/plain; charset=utf-8");
  return false;
}

void MetricsHttpServer::AddRoute(const std::string& path, std::function<RouteBody()> handler) {
  server_->Get(path, [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    if (!Authorized(req, res)) return;
    RouteBody b = handler();
    res.status = b.status;
    res.set_content(std::move(b.body), b.content_type.c_str());
  });
}

void MetricsHttpServer::HandleMetrics(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res)) return;
  const ExpositionFormat format = NegotiateFormat(req.get_header_value("Accept"));
  const bool gzip = AcceptsGzip(req.get_header_value("Accept-Encoding"));
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
    res.status = 503;
    res.set_content("collection failed: " + body.status().ToString() + "\n", "text/plain; charset=utf-8");
    return;
  }
  ready_ = true;  // a successful collection, even if the start-up one failed
  auto bytes = std::make_shared<const ExpositionBuilder::Body>(std::move(*body));
  if (gzip) res.set_header("Content-Encoding", "gzip");
  res.set_header("Vary", "Accept-Encoding");
  const size_t size = bytes->size();
  res.set_content_provider(size, std::string(ContentType(format)).c_str(),
                           [bytes](size_t offset, size_t length, httplib::DataSink& sink) {
                             // The shared head, then this scrape's tail.
                             const std::string& head = *bytes->head;
                             if (offset < head.size()) {
                               return sink.write(head.data() + offset, std::min(length, head.size() - offset));
                             }
                             const size_t at = offset - head.size();
                             return sink.write(bytes->tail.data() + at, std::min(length, bytes->tail.size() - at));
                           });
}

}  // namespace statlet
