#include "exporters/kube_reviews.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace statlet {
namespace {

using nlohmann::json;

TEST(KubeReviews, BearerTokenAsTheApiServerReadsIt) {
  EXPECT_EQ(BearerToken("Bearer abc.def"), "abc.def");
  EXPECT_EQ(BearerToken("  bearer abc  "), "abc");
  EXPECT_EQ(BearerToken("BEARER abc"), "abc");
  EXPECT_EQ(BearerToken("Bearer abc extra"), "abc");  // SplitN(auth, " ", 3): the rest is ignored
  EXPECT_EQ(BearerToken("Bearer  abc"), "");          // two spaces: an empty token
  EXPECT_EQ(BearerToken("Bearer"), "");
  EXPECT_EQ(BearerToken("Basic cHJvbTpzZWNyZXQ="), "");
  EXPECT_EQ(BearerToken("Bearerabc"), "");
  EXPECT_EQ(BearerToken(""), "");
}

TEST(KubeReviews, KubeletAttributesFromMethodAndPath) {
  EXPECT_EQ(KubeletAttributes("GET", "/metrics").verb, "get");
  EXPECT_EQ(KubeletAttributes("GET", "/metrics").subresource, "metrics");
  EXPECT_EQ(KubeletAttributes("GET", "/metrics/cadvisor").subresource, "metrics");
  EXPECT_EQ(KubeletAttributes("GET", "/metricsx").subresource, "proxy");
  EXPECT_EQ(KubeletAttributes("GET", "/stats/summary").subresource, "stats");
  EXPECT_EQ(KubeletAttributes("GET", "/stats").subresource, "stats");
  EXPECT_EQ(KubeletAttributes("GET", "/logs/x").subresource, "log");
  EXPECT_EQ(KubeletAttributes("GET", "/checkpoint/a/b").subresource, "checkpoint");
  EXPECT_EQ(KubeletAttributes("GET", "/imagepulls").subresource, "proxy");
  EXPECT_EQ(KubeletAttributes("GET", "/").subresource, "proxy");
  EXPECT_EQ(KubeletAttributes("HEAD", "/metrics").verb, "");  // no verb for HEAD, as the kubelet's
  EXPECT_EQ(KubeletAttributes("POST", "/metrics").verb, "create");
  EXPECT_EQ(KubeletAttributes("PUT", "/metrics").verb, "update");
  EXPECT_EQ(KubeletAttributes("PATCH", "/metrics").verb, "patch");
  EXPECT_EQ(KubeletAttributes("DELETE", "/metrics").verb, "delete");
}

TEST(KubeReviews, TokenReviewBodyAndAnswers) {
  EXPECT_EQ(
      json::parse(TokenReviewBody("t0k\"en")),
      json::parse(R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"t0k\"en"}})"));
  auto ok = ParseTokenReview(201, R"({"status":{"authenticated":true,"user":{"username":"system:serviceaccount:m:p",
      "uid":"42","groups":["system:serviceaccounts","system:authenticated"],"extra":{"k":["v1","v2"]}}}})");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->authenticated);
  EXPECT_EQ(ok->user.username, "system:serviceaccount:m:p");
  EXPECT_EQ(ok->user.uid, "42");
  EXPECT_EQ(ok->user.groups.size(), 2u);
  EXPECT_EQ(ok->user.extra.at("k"), (std::vector<std::string>{"v1", "v2"}));
  auto no = ParseTokenReview(201, R"({"status":{"authenticated":false,"error":"invalid bearer token"}})");
  ASSERT_TRUE(no.ok());
  EXPECT_FALSE(no->authenticated);
  EXPECT_EQ(no->error, "invalid bearer token");
  auto empty_status = ParseTokenReview(201, R"({"status":{}})");
  ASSERT_TRUE(empty_status.ok());
  EXPECT_FALSE(empty_status->authenticated);
  EXPECT_FALSE(ParseTokenReview(403, R"({"kind":"Status","code":403})").ok());
  EXPECT_FALSE(ParseTokenReview(201, "<html>").ok());
  EXPECT_FALSE(ParseTokenReview(201, R"({"spec":{}})").ok());
  EXPECT_FALSE(ParseTokenReview(201, R"({"status":{"authenticated":true}})").ok());
}

TEST(KubeReviews, AccessReviewSpecAsTheKubeletSendsIt) {
  KubeUser u{"system:serviceaccount:monitoring:prometheus-k8s", "uid-1", {"system:serviceaccounts"}, {{"x", {"y"}}}};
  EXPECT_EQ(json::parse(AccessReviewSpec(u, KubeletAttributes("GET", "/metrics/cadvisor"), "node-a")), json::parse(R"({
    "resourceAttributes":{"verb":"get","version":"v1","resource":"nodes","subresource":"metrics","name":"node-a"},
    "user":"system:serviceaccount:monitoring:prometheus-k8s","uid":"uid-1","groups":["system:serviceaccounts"],
    "extra":{"x":["y"]}})"));
  // Empty fields are left out (omitempty): no verb for HEAD, no uid, groups or extra.
  EXPECT_EQ(json::parse(AccessReviewSpec(KubeUser{"alice", "", {}, {}}, KubeletAttributes("HEAD", "/"), "n")),
            json::parse(R"({"resourceAttributes":{"version":"v1","resource":"nodes","subresource":"proxy",
                            "name":"n"},"user":"alice"})"));
  const std::string spec = AccessReviewSpec(u, KubeletAttributes("GET", "/metrics"), "node-a");
  json body = json::parse(AccessReviewBody(spec));
  EXPECT_EQ(body["apiVersion"], "authorization.k8s.io/v1");
  EXPECT_EQ(body["kind"], "SubjectAccessReview");
  EXPECT_EQ(body["spec"], json::parse(spec));
}

TEST(KubeReviews, AccessReviewAnswers) {
  auto allowed = ParseAccessReview(201, R"({"status":{"allowed":true,"reason":"RBAC: allowed"}})");
  ASSERT_TRUE(allowed.ok());
  EXPECT_TRUE(allowed->allowed);
  EXPECT_EQ(allowed->reason, "RBAC: allowed");
  auto no_opinion = ParseAccessReview(201, R"({"status":{"allowed":false}})");
  ASSERT_TRUE(no_opinion.ok());
  EXPECT_FALSE(no_opinion->allowed);
  auto denied = ParseAccessReview(201, R"({"status":{"allowed":false,"denied":true,"reason":"no"}})");
  ASSERT_TRUE(denied.ok());
  EXPECT_FALSE(denied->allowed);
  EXPECT_FALSE(ParseAccessReview(201, R"({"status":{"allowed":true,"denied":true}})").ok());
  EXPECT_FALSE(ParseAccessReview(500, R"({"status":{"allowed":true}})").ok());
}

}  // namespace
}  // namespace statlet
