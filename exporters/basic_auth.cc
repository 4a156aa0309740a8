#include "exporters/basic_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

namespace statlet {
namespace {

constexpr size_t kMaxAllowed = 64;   // distinct scrapers' credentials
constexpr size_t kMaxDenied = 1024;  // recent wrong guesses
constexpr size_t kCheckQueue = 16;   // credentials waiting for bcrypt

}  // namespace

BasicAuthenticator::BasicAuthenticator(WebConfig config) : config_(std::move(config)) {}

BasicAuthenticator::Digest BasicAuthenticator::Hash(std::string_view header) {
  Digest d{};
  unsigned int len = 0;
  EVP_Digest(header.data(), header.size(), d.data(), &len, EVP_sha256(), nullptr);
  return d;
}

bool BasicAuthenticator::Contains(const std::deque<Digest>& set, const Digest& d) {
  // Every entry is compared, each in constant time: the time says nothing about which or
  // how much of one matched.
  bool found = false;
  for (const Digest& e : set) found |= CRYPTO_memcmp(e.data(), d.data(), d.size()) == 0;
  return found;
}

void BasicAuthenticator::Remember(std::deque<Digest>* set, const Digest& d, size_t cap) {
  if (Contains(*set, d)) return;
  if (set->size() >= cap) set->pop_front();
  set->push_back(d);
}

BasicAuthenticator::Verdict BasicAuthenticator::Remembered(std::string_view header) {
  if (!enabled()) return Verdict::kAllowed;
  if (header.empty()) return Verdict::kDenied;
  const Digest d = Hash(header);
  std::lock_guard<std::mutex> lock(mu_);
  if (Contains(allowed_, d)) return Verdict::kAllowed;
  if (Contains(denied_, d)) return Verdict::kDenied;
  return Verdict::kUnknown;
}

bool BasicAuthenticator::Verify(std::string_view header) {
  if (!enabled()) return true;
  const bool ok = CheckBasicAuth(config_, std::string(header));
  const Digest d = Hash(header);
  std::lock_guard<std::mutex> lock(mu_);
  Remember(ok ? &allowed_ : &denied_, d, ok ? kMaxAllowed : kMaxDenied);
  return ok;
}

BasicHttpAuthorizer::BasicHttpAuthorizer(WebConfig config)
    : auth_(std::move(config)), pool_("statlet-auth", 1, kCheckQueue, /*nice=*/10) {}

AuthVerdict BasicHttpAuthorizer::Unauthorized() {
  return {401, "Unauthorized", {{"WWW-Authenticate", "Basic realm=\"statlet\""}}};
}

std::optional<AuthVerdict> BasicHttpAuthorizer::Remembered(const Request& request) {
  switch (auth_.Remembered(request.authorization)) {
    case BasicAuthenticator::Verdict::kAllowed: return AuthVerdict::Allow();
    case BasicAuthenticator::Verdict::kDenied: return Unauthorized();
    case BasicAuthenticator::Verdict::kUnknown: return std::nullopt;
  }
  return std::nullopt;
}

void BasicHttpAuthorizer::Check(const Request& request, std::function<void(AuthVerdict)> done) {
  auto shared = std::make_shared<std::function<void(AuthVerdict)>>(std::move(done));
  const bool queued = pool_.TrySubmit([this, authorization = request.authorization, shared] {
    (*shared)(auth_.Verify(authorization) ? AuthVerdict::Allow() : Unauthorized());
  });
  if (!queued) (*shared)({429, "too many authentication attempts", {{"Retry-After", "1"}}});
}

}  // namespace statlet
