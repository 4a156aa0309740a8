// The review logic of --web.auth=kubernetes on a fake API server transport and a clock of
// the test's own: what is remembered and for how long, one review per token at a time,
// the review budget and lanes, failures refused and never remembered. (The daemon against
// an HTTPS stand-in of the API server: tests/reliability/http_kube_auth_test.cc.)
#include "exporters/kubernetes_authorizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <set>
#include <thread>

namespace statlet {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;
using Clock = KubernetesAuthorizer::Clock;

// Answers reviews as an API server with RBAC would: `users` authenticate, `allowed` may
// get nodes/metrics of node-a. Can fail, or hold every answer until released.
class FakeApiServer {
 public:
  StatusOr<KubeApiResponse> Post(const std::string& path, const std::string& body) {
    std::unique_lock<std::mutex> lock(mu_);
    bodies.push_back(body);
    cv_.wait(lock, [&] { return !hold_; });
    if (fail) return Unavailable("connection refused");
    json req = json::parse(body);
    json status;
    if (path == kTokenReviewPath) {
      ++token_reviews;
      const std::string token = req["spec"]["token"];
      if (users.count(token)) {
        status = {{"authenticated", true},
                  {"user", {{"username", users[token]}, {"groups", {"system:authenticated"}}}}};
      } else {
        status = {{"authenticated", false}, {"error", "invalid bearer token"}};
      }
    } else {
      ++access_reviews;
      const json& a = req["spec"]["resourceAttributes"];
      status = {{"allowed", allowed.count(req["spec"]["user"]) && a.value("verb", "") == "get" &&
                                a["resource"] == "nodes" && a["subresource"] == "metrics" && a["name"] == "node-a"}};
    }
    req["status"] = status;
    return KubeApiResponse{201, req.dump()};
  }
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold_ = false;
    }
    cv_.notify_all();
  }
  // Requests that reached the server (waiting or answered).
  size_t received() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies.size();
  }

  std::map<std::string, std::string> users = {{"good", "prometheus"}, {"nobody", "default"}};
  std::set<std::string> allowed = {"prometheus"};
  std::atomic<bool> fail{false};
  std::atomic<int> token_reviews{0}, access_reviews{0};
  std::vector<std::string> bodies;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
};

struct Fixture {
  explicit Fixture(double rate = 1000) {
    KubernetesAuthOptions o;
    o.node_name = "node-a";
    o.reviews_per_second = rate;
    auth = std::make_unique<KubernetesAuthorizer>(
        o, [this](const std::string& p, const std::string& b) { return api.Post(p, b); }, "https://api.test",
        [this] { return now; });
  }
  ~Fixture() { auth->Stop(); }

  static HttpAuthorizer::Request Get(const std::string& token, const std::string& path = "/metrics",
                                     const std::string& method = "GET") {
    return {method, path, token.empty() ? "" : "Bearer " + token};
  }
  // The verdict: remembered, else checked (waiting for the check's answer).
  AuthVerdict Verdict(const HttpAuthorizer::Request& r) {
    if (auto v = auth->Remembered(r)) return *v;
    return Checked(r);
  }
  AuthVerdict Checked(const HttpAuthorizer::Request& r) { return Start(r).get(); }
  std::future<AuthVerdict> Start(const HttpAuthorizer::Request& r) {
    auto p = std::make_shared<std::promise<AuthVerdict>>();
    auto f = p->get_future();
    auth->Check(r, [p](AuthVerdict v) { p->set_value(std::move(v)); });
    return f;
  }

  FakeApiServer api;
  Clock::time_point now = Clock::time_point() + std::chrono::hours(1);
  std::unique_ptr<KubernetesAuthorizer> auth;
};

TEST(KubernetesAuthorizer, NoBearerTokenIsUnauthorizedWithoutAReview) {
  Fixture f;
  for (const char* header : {"", "Basic cHJvbTpzZWNyZXQ=", "Bearer ", "Bearer"}) {
    auto v = f.auth->Remembered({"GET", "/metrics", header});
    ASSERT_TRUE(v.has_value()) << header;
    EXPECT_EQ(v->status, 401) << header;
  }
  EXPECT_EQ(f.api.received(), 0u);
}

TEST(KubernetesAuthorizer, AllowedScrapeIsReviewedOnceThenRemembered) {
  Fixture f;
  EXPECT_FALSE(f.auth->Remembered(Fixture::Get("good")).has_value());
  EXPECT_TRUE(f.Checked(Fixture::Get("good")).allowed());
  EXPECT_EQ(f.api.token_reviews, 1);
  EXPECT_EQ(f.api.access_reviews, 1);
  for (int i = 0; i < 100; ++i) {
    auto v = f.auth->Remembered(Fixture::Get("good"));
    ASSERT_TRUE(v.has_value());
    EXPECT_TRUE(v->allowed());
  }
  EXPECT_EQ(f.api.received(), 2u);
  EXPECT_EQ(f.auth->counters().remembered, 100u);
  // The token's answer expires after 2 minutes; the access decision (5 minutes) is still
  // remembered, so only the token is reviewed again.
  f.now += minutes(2);
  EXPECT_FALSE(f.auth->Remembered(Fixture::Get("good")).has_value());
  EXPECT_TRUE(f.Checked(Fixture::Get("good")).allowed());
  EXPECT_EQ(f.api.token_reviews, 2);
  EXPECT_EQ(f.api.access_reviews, 1);
  f.now += minutes(3);
  EXPECT_TRUE(f.Verdict(Fixture::Get("good")).allowed());
  EXPECT_EQ(f.api.access_reviews, 2);
}

TEST(KubernetesAuthorizer, RefusedAccessIsForbiddenAndRememberedForThirtySeconds) {
  Fixture f;
  AuthVerdict v = f.Verdict(Fixture::Get("nobody"));
  EXPECT_EQ(v.status, 403);
  EXPECT_EQ(v.text, "Forbidden (user=default, verb=get, resource=nodes, subresource(s)=[metrics])");
  f.now += seconds(29);
  ASSERT_TRUE(f.auth->Remembered(Fixture::Get("nobody")).has_value());
  f.now += seconds(1);
  EXPECT_FALSE(f.auth->Remembered(Fixture::Get("nobody")).has_value());
  EXPECT_EQ(f.Checked(Fixture::Get("nobody")).status, 403);
  EXPECT_EQ(f.api.access_reviews, 2);
  EXPECT_EQ(f.api.token_reviews, 1);
}

TEST(KubernetesAuthorizer, AttributesFollowTheKubelet) {
  Fixture f;
  // HEAD has no verb, other paths are the proxy subresource: RBAC's get nodes/metrics does
  // not allow them.
  EXPECT_EQ(f.Verdict(Fixture::Get("good", "/metrics", "HEAD")).status, 403);
  EXPECT_EQ(f.Verdict(Fixture::Get("good", "/imagepulls")).status, 403);
  EXPECT_TRUE(f.Verdict(Fixture::Get("good", "/metrics/cadvisor")).allowed());
  std::set<json> specs;
  for (const std::string& b : f.api.bodies) {
    json j = json::parse(b);
    if (j["kind"] == "SubjectAccessReview") specs.insert(j["spec"]["resourceAttributes"]);
  }
  EXPECT_EQ(specs, (std::set<json>{
                       json::parse(R"({"version":"v1","resource":"nodes","subresource":"metrics","name":"node-a"})"),
                       json::parse(R"({"verb":"get","version":"v1","resource":"nodes","subresource":"proxy",
                                       "name":"node-a"})"),
                       json::parse(R"({"verb":"get","version":"v1","resource":"nodes","subresource":"metrics",
                                       "name":"node-a"})"),
                   }));
  EXPECT_EQ(f.api.token_reviews, 1);  // one token, reviewed once
}

TEST(KubernetesAuthorizer, BadTokensAreRememberedForTwoMinutes) {
  Fixture f;
  EXPECT_EQ(f.Verdict(Fixture::Get("bad")).status, 401);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(f.Verdict(Fixture::Get("bad")).status, 401);
  EXPECT_EQ(f.api.token_reviews, 1);
  EXPECT_EQ(f.api.access_reviews, 0);
  f.now += minutes(2);
  EXPECT_EQ(f.Verdict(Fixture::Get("bad")).status, 401);
  EXPECT_EQ(f.api.token_reviews, 2);
}

TEST(KubernetesAuthorizer, FailedReviewsRefuseAndAreNotRemembered) {
  Fixture f;
  EXPECT_TRUE(f.Verdict(Fixture::Get("good")).allowed());
  f.api.fail = true;
  // A remembered verdict holds while the API server is away, as the kubelet's.
  EXPECT_TRUE(f.Verdict(Fixture::Get("good")).allowed());
  AuthVerdict v = f.Verdict(Fixture::Get("nobody"));
  EXPECT_EQ(v.status, 503);
  EXPECT_EQ(f.Verdict(Fixture::Get("nobody")).status, 503);
  // good's two reviews, then nobody's token twice: failures are not remembered.
  EXPECT_EQ(f.api.received(), 4u);
  EXPECT_EQ(f.auth->counters().errors, 2u);
  f.api.fail = false;
  EXPECT_EQ(f.Verdict(Fixture::Get("nobody")).status, 403);
}

TEST(KubernetesAuthorizer, ConcurrentRequestsOfOneTokenShareOneReview) {
  Fixture f;
  f.api.Hold();
  std::vector<std::future<AuthVerdict>> waiting;
  for (int i = 0; i < 20; ++i) waiting.push_back(f.Start(Fixture::Get("good")));
  while (f.api.received() == 0) std::this_thread::yield();  // the review has reached the server
  f.api.Release();
  for (auto& w : waiting) EXPECT_TRUE(w.get().allowed());
  EXPECT_EQ(f.api.token_reviews, 1);
  EXPECT_EQ(f.api.access_reviews, 1);
}

TEST(KubernetesAuthorizer, NewTokensHaveABudgetKnownTokensOneOfTheirOwn) {
  // One review per 1,000 s, a burst of one: the clock never refills it in this test.
  Fixture f(0.001);
  EXPECT_TRUE(f.Verdict(Fixture::Get("good")).allowed());  // takes the new tokens' budget
  AuthVerdict over = f.Verdict(Fixture::Get("bad-1"));
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(f.api.token_reviews, 1);
  // The scraper's token expires: it is reviewed again from the known tokens' budget, which
  // bad tokens cannot spend.
  f.now += minutes(2);
  EXPECT_EQ(f.Verdict(Fixture::Get("bad-2")).status, 429);
  EXPECT_TRUE(f.Verdict(Fixture::Get("good")).allowed());
  EXPECT_EQ(f.api.token_reviews, 2);
  EXPECT_EQ(f.auth->counters().throttled, 2u);
}

TEST(KubernetesAuthorizer, ReviewQueueIsBounded) {
  Fixture f;
  f.api.Hold();
  std::vector<std::future<AuthVerdict>> waiting;
  // Two review threads, held at the server, and 16 waiting: the 19th distinct token is
  // refused at once.
  for (int i = 0; i < 2; ++i) waiting.push_back(f.Start(Fixture::Get("bad-" + std::to_string(i))));
  while (f.api.received() < 2) std::this_thread::yield();
  for (int i = 2; i < 18; ++i) waiting.push_back(f.Start(Fixture::Get("bad-" + std::to_string(i))));
  AuthVerdict refused = f.Checked(Fixture::Get("bad-18"));
  EXPECT_EQ(refused.status, 429);
  f.api.Release();
  for (auto& w : waiting) EXPECT_EQ(w.get().status, 401);
}

TEST(KubernetesAuthorizer, GoodTokensSurviveAFloodOfBadOnesInTheCache) {
  Fixture f;
  EXPECT_TRUE(f.Verdict(Fixture::Get("good")).allowed());
  for (int i = 0; i < 5000; ++i) {
    f.now += std::chrono::milliseconds(1);  // within the review budget
    EXPECT_EQ(f.Verdict(Fixture::Get("bad-" + std::to_string(i))).status, 401);
  }
  auto v = f.auth->Remembered(Fixture::Get("good"));
  ASSERT_TRUE(v.has_value()) << "a flood of bad tokens pushed a good one out of the cache";
  EXPECT_TRUE(v->allowed());
}

}  // namespace
}  // namespace statlet
