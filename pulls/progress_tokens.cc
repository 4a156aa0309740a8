#include "pulls/progress_tokens.h"

#include <errno.h>
#include <sys/random.h>

#include <utility>

namespace statlet::pulls {
namespace {

Status GetRandom(unsigned char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(buf + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "getrandom");
    }
    got += static_cast<size_t>(r);
  }
  return Status::Ok();
}

}  // namespace

ProgressTokens::ProgressTokens(ProgressTokensOptions options) : options_(std::move(options)) {}

void ProgressTokens::DropExpiredLocked(std::chrono::steady_clock::time_point now) {
  while (!order_.empty() && order_.front().first <= now) {
    tokens_.erase(order_.front().second);
    order_.pop_front();
  }
}

StatusOr<std::string> ProgressTokens::Issue(ProgressTarget target) {
  unsigned char raw[kProgressTokenHexDigits / 2];
  Status s = options_.random ? options_.random(raw, sizeof raw) : GetRandom(raw, sizeof raw);
  if (!s.ok()) return Unavailable("no random bytes for a progress token: " + s.message());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  token.reserve(kProgressTokenHexDigits);
  for (unsigned char b : raw) {
    token.push_back(kHex[b >> 4]);
    token.push_back(kHex[b & 15]);
  }
  const auto now = options_.now();
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked(now);
  if (tokens_.size() >= options_.max_outstanding) {
    return ResourceExhausted("too many image pull progress URLs waiting to be used (" +
                             std::to_string(options_.max_outstanding) + "); try again within " +
                             std::to_string(options_.ttl.count()) + "s");
  }
  const auto expires = now + options_.ttl;
  if (!tokens_.emplace(token, Entry{std::move(target), expires}).second) {
    return Unavailable("a progress token came out twice: the kernel's randomness is broken");
  }
  order_.emplace_back(expires, token);
  return token;
}

std::optional<ProgressTarget> ProgressTokens::Redeem(const std::string& token) {
  const auto now = options_.now();
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked(now);
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return std::nullopt;
  ProgressTarget t = std::move(it->second.target);
  tokens_.erase(it);
  // At most max_outstanding entries to look through: both lists stay within the cap.
  for (auto o = order_.begin(); o != order_.end(); ++o) {
    if (o->second == token) {
      order_.erase(o);
      break;
    }
  }
  return t;
}

size_t ProgressTokens::outstanding() {
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked(options_.now());
  return tokens_.size();
}

}  // namespace statlet::pulls
