#include "exporters/metrics_http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "exporters/gzip_compressor.h"
#include "tests/support/fixed_snapshot_source.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/wait_for.h"

namespace statlet {
namespace {

struct Served {
  testing::FixedSnapshotSource source{testing::MakeNodeSnapshot({})};
  std::unique_ptr<MetricsHttpServer> server;
  std::unique_ptr<httplib::Client> client;

  explicit Served(HttpServerOptions o = {}) {
    o.listen_address = "127.0.0.1:0";
    auto s = MetricsHttpServer::Create(o, {}, &source);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    server = std::move(*s);
    EXPECT_TRUE(server->Start().ok());
    client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
    client->set_decompress(false);
  }
};

TEST(MetricsHttpServer, ServesTextThenReusesTheEncodedSnapshot) {
  Served s;
  auto r = s.client->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_FALSE(r->has_header("Content-Encoding"));
  EXPECT_NE(r->body.find("# TYPE container_cpu_usage_seconds_total counter\n"), std::string::npos);
  EXPECT_EQ(std::to_string(r->body.size()), r->get_header_value("Content-Length"));
  auto again = s.client->Get("/metrics");
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->body == r->body);
  EXPECT_EQ(s.server->counters().encodes, 1u) << "same snapshot must not be encoded twice";
  EXPECT_EQ(s.server->counters().scrapes, 2u);
}

TEST(MetricsHttpServer, NegotiatesOpenMetricsAndGzip) {
  Served s;
  auto plain = s.client->Get("/metrics", {{"Accept", "application/openmetrics-text;version=1.0.0"}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->get_header_value("Content-Type"), "application/openmetrics-text; version=1.0.0; charset=utf-8");
  ASSERT_GT(plain->body.size(), 6u);
  EXPECT_EQ(plain->body.substr(plain->body.size() - 6), "# EOF\n");
  auto gz = s.client->Get("/metrics",
                          {{"Accept", "application/openmetrics-text;version=1.0.0"}, {"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gz);
  EXPECT_EQ(gz->get_header_value("Content-Encoding"), "gzip");
  EXPECT_LT(gz->body.size(), plain->body.size() / 4);
  auto inflated = GunzipForTest(gz->body);
  ASSERT_TRUE(inflated.ok());
  EXPECT_TRUE(*inflated == plain->body) << "gzip body differs from the plain one";
}

// The served head is the encoder's rope of kept segments, re-rendered only where the snapshot
// changed, sent as gathered pieces: across snapshots whose values, cgroups and labels change,
// every body (plain and gzip, text and OpenMetrics) begins with a fresh encoder's text of
// that snapshot, and its gzip inflates to the plain body.
TEST(MetricsHttpServer, BodiesAcrossChangingSnapshotsAreAFreshEncodersText) {
  Served s;
  Snapshot snap = testing::MakeNodeSnapshot({.pods = 6, .containers_per_pod = 2});
  for (int step = 0; step < 6; ++step) {
    snap.sequence++;
    for (size_t i = 0; i < snap.cgroups.size(); i += 3) *snap.cgroups[i].cpu.usage_ns += 1000 * (step + 1);
    if (step == 2) snap.cgroups.erase(snap.cgroups.begin() + 5);  // a container goes
    if (step == 4 && snap.cgroups[7].id.meta) {                   // one is relabelled
      auto m = std::make_shared<ContainerMetadata>(*snap.cgroups[7].id.meta);
      m->image = "registry.example/app:9";
      snap.cgroups[7].id.meta = m;
    }
    s.source.Set(snap);
    for (ExpositionFormat f : {ExpositionFormat::kText004, ExpositionFormat::kOpenMetrics100}) {
      const char* accept =
          f == ExpositionFormat::kText004 ? "text/plain" : "application/openmetrics-text;version=1.0.0";
      PrometheusEncoder fresh;
      std::string want;
      fresh.Encode(snap, f, &want);
      auto plain = s.client->Get("/metrics", {{"Accept", accept}});
      auto gz = s.client->Get("/metrics", {{"Accept", accept}, {"Accept-Encoding", "gzip"}});
      ASSERT_TRUE(plain && gz);
      ASSERT_GE(plain->body.size(), want.size());
      EXPECT_TRUE(plain->body.compare(0, want.size(), want) == 0) << "step " << step << " " << accept;
      EXPECT_EQ(std::to_string(plain->body.size()), plain->get_header_value("Content-Length"));
      auto inflated = GunzipForTest(gz->body);
      ASSERT_TRUE(inflated.ok());
      // What follows the head is each scrape's own (self metrics, the OpenMetrics end).
      EXPECT_TRUE(inflated->compare(0, want.size(), want) == 0) << "step " << step << " " << accept;
    }
  }
}

// kube-prometheus selects cAdvisor's series by metrics_path="/metrics/cadvisor": that path
// answers what /metrics does, with the same negotiation, compression and authorization.
TEST(MetricsHttpServer, CadvisorPathServesTheMetricsBody) {
  auto web = ParseWebConfig("basic_auth_users:\n  prom: \"" + std::string([] {
                              char salt[64];
                              crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt);
                              crypt_data d{};
                              return std::string(crypt_r("pw", salt, &d));
                            }()) +
                            "\"\n");
  ASSERT_TRUE(web.ok()) << web.status().ToString();
  HttpServerOptions o;
  o.web = *web;
  Served s(o);
  auto denied = s.client->Get("/metrics/cadvisor");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  s.client->set_basic_auth("prom", "pw");
  for (const char* accept : {"text/plain", "application/openmetrics-text;version=1.0.0"}) {
    auto metrics = s.client->Get("/metrics", {{"Accept", accept}, {"Accept-Encoding", "gzip"}});
    auto cadvisor = s.client->Get("/metrics/cadvisor", {{"Accept", accept}, {"Accept-Encoding", "gzip"}});
    ASSERT_TRUE(metrics && cadvisor);
    EXPECT_EQ(cadvisor->status, 200);
    EXPECT_EQ(cadvisor->get_header_value("Content-Type"), metrics->get_header_value("Content-Type")) << accept;
    EXPECT_EQ(cadvisor->get_header_value("Content-Encoding"), "gzip") << accept;
    auto a = GunzipForTest(metrics->body), b = GunzipForTest(cadvisor->body);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(*a == *b) << accept << ": /metrics/cadvisor differs from /metrics";
    EXPECT_NE(b->find("container_cpu_usage_seconds_total"), std::string::npos);
  }
  EXPECT_EQ(s.server->counters().encodes, 2u) << "one snapshot, encoded once per format for both paths";
}

TEST(MetricsHttpServer, HealthReadinessAndErrors) {
  Served s;
  EXPECT_EQ(s.client->Get("/healthz")->status, 200);
  EXPECT_EQ(s.client->Get("/readyz")->status, 503);
  s.server->SetReady(true);
  EXPECT_EQ(s.client->Get("/readyz")->status, 200);
  EXPECT_EQ(s.client->Get("/nope")->status, 404);
  EXPECT_NE(s.client->Get("/")->body.find("href=\"/metrics\""), std::string::npos);
  s.source.Fail(Unavailable("cgroupfs is gone"));
  auto r = s.client->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("cgroupfs is gone"), std::string::npos);
  EXPECT_EQ(s.server->counters().failed_scrapes, 1u);
}

TEST(MetricsHttpServer, RequestSizeCapAndKeepAlive) {
  HttpServerOptions o;
  o.max_request_bytes = 1024;
  Served s(o);
  s.client->set_keep_alive(true);
  for (int i = 0; i < 3; ++i) {
    auto r = s.client->Get("/healthz");
    ASSERT_TRUE(r);
    EXPECT_NE(r->get_header_value("Connection"), "close");
  }
  auto big = s.client->Post("/metrics", std::string(4096, 'x'), "text/plain");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
}

TEST(MetricsHttpServer, BasicAuthFromWebConfig) {
  HttpServerOptions o;
  auto web = ParseWebConfig("basic_auth_users:\n  prom: \"" +
                            std::string(
                                // bcrypt of "pw" with cost 4, made with crypt(3)
                                [] {
                                  char salt[64];
                                  crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt);
                                  crypt_data d{};
                                  return std::string(crypt_r("pw", salt, &d));
                                }()) +
                            "\"\n");
  ASSERT_TRUE(web.ok()) << web.status().ToString();
  o.web = *web;
  Served s(o);
  auto denied = s.client->Get("/metrics");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(s.source.gets(), 0) << "no collection for an unauthorised scrape";
  s.client->set_basic_auth("prom", "pw");
  EXPECT_EQ(s.client->Get("/metrics")->status, 200);
  s.client->set_basic_auth("prom", "nope");
  EXPECT_EQ(s.client->Get("/metrics")->status, 401);
}

// An authorizer of the test's own: "Bearer yes" and "Bearer no" are remembered verdicts,
// "Bearer later" is checked on a thread of its own, "Bearer busy" cannot be queued.
class TestAuthorizer : public HttpAuthorizer {
 public:
  std::optional<AuthVerdict> Remembered(const Request& r) override {
    if (r.authorization == "Bearer yes") return AuthVerdict::Allow();
    if (r.authorization == "Bearer later" || r.authorization == "Bearer busy") return std::nullopt;
    return AuthVerdict{401, "Unauthorized", {{"WWW-Authenticate", "Bearer"}}};
  }
  void Check(const Request& r, std::function<void(AuthVerdict)> done) override {
    ++checks;
    if (r.authorization == "Bearer busy") {
      done({429, "busy", {}});
      return;
    }
    std::thread([done = std::move(done), path = r.path] {
      done(path == "/metrics" ? AuthVerdict::Allow() : AuthVerdict{403, "Forbidden", {}});
    }).detach();
  }
  std::atomic<int> checks{0};
};

TEST(MetricsHttpServer, AnAuthorizerGuardsTheMainAddress) {
  HttpServerOptions o;
  auto authorizer = std::make_shared<TestAuthorizer>();
  o.authorizer = authorizer;
  o.health_listen_address = "127.0.0.1:0";
  Served s(o);
  auto with = [&](const std::string& token, const std::string& path = "/metrics") {
    return s.client->Get(path, {{"Authorization", "Bearer " + token}})->status;
  };
  EXPECT_EQ(s.client->Get("/metrics")->status, 401);
  EXPECT_EQ(with("no"), 401);
  EXPECT_EQ(s.source.gets(), 0) << "no collection for an unauthorised scrape";
  EXPECT_EQ(with("yes"), 200);
  EXPECT_EQ(with("later"), 200);
  EXPECT_EQ(with("later", "/"), 403);
  EXPECT_EQ(with("busy"), 429);
  EXPECT_EQ(authorizer->checks, 3);
  httplib::Client probe("127.0.0.1", s.server->health_port());
  EXPECT_EQ(probe.Get("/healthz")->status, 200) << "the probe address is not guarded";
  // Basic auth users and another authorizer at once: refused, not one silently ignored.
  auto web =
      ParseWebConfig("basic_auth_users:\n  prom: \"$2b$04$abcdefghijklmnopqrstuuJ0W7vhzO0V5o7nM7Vw2c7Yv3P0nRk3W\"\n");
  ASSERT_TRUE(web.ok());
  o.web = *web;
  o.listen_address = "127.0.0.1:0";
  testing::FixedSnapshotSource source(testing::MakeNodeSnapshot({}));
  EXPECT_FALSE(MetricsHttpServer::Create(o, {}, &source).ok());
}

TEST(MetricsHttpServer, HeadAnswersTheLengthWithoutTheBody) {
  Served s;
  auto get = s.client->Get("/metrics");
  auto head = s.client->Head("/metrics");
  ASSERT_TRUE(get && head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  EXPECT_EQ(head->get_header_value("Content-Length"), std::to_string(get->body.size()));
}

TEST(MetricsHttpServer, OtherMethodsAndPathsAreRefused) {
  Served s;
  auto post = s.client->Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  EXPECT_EQ(post->get_header_value("Connection"), "close");
  auto missing = s.client->Get("/metrics/../etc/passwd");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST(MetricsHttpServer, ProbeAddressServesHealthWithoutAuthAndNothingElse) {
  HttpServerOptions o;
  o.health_listen_address = "127.0.0.1:0";
  auto web =
      ParseWebConfig("basic_auth_users:\n  prom: \"$2b$04$abcdefghijklmnopqrstuuJ0W7vhzO0V5o7nM7Vw2c7Yv3P0nRk3W\"\n");
  ASSERT_TRUE(web.ok());
  o.web = *web;
  Served s(o);
  ASSERT_GT(s.server->health_port(), 0);
  EXPECT_EQ(s.client->Get("/healthz")->status, 401) << "the main address keeps auth";
  httplib::Client probe("127.0.0.1", s.server->health_port());
  EXPECT_EQ(probe.Get("/healthz")->status, 200);
  EXPECT_EQ(probe.Get("/readyz")->status, 503);
  EXPECT_EQ(probe.Get("/metrics")->status, 404) << "metrics are not served without auth";
  EXPECT_EQ(s.source.gets(), 0);
}

TEST(MetricsHttpServer, ConnectionsPerAddressAreCapped) {
  HttpServerOptions o;
  o.max_connections_per_address = 2;
  Served s(o);
  std::vector<int> held;
  for (int i = 0; i < 2; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(s.server->port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    held.push_back(fd);
  }
  // The server counts a connection once it accepted it: the third is refused (polled with a
  // deadline until the server has accepted the two).
  const bool refused = testing::WaitFor(
      [&] {
        auto r = s.client->Get("/healthz");
        return r && r->status == 503;
      },
      std::chrono::milliseconds(10000));
  EXPECT_TRUE(refused) << "a third connection from one address was served";
  for (int fd : held) ::close(fd);
  const bool served = testing::WaitFor(
      [&] {
        auto r = s.client->Get("/healthz");
        return r && r->status == 200;
      },
      std::chrono::milliseconds(10000));
  EXPECT_TRUE(served) << "closed connections still count";
}

// A stream that never has anything to send (a pod without pulls); counts its closes.
class SilentStream final : public ByteStream {
 public:
  explicit SilentStream(std::atomic<int>* closed) : closed_(closed) {}
  bool Take(std::string*, std::function<void()>) override { return true; }
  void Close() override { closed_->fetch_add(1); }

 private:
  std::atomic<int>* closed_;
};

int ConnectLoopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends a GET of `path` on `fd` and reads up to the end of the answer's header (blocking,
// with the socket's own receive timeout as the deadline).
std::string RequestHead(int fd, const std::string& path) {
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return "";
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) head.push_back(c);
  return head;
}

TEST(MetricsHttpServer, OneAddressHoldsAtMostItsStreamsAndKeepsPlacesForItsOtherRequests) {
  HttpServerOptions o;
  o.listen_address = "127.0.0.1:0";
  o.max_connections_per_address = 4;
  o.max_streams_per_address = 2;
  testing::FixedSnapshotSource source{testing::MakeNodeSnapshot({})};
  auto created = MetricsHttpServer::Create(o, {}, &source);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::unique_ptr<MetricsHttpServer> server = std::move(*created);
  std::atomic<int> closed{0};
  server->AddStreamRoute("/s/", [&](const std::string&) {
    MetricsHttpServer::StreamAnswer a;
    a.content_type = "application/x-ndjson";
    a.stream = std::make_shared<SilentStream>(&closed);
    return a;
  });
  ASSERT_TRUE(server->Start().ok());
  std::vector<int> streams;
  for (int i = 0; i < 2; ++i) {
    int fd = ConnectLoopback(server->port());
    ASSERT_GE(fd, 0);
    EXPECT_EQ(RequestHead(fd, "/s/x").rfind("HTTP/1.1 200", 0), 0u) << "stream " << i;
    streams.push_back(fd);
  }
  int third = ConnectLoopback(server->port());
  ASSERT_GE(third, 0);
  const std::string refused = RequestHead(third, "/s/x");
  EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << "a stream past the address's streams: " << refused;
  EXPECT_EQ(closed.load(), 1) << "the refused stream is closed (its producer's place freed)";
  ::close(third);
  // Two connections at once besides the streams: the places the streams leave, once the
  // server has seen the refused one (and a failed try's own) close: polled with a deadline,
  // not a count of tries, which a slow server can see pass before it saw one close.
  const bool both = testing::WaitFor(
      [&] {
        int a = ConnectLoopback(server->port()), b = ConnectLoopback(server->port());
        const bool ok = a >= 0 && b >= 0 && RequestHead(a, "/healthz").rfind("HTTP/1.1 200", 0) == 0 &&
                        RequestHead(b, "/healthz").rfind("HTTP/1.1 200", 0) == 0;
        if (a >= 0) ::close(a);
        if (b >= 0) ::close(b);
        return ok;
      },
      std::chrono::milliseconds(10000));
  EXPECT_TRUE(both) << "the address's streams left no two places for its other requests";
  // A stream that ends gives its place back.
  ::close(streams.back());
  streams.pop_back();
  const bool served = testing::WaitFor(
      [&] {
        int fd = ConnectLoopback(server->port());
        const bool ok = fd >= 0 && RequestHead(fd, "/s/x").rfind("HTTP/1.1 200", 0) == 0;
        if (ok) streams.push_back(fd);
        else if (fd >= 0) ::close(fd);
        return ok;
      },
      std::chrono::milliseconds(10000));
  EXPECT_TRUE(served) << "a closed stream still counts";
  for (int fd : streams) ::close(fd);
  server->Stop();
}

TEST(MetricsHttpServer, StreamsPerAddressMustLeavePlacesForOtherRequests) {
  testing::FixedSnapshotSource source{testing::MakeNodeSnapshot({})};
  HttpServerOptions o;
  o.listen_address = "127.0.0.1:0";
  o.max_connections_per_address = 64;
  o.max_streams_per_address = 64;
  auto s = MetricsHttpServer::Create(o, {}, &source);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("below the connections per address"), std::string::npos) << s.status().message();
  o.max_streams_per_address = 0;
  EXPECT_TRUE(MetricsHttpServer::Create(o, {}, &source).ok()) << "0: the default, three quarters";
  EXPECT_EQ(StreamsPerAddress(o), 48u);
  o.max_connections_per_address = 2;
  EXPECT_EQ(StreamsPerAddress(o), 1u);
  o.max_connections_per_address = 1;
  EXPECT_EQ(StreamsPerAddress(o), 0u) << "one connection per address leaves no place for a stream";
}

TEST(MetricsHttpServer, ServesTlsFromWebConfig) {
  char dir[] = "/tmp/statlet-tls-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string d = dir;
  std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -keyout " + d +
                    "/key.pem -out " + d + "/cert.pem >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  HttpServerOptions o;
  auto web = ParseWebConfig("tls_server_config:\n  cert_file: " + d + "/cert.pem\n  key_file: " + d + "/key.pem\n");
  ASSERT_TRUE(web.ok());
  o.web = *web;
  o.listen_address = "127.0.0.1:0";
  testing::FixedSnapshotSource source(testing::MakeNodeSnapshot({}));
  auto server = MetricsHttpServer::Create(o, {}, &source);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->Start().ok());
  httplib::SSLClient tls("127.0.0.1", (*server)->port());
  tls.set_ca_cert_path((d + "/cert.pem").c_str());
  tls.enable_server_certificate_verification(true);
  auto r = tls.Get("/metrics");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  httplib::Client plain("127.0.0.1", (*server)->port());
  EXPECT_FALSE(plain.Get("/metrics")) << "plain HTTP must not be served on a TLS port";
  (*server)->Stop();
  std::system(("rm -rf " + d).c_str());

  // Bad key material is a clear error at startup, not at the first scrape.
  o.web.key_file = "/nonexistent.pem";
  auto bad = MetricsHttpServer::Create(o, {}, &source);
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace statlet
