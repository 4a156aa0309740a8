// --web.auth=kubernetes against an HTTPS stand-in of the API server that answers
// TokenReview and SubjectAccessReview per the API's JSON (apiserver_review_stub.py; no API
// server runs on these machines): kube-prometheus' Prometheus token scrapes, other tokens
// are refused as the kubelet refuses them, answers are remembered for their TTLs, a down
// API server fails closed with a clear log, and a flood of bad tokens neither floods the
// API server nor slows a good scraper.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/reliability/container_tree.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/sample_quantiles.h"
#include "tests/support/statlet_daemon.h"
#include "tests/support/wait_for.h"

#ifndef STATLET_REVIEW_STUB
#error "STATLET_REVIEW_STUB must name tests/reliability/apiserver_review_stub.py"
#endif

namespace statlet::testing {
namespace {

using testing::Median;

using nlohmann::json;
using std::chrono::seconds;

constexpr char kPrometheusUser[] = "system:serviceaccount:monitoring:prometheus-k8s";
constexpr char kNode[] = "node-a";

// The stand-in in a scratch directory: its certificate, the token statlet sends, the
// tokens that authenticate and what their users may do.
class ApiServerStandIn {
 public:
  explicit ApiServerStandIn(int delay_ms = 2) {
    char dir[] = "/tmp/statlet-apiserver-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return;
    dir_ = dir;
    ok_ = RunCommand({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir_ + "/api.key", "-out",
                      dir_ + "/api.crt", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                      "subjectAltName=IP:127.0.0.1"}) == 0;
    std::ofstream(dir_ + "/statlet-token") << "statlet-service-account-token\n";
    // kube-prometheus' Prometheus (its ClusterRole prometheus-k8s grants get on
    // nodes/metrics), a second token of the same account, and an account without rights.
    const json groups = {"system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"};
    json config = {
        {"caller_token", "statlet-service-account-token"},
        {"tokens",
         {{"prometheus-token", {{"username", kPrometheusUser}, {"uid", "uid-1"}, {"groups", groups}}},
          {"prometheus-token-2", {{"username", kPrometheusUser}, {"uid", "uid-1"}, {"groups", groups}}},
          {"default-token",
           {{"username", "system:serviceaccount:default:default"},
            {"uid", "uid-2"},
            {"groups", {"system:serviceaccounts", "system:authenticated"}}}}}},
        {"rules",
         {{{"users", {kPrometheusUser}}, {"verbs", {"get"}}, {"resource", "nodes"}, {"subresource", "metrics"}}}},
        {"delay_ms", delay_ms}};
    std::ofstream(dir_ + "/config.json") << config.dump();
  }
  ~ApiServerStandIn() {
    Stop();
    for (const char* f : {"api.key", "api.crt", "statlet-token", "config.json", "requests.log", "port", "stub.log"}) {
      ::unlink((dir_ + "/" + f).c_str());
    }
    ::rmdir(dir_.c_str());
  }

  // Serves on `port` (0: a free one) until Stop.
  bool Start(int port = 0) {
    if (!ok_) return false;
    ::unlink((dir_ + "/port").c_str());
    process_ = std::make_unique<BinaryProcess>(
        std::vector<std::string>{"/usr/bin/python3", STATLET_REVIEW_STUB, dir_ + "/config.json", dir_ + "/api.crt",
                                 dir_ + "/api.key", dir_ + "/requests.log", dir_ + "/port", std::to_string(port)},
        dir_ + "/stub.log");
    return WaitFor(
               [&] {
                 std::ifstream in(dir_ + "/port");
                 return static_cast<bool>(in >> port_) || !process_->running();
               },
               seconds(20)) &&
           process_->running();
  }
  void Stop() {
    if (process_) process_->Stop(std::chrono::seconds(5));
    process_.reset();
  }

  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> Flags() const {
    return {"--web.auth=kubernetes", "--web.auth.apiserver=" + url(), "--web.auth.ca-file=" + dir_ + "/api.crt",
            "--web.auth.token-file=" + dir_ + "/statlet-token", std::string("--web.auth.node-name=") + kNode};
  }
  std::vector<json> Requests() const {
    std::vector<json> out;
    std::ifstream in(dir_ + "/requests.log");
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }
  // Reviews of `kind` received, of `token` (TokenReview) or of any.
  int Count(const std::string& kind, const std::string& token = "") const {
    int n = 0;
    for (const json& r : Requests()) {
      if (r["kind"] != kind) continue;
      if (!token.empty() && (!r["spec"].is_object() || r["spec"].value("token", "") != token)) continue;
      ++n;
    }
    return n;
  }
  std::string log() const { return ReadWholeFile(dir_ + "/stub.log"); }

 private:
  std::string dir_;
  bool ok_ = false;
  int port_ = 0;
  std::unique_ptr<BinaryProcess> process_;
};

std::string Bearer(const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; }

int StatusOf(int port, const std::string& extra, const std::string& path = "/metrics") {
  TimedResponse r = TimedGet(port, path, extra, Millis(5000));
  return r.response ? r.response->status : 0;
}

TEST(HttpKubeAuth, KubePrometheusTokenScrapesOthersAreRefusedAsByTheKubelet) {
  ApiServerStandIn api;
  ASSERT_TRUE(api.Start()) << api.log();
  const int probe_port = FreeLoopbackPort();
  DaemonOptions o{.flags = api.Flags()};
  o.flags.push_back("--web.health-listen-address=127.0.0.1:" + std::to_string(probe_port));
  Daemon d(o);
  ASSERT_TRUE(d.ok()) << d.error();

  TimedResponse none = TimedGet(d.port(), "/metrics");
  ASSERT_TRUE(none.response.has_value());
  EXPECT_EQ(none.response->status, 401) << "a request without a token";
  EXPECT_EQ(none.response->header("www-authenticate").rfind("Bearer", 0), 0u);
  EXPECT_EQ(api.Requests().size(), 0u) << "a request without a token was reviewed";

  TimedResponse good = TimedGet(d.port(), "/metrics", Bearer("prometheus-token"));
  ASSERT_TRUE(good.response.has_value());
  EXPECT_EQ(good.response->status, 200);
  EXPECT_NE(good.response->body.find("statlet_build_info"), std::string::npos);

  TimedResponse forbidden = TimedGet(d.port(), "/metrics", Bearer("default-token"));
  ASSERT_TRUE(forbidden.response.has_value());
  EXPECT_EQ(forbidden.response->status, 403);
  EXPECT_EQ(forbidden.response->body,
            "Forbidden (user=system:serviceaccount:default:default, verb=get, resource=nodes, "
            "subresource(s)=[metrics])\n");
  EXPECT_EQ(StatusOf(d.port(), Bearer("no-such-token")), 401);
  // As the kubelet: HEAD maps to no verb, and paths outside /metrics to nodes/proxy, which
  // kube-prometheus' role does not grant.
  TcpConnection head(d.port());
  ASSERT_TRUE(head.Send("HEAD /metrics HTTP/1.1\r\nHost: x\r\n" + Bearer("prometheus-token") + "\r\n"));
  auto head_answer = head.ReadResponse(Millis(5000), /*head=*/true);
  ASSERT_TRUE(head_answer.has_value());
  EXPECT_EQ(head_answer->status, 403);
  EXPECT_EQ(StatusOf(d.port(), Bearer("prometheus-token"), "/"), 403);
  // The probe address answers without a token.
  EXPECT_EQ(StatusOf(probe_port, "", "/healthz"), 200);

  // What reached the API server: valid reviews, the kubelet's attributes for this node.
  bool metrics_review = false;
  for (const json& r : api.Requests()) {
    EXPECT_TRUE(r["ok"].get<bool>()) << r.dump();
    if (r["kind"] != "SubjectAccessReview" || r["spec"]["user"] != kPrometheusUser) continue;
    if (r["spec"]["resourceAttributes"] ==
        json{{"verb", "get"}, {"version", "v1"}, {"resource", "nodes"}, {"subresource", "metrics"}, {"name", kNode}}) {
      metrics_review = true;
      EXPECT_EQ(r["spec"]["uid"], "uid-1");
      EXPECT_EQ(r["spec"]["groups"].size(), 3u);
    }
  }
  EXPECT_TRUE(metrics_review) << "no SubjectAccessReview for get nodes/" << kNode << "/metrics";
  EXPECT_EQ(api.Count("TokenReview", "prometheus-token"), 1) << "one token, one review";
}

TEST(HttpKubeAuth, AnswersAreRememberedForTheirTtl) {
  ApiServerStandIn api;
  ASSERT_TRUE(api.Start()) << api.log();
  DaemonOptions o{.flags = api.Flags()};
  o.flags.push_back("--web.auth.token-cache-ttl=2s");
  Daemon d(o);
  ASSERT_TRUE(d.ok()) << d.error();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(StatusOf(d.port(), Bearer("prometheus-token")), 200);
    EXPECT_EQ(StatusOf(d.port(), Bearer("default-token")), 403);
    EXPECT_EQ(StatusOf(d.port(), Bearer("no-such-token")), 401);
  }
  const int token_reviews = api.Count("TokenReview"), access_reviews = api.Count("SubjectAccessReview");
  std::printf("figure: 60 requests with 3 tokens: %d TokenReviews, %d SubjectAccessReviews sent\n", token_reviews,
              access_reviews);
  EXPECT_EQ(token_reviews, 3);
  EXPECT_EQ(access_reviews, 2);
  // The token's answer expires after 2 s: then it is reviewed once more; the access review
  // (5 minutes) is not repeated.
  ASSERT_TRUE(WaitFor(
      [&] {
        EXPECT_EQ(StatusOf(d.port(), Bearer("prometheus-token")), 200);
        return api.Count("TokenReview", "prometheus-token") >= 2;
      },
      seconds(10)));
  std::vector<double> times;
  for (const json& r : api.Requests()) {
    if (r["kind"] == "TokenReview" && r["spec"]["token"] == "prometheus-token") times.push_back(r["t"]);
  }
  ASSERT_EQ(times.size(), 2u);
  std::printf("figure: the token was reviewed again %.2f s after its first review (TTL 2 s)\n", times[1] - times[0]);
  EXPECT_GE(times[1] - times[0], 2.0 - 0.05) << "reviewed again before its TTL";
  EXPECT_EQ(api.Count("SubjectAccessReview"), 2);
}

TEST(HttpKubeAuth, FailsClosedWithAClearLogWhenTheApiServerIsDown) {
  ApiServerStandIn api;
  ASSERT_TRUE(api.Start()) << api.log();
  Daemon d({.flags = api.Flags()});
  ASSERT_TRUE(d.ok()) << d.error();
  EXPECT_EQ(StatusOf(d.port(), Bearer("prometheus-token")), 200);
  const int port = api.port();
  api.Stop();
  // A token whose answer is not remembered: refused, never let through.
  TimedResponse down = TimedGet(d.port(), "/metrics", Bearer("default-token"), Millis(10000));
  ASSERT_TRUE(down.response.has_value());
  EXPECT_EQ(down.response->status, 503);
  EXPECT_EQ(StatusOf(d.port(), Bearer("another-token")), 503);
  const std::string log = d.log();
  EXPECT_NE(log.find("a review at the API server " + api.url() + " failed"), std::string::npos) << log;
  EXPECT_NE(log.find("cannot connect"), std::string::npos) << log;
  EXPECT_NE(log.find("refused (503)"), std::string::npos) << log;
  // A remembered verdict holds within its TTL, as the kubelet's does.
  EXPECT_EQ(StatusOf(d.port(), Bearer("prometheus-token")), 200);
  // Back: reviews work again, and the log says so.
  ASSERT_TRUE(api.Start(port)) << api.log();
  EXPECT_EQ(StatusOf(d.port(), Bearer("default-token")), 403);
  EXPECT_NE(d.log().find("answers reviews again"), std::string::npos) << d.log();
}

// Seconds on CLOCK_MONOTONIC, the stand-in's clock (Python's time.monotonic()).
double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 10,000 requests, each with a bad token of its own, from 16 clients as fast as they go,
// while a scraper with a good token keeps scraping 100 containers. Its token's answers
// expire every second, so it is reviewed again during the flood, in the lane of tokens
// that authenticated.
TEST(HttpKubeAuth, BadTokenFloodIsBoundedAndGoodScrapesKeepTheirPace) {
  constexpr int kFlood = 10000, kClients = 16;
  constexpr double kRate = 10;  // --web.auth.reviews-per-second (the default), bursts of 20
  const std::string root = "/statlet-kube-auth-" + std::to_string(::getpid());
  ContainerTree tree(root);
  ASSERT_TRUE(tree.ok()) << tree.error();
  std::vector<std::string> paths;
  ASSERT_TRUE(tree.Add(100, 4, &paths)) << tree.error();
  ApiServerStandIn api;
  ASSERT_TRUE(api.Start()) << api.log();
  DaemonOptions o{.flags = api.Flags(), .cgroup_subtree = root};
  o.flags.push_back("--web.auth.token-cache-ttl=1s");
  o.flags.push_back("--web.auth.allowed-cache-ttl=1s");
  Daemon d(o);
  ASSERT_TRUE(d.ok()) << d.error();

  auto scrape = [&](std::vector<double>* ms, int* failed) {
    TimedResponse r = TimedGet(d.port(), "/metrics", Bearer("prometheus-token"), Millis(5000));
    if (!r.response || r.response->status != 200) ++*failed;
    ms->push_back(r.ms);
  };
  std::vector<double> quiet;
  int quiet_failed = 0;
  for (int i = 0; i < 3; ++i) scrape(&quiet, &quiet_failed);  // warm: the kept cgroup files are open
  quiet.clear();
  for (int i = 0; i < 20; ++i) scrape(&quiet, &quiet_failed);

  std::atomic<int> next{0}, unauthorized{0}, throttled{0}, other{0};
  std::atomic<bool> flooding{true};
  std::vector<double> flooded;
  int flooded_failed = 0;
  const auto start = std::chrono::steady_clock::now();
  const double flood_start = MonotonicSeconds();
  std::thread scraper([&] {
    while (flooding) scrape(&flooded, &flooded_failed);
  });
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i; (i = next++) < kFlood;) {
        TimedResponse r = TimedGet(d.port(), "/metrics", Bearer("bad-token-" + std::to_string(i)), Millis(5000),
                                   "127.0.0." + std::to_string(10 + c));
        const int status = r.response ? r.response->status : 0;
        (status == 401 ? unauthorized : status == 429 ? throttled : other)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  const double flood_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double flood_end = MonotonicSeconds();
  flooding = false;
  scraper.join();

  int bad_reviews = 0, good_reviews = 0;
  for (const json& r : api.Requests()) {
    if (r["kind"] != "TokenReview") continue;
    const std::string token = r["spec"]["token"];
    if (token.rfind("bad-token-", 0) == 0) ++bad_reviews;
    if (token == "prometheus-token" && r["t"] >= flood_start && r["t"] <= flood_end) ++good_reviews;
  }
  const double bound = 2 * kRate + kRate * flood_s + 1;
  std::printf(
      "figure: %d bad-token requests in %.2f s (%d answered 401, %d 429, %d other): %d TokenReviews sent "
      "(budget %.0f); the good token reviewed %d times meanwhile\n",
      kFlood, flood_s, unauthorized.load(), throttled.load(), other.load(), bad_reviews, bound, good_reviews);
  std::printf("figure: good scrape p50 %.2f ms quiet, %.2f ms during the flood (max %.2f ms, %zu scrapes, %d failed)\n",
              Median(quiet), Median(flooded), *std::max_element(flooded.begin(), flooded.end()), flooded.size(),
              flooded_failed);
  EXPECT_EQ(other, 0) << "bad tokens answered with something other than 401 or 429";
  EXPECT_LE(bad_reviews, bound) << "a flood of bad tokens flooded the API server";
  EXPECT_EQ(quiet_failed + flooded_failed, 0) << "the good scraper was refused";
  EXPECT_GE(good_reviews, 1) << "the good token's answers did not expire during the flood: its lane went untested";
  EXPECT_GE(flooded.size(), 5u);
  // The good scraper's requests pass on the event loop from remembered answers, or in
  // their own review lane: what remains is sharing two cores with 16 flooding clients.
  // Under a sanitizer every request of the flood costs several times its CPU, so on two
  // cores the flood's own load, not the reviews, sets the scraper's pace: reported there.
  if (!testing::kSanitizedBuild) {
    EXPECT_LE(Median(flooded), 2 * Median(quiet)) << "bad tokens slowed down a good scraper";
  }
  // The budget refills: a new good token gets in soon after.
  EXPECT_TRUE(WaitFor([&] { return StatusOf(d.port(), Bearer("prometheus-token-2")) == 200; }, seconds(5)));
}

}  // namespace
}  // namespace statlet::testing
