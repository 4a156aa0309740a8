// --web.auth=kubernetes: a request's bearer token is checked with the API server's
// TokenReview and the request authorized with a SubjectAccessReview, as the kubelet does
// for its metrics paths (exporters/kube_reviews.h): so whoever may `get nodes/metrics`
// for this node (kube-prometheus' Prometheus, for one) may scrape statlet.
//
// What a client can make the API server do is bounded:
//  - Answers are remembered, as the kubelet remembers them: a token's review (authenticated
//    or not) for token_ttl, an allowed access review for allowed_ttl, a denied one for
//    denied_ttl. The caches are bounded (least recently used entries go), and tokens that
//    authenticated are kept apart from those that did not, so a flood of bad tokens
//    cannot push a scraper's token out. Transport errors are never remembered.
//  - One review per token and attributes at a time: requests that need the same review
//    wait for the one in flight.
//  - Reviews for tokens never seen to authenticate are limited to reviews_per_second
//    (with a burst of twice that) and a queue of 16; past either the request is answered
//    429 at once. Tokens that authenticated before are reviewed again (when their answer
//    expires) in a lane of their own with its own budget: a flood of bad tokens delays
//    neither their reviews nor, since their answers are remembered, their scrapes.
//  - Reviews run on threads of their own, never on the HTTP event loop.
// When the API server cannot be reached or answers an error, requests that need a review
// are refused (503: fail closed) and a log line says why (once per distinct error, and
// again when reviews work).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/kube_api_client.h"
#include "base/status.h"
#include "base/token_bucket.h"
#include "exporters/http_authorizer.h"
#include "exporters/kube_reviews.h"
#include "exporters/ttl_cache.h"
#include "exporters/worker_pool.h"

namespace statlet {

struct KubernetesAuthOptions {
  KubeApiOptions api;     // where reviews go, with which token and CA
  std::string node_name;  // the name authorized (a valid node name)
  // The kubelet's defaults: authentication.webhook.cacheTTL,
  // authorization.webhook.cacheAuthorizedTTL and cacheUnauthorizedTTL.
  std::chrono::milliseconds token_ttl = std::chrono::minutes(2);
  std::chrono::milliseconds allowed_ttl = std::chrono::minutes(5);
  std::chrono::milliseconds denied_ttl = std::chrono::seconds(30);
  double reviews_per_second = 10;
};

class KubernetesAuthorizer : public HttpAuthorizer {
 public:
  using Clock = std::chrono::steady_clock;
  // POSTs a review body to the API server path; its answer.
  using Transport = std::function<StatusOr<KubeApiResponse>(const std::string& path, const std::string& body)>;

  // Reviews through a KubeApiClient made from options.api.
  static StatusOr<std::shared_ptr<KubernetesAuthorizer>> Create(KubernetesAuthOptions options);
  // Reviews through `transport` (`cancel`, when set, ends its calls in flight at Stop);
  // `now` is the clock of the TTLs and the review budget.
  KubernetesAuthorizer(KubernetesAuthOptions options, Transport transport, std::string server,
                       std::function<Clock::time_point()> now = Clock::now, std::function<void()> cancel = nullptr);
  ~KubernetesAuthorizer() override;

  std::optional<AuthVerdict> Remembered(const Request& request) override;
  void Check(const Request& request, std::function<void(AuthVerdict)> done) override;
  void Stop() override;

  struct Counters {
    uint64_t token_reviews = 0;   // sent
    uint64_t access_reviews = 0;  // sent
    uint64_t remembered = 0;      // verdicts from the caches alone
    uint64_t throttled = 0;       // answered 429: over the review budget or queue
    uint64_t errors = 0;          // reviews that failed (answered 503)
  };
  Counters counters() const;

 private:
  using Digest = std::array<uint8_t, 32>;
  struct DigestHash {
    size_t operator()(const Digest& d) const;
  };
  struct Decision {
    bool allowed = false;
    std::string reason;
  };
  using Waiters = std::vector<std::function<void(AuthVerdict)>>;

  Digest TokenDigest(std::string_view token) const;
  AuthVerdict Forbidden(const KubeUser& user, const NodeAttributes& a) const;
  // On a review thread: the reviews `token` needs for `a`, then every waiter of `key`.
  void Review(const std::string& key, const std::string& token, const Digest& d, const NodeAttributes& a);
  AuthVerdict ReviewLocked(std::unique_lock<std::mutex>& lock, const std::string& token, const Digest& d,
                           const NodeAttributes& a);
  // Called and returns with `lock` held; releases it around the API server's call. The
  // answer `parse` makes of the response, or nothing when there is none (reported, counted).
  template <typename Answer, typename Parse>
  std::optional<Answer> AskLocked(std::unique_lock<std::mutex>& lock, const char* path, const std::string& body,
                                  Parse parse);
  void ReportError(const Status& s);
  void ReportOk();
  void Answer(const std::string& key, const AuthVerdict& v);

  KubernetesAuthOptions options_;
  Transport transport_;
  std::string server_;
  std::function<Clock::time_point()> now_;
  std::function<void()> cancel_;
  std::array<uint8_t, 32> hmac_key_{};  // token digests are keyed: they say nothing outside this process

  mutable std::mutex mu_;
  TtlCache<Digest, KubeUser, DigestHash> authenticated_;
  TtlCache<Digest, bool, DigestHash> unauthenticated_;
  TtlCache<std::string, Decision> decisions_;         // by access review spec
  std::unordered_map<std::string, Waiters> pending_;  // by token digest and attributes
  TokenBucket new_budget_;
  TokenBucket known_budget_;
  Counters counters_;
  std::string last_error_;
  bool stopped_ = false;

  WorkerPool new_lane_;    // tokens never seen to authenticate
  WorkerPool known_lane_;  // tokens that authenticated before
};

}  // namespace statlet
