#include "exporters/kubernetes_authorizer.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "base/node_name.h"

namespace statlet {
namespace {

constexpr size_t kAuthenticatedTokens = 256;     // scrapers' tokens
constexpr size_t kUnauthenticatedTokens = 4096;  // recent bad ones
constexpr size_t kDecisions = 1024;              // access reviews (per user and verb)
constexpr size_t kNewQueue = 16;                 // reviews of new tokens waiting for a thread
constexpr size_t kKnownQueue = 16;
constexpr std::chrono::milliseconds kReviewTimeout{3000};

AuthVerdict Unauthorized() { return {401, "Unauthorized", {{"WWW-Authenticate", "Bearer realm=\"statlet\""}}}; }
AuthVerdict Throttled() { return {429, "too many token reviews", {{"Retry-After", "1"}}}; }
AuthVerdict Unavailable() {
  return {503, "authentication unavailable: the API server could not review the request", {{"Retry-After", "1"}}};
}

}  // namespace

size_t KubernetesAuthorizer::DigestHash::operator()(const Digest& d) const {
  size_t h;
  std::memcpy(&h, d.data(), sizeof h);
  return h;
}

StatusOr<std::shared_ptr<KubernetesAuthorizer>> KubernetesAuthorizer::Create(KubernetesAuthOptions options) {
  if (Status s = ValidateNodeName(options.node_name); !s.ok()) return s;
  if (!(options.reviews_per_second > 0)) return InvalidArgument("reviews per second must be above 0");
  KubeApiOptions api = options.api;
  if (api.timeout > kReviewTimeout) api.timeout = kReviewTimeout;
  // Files that cannot be read now would fail every review: a setup error, said at start.
  if (::access(api.token_file.c_str(), R_OK) != 0) {
    return InvalidArgument("cannot read statlet's token for the reviews " + api.token_file +
                           " (--web.auth.token-file): " + std::strerror(errno));
  }
  const bool plain = api.allow_plain_http && api.url.rfind("http://", 0) == 0;  // tests only: no CA
  if (!plain && ::access(api.ca_file.c_str(), R_OK) != 0) {
    return InvalidArgument("cannot read the API server's CA bundle " + api.ca_file +
                           " (--web.auth.ca-file): " + std::strerror(errno));
  }
  auto client = KubeApiClient::Create(api);
  if (!client.ok()) return client.status();
  std::shared_ptr<KubeApiClient> shared(std::move(*client));
  const std::string server = shared->url();
  Transport transport = [shared](const std::string& path, const std::string& body) {
    return shared->Send("POST", path, body, "application/json");
  };
  return std::make_shared<KubernetesAuthorizer>(std::move(options), std::move(transport), server, Clock::now,
                                                [shared] { shared->Cancel(); });
}

KubernetesAuthorizer::KubernetesAuthorizer(KubernetesAuthOptions options, Transport transport, std::string server,
                                           std::function<Clock::time_point()> now, std::function<void()> cancel)
    : options_(std::move(options)),
      transport_(std::move(transport)),
      server_(std::move(server)),
      now_(std::move(now)),
      cancel_(std::move(cancel)),
      authenticated_(kAuthenticatedTokens),
      unauthenticated_(kUnauthenticatedTokens),
      decisions_(kDecisions),
      new_budget_(options_.reviews_per_second, 2 * options_.reviews_per_second),
      known_budget_(options_.reviews_per_second, 2 * options_.reviews_per_second),
      new_lane_("statlet-review", 2, kNewQueue),
      known_lane_("statlet-review-k", 1, kKnownQueue) {
  RAND_bytes(hmac_key_.data(), static_cast<int>(hmac_key_.size()));
}

KubernetesAuthorizer::~KubernetesAuthorizer() { Stop(); }

void KubernetesAuthorizer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;  // no new checks, no error reports
  }
  if (cancel_) cancel_();  // reviews in flight end now, not at their timeout
  new_lane_.Stop();
  known_lane_.Stop();
  std::lock_guard<std::mutex> lock(mu_);
  pending_.clear();  // their connections are closed already
}

KubernetesAuthorizer::Counters KubernetesAuthorizer::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

KubernetesAuthorizer::Digest KubernetesAuthorizer::TokenDigest(std::string_view token) const {
  Digest d{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), hmac_key_.data(), static_cast<int>(hmac_key_.size()),
       reinterpret_cast<const unsigned char*>(token.data()), token.size(), d.data(), &len);
  return d;
}

AuthVerdict KubernetesAuthorizer::Forbidden(const KubeUser& user, const NodeAttributes& a) const {
  // The kubelet's words (pkg/kubelet/server/server.go).
  return {403,
          "Forbidden (user=" + user.username + ", verb=" + a.verb + ", resource=nodes, subresource(s)=[" +
              a.subresource + "])",
          {}};
}

std::optional<AuthVerdict> KubernetesAuthorizer::Remembered(const Request& request) {
  const std::string_view token = BearerToken(request.authorization);
  if (token.empty()) return Unauthorized();
  const Digest d = TokenDigest(token);
  const NodeAttributes a = KubeletAttributes(request.method, request.path);
  const Clock::time_point now = now_();
  std::lock_guard<std::mutex> lock(mu_);
  if (auto bad = unauthenticated_.Get(d, now); bad.value != nullptr && bad.fresh) {
    ++counters_.remembered;
    return Unauthorized();
  }
  auto user = authenticated_.Get(d, now);
  if (user.value == nullptr || !user.fresh) return std::nullopt;
  auto decision = decisions_.Get(AccessReviewSpec(*user.value, a, options_.node_name), now);
  if (decision.value == nullptr || !decision.fresh) return std::nullopt;
  ++counters_.remembered;
  return decision.value->allowed ? AuthVerdict::Allow() : Forbidden(*user.value, a);
}

void KubernetesAuthorizer::Check(const Request& request, std::function<void(AuthVerdict)> done) {
  const std::string token(BearerToken(request.authorization));
  if (token.empty()) {
    done(Unauthorized());
    return;
  }
  const Digest d = TokenDigest(token);
  const NodeAttributes a = KubeletAttributes(request.method, request.path);
  const std::string key = std::string(d.begin(), d.end()) + '\0' + a.verb + '\0' + a.subresource;
  bool known = false, throttled = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    auto it = pending_.find(key);
    if (it != pending_.end()) {  // the same review is under way: its answer is this one's
      it->second.push_back(std::move(done));
      return;
    }
    known = authenticated_.Get(d, now_()).value != nullptr;
    throttled = !(known ? known_budget_ : new_budget_).TryTake(now_());
    if (throttled) {
      ++counters_.throttled;
    } else {
      pending_[key].push_back(std::move(done));
    }
  }
  if (throttled) {
    log::Once(log::Level::kWarn, known ? "kube-auth-budget-known" : "kube-auth-budget",
              std::string("web auth: token reviews over their budget (") + (known ? "known tokens" : "new tokens") +
                  "): requests that need one are answered 429 meanwhile");
    done(Throttled());
    return;
  }
  WorkerPool& lane = known ? known_lane_ : new_lane_;
  if (!lane.TrySubmit([this, key, token, d, a] { Review(key, token, d, a); })) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.throttled;
    }
    Answer(key, Throttled());
  }
}

void KubernetesAuthorizer::Review(const std::string& key, const std::string& token, const Digest& d,
                                  const NodeAttributes& a) {
  std::unique_lock<std::mutex> lock(mu_);
  AuthVerdict v = ReviewLocked(lock, token, d, a);
  lock.unlock();
  Answer(key, v);
}

template <typename Answer, typename Parse>
std::optional<Answer> KubernetesAuthorizer::AskLocked(std::unique_lock<std::mutex>& lock, const char* path,
                                                      const std::string& body, Parse parse) {
  lock.unlock();
  auto res = transport_(path, body);
  StatusOr<Answer> answer = res.ok() ? parse(res->status, res->body) : StatusOr<Answer>(res.status());
  if (answer.ok()) {
    ReportOk();
  } else {
    ReportError(answer.status());
  }
  lock.lock();
  if (!answer.ok()) {
    ++counters_.errors;
    return std::nullopt;
  }
  return std::move(*answer);
}

// Called and returns with `lock` held; releases it around each call to the API server.
AuthVerdict KubernetesAuthorizer::ReviewLocked(std::unique_lock<std::mutex>& lock, const std::string& token,
                                               const Digest& d, const NodeAttributes& a) {
  KubeUser user;
  if (auto bad = unauthenticated_.Get(d, now_()); bad.value != nullptr && bad.fresh) return Unauthorized();
  if (auto good = authenticated_.Get(d, now_()); good.value != nullptr && good.fresh) {
    user = *good.value;
  } else {
    ++counters_.token_reviews;
    auto answer = AskLocked<TokenReviewAnswer>(lock, kTokenReviewPath, TokenReviewBody(token), ParseTokenReview);
    if (!answer) return Unavailable();
    const Clock::time_point expires = now_() + options_.token_ttl;
    // Not authenticated, with or without a reason (status.error), is the API server's
    // answer and is remembered; only failures to get one are not.
    if (!answer->authenticated) {
      authenticated_.Erase(d);  // no longer known, if it was
      unauthenticated_.Put(d, true, expires);
      return Unauthorized();
    }
    user = answer->user;
    authenticated_.Put(d, user, expires);
  }
  const std::string spec = AccessReviewSpec(user, a, options_.node_name);
  if (auto decision = decisions_.Get(spec, now_()); decision.value != nullptr && decision.fresh) {
    return decision.value->allowed ? AuthVerdict::Allow() : Forbidden(user, a);
  }
  ++counters_.access_reviews;
  auto answer =
      AskLocked<AccessReviewAnswer>(lock, kSubjectAccessReviewPath, AccessReviewBody(spec), ParseAccessReview);
  if (!answer) return Unavailable();
  decisions_.Put(spec, Decision{answer->allowed, answer->reason},
                 now_() + (answer->allowed ? options_.allowed_ttl : options_.denied_ttl));
  return answer->allowed ? AuthVerdict::Allow() : Forbidden(user, a);
}

void KubernetesAuthorizer::Answer(const std::string& key, const AuthVerdict& v) {
  Waiters waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(key);
    if (it == pending_.end()) return;
    waiters = std::move(it->second);
    pending_.erase(it);
  }
  for (auto& w : waiters) w(v);
}

void KubernetesAuthorizer::ReportError(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || s.message() == last_error_) return;
  last_error_ = s.message();
  log::Error("web auth: a review at the API server " + server_ + " failed: " + s.message() +
             "; requests whose verdict is not remembered are refused (503) until reviews work again");
}

void KubernetesAuthorizer::ReportOk() {
  std::lock_guard<std::mutex> lock(mu_);
  if (last_error_.empty()) return;
  last_error_.clear();
  log::Info("web auth: the API server at " + server_ + " answers reviews again");
}

}  // namespace statlet
