// ProgressTokens: the single-use tokens of KEP-5334 progress URLs
// (/imagepullprogress/<token>). A token is 128 bits from getrandom(2), written as 32 hex
// digits; it is redeemed at most once, expires unused after `ttl`, and at most
// `max_outstanding` wait at once (as containerd's streaming server bounds its exec and
// port-forward tokens): a call past the cap is refused, not an older token dropped.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "pulls/progress_target.h"

namespace statlet::pulls {

inline constexpr size_t kProgressTokenHexDigits = 32;

struct ProgressTokensOptions {
  std::chrono::seconds ttl{30};
  size_t max_outstanding = 1000;
  // The clock expiry is measured on; tests drive it by hand.
  std::function<std::chrono::steady_clock::time_point()> now = std::chrono::steady_clock::now;
  // Fills the buffer with random bytes; getrandom(2) when unset. Tests only.
  std::function<Status(unsigned char*, size_t)> random;
};

class ProgressTokens {
 public:
  explicit ProgressTokens(ProgressTokensOptions options);

  // A new token for `target`. UNAVAILABLE when max_outstanding tokens wait already (or the
  // kernel gave no randomness).
  StatusOr<std::string> Issue(ProgressTarget target);
  // The target of `token`, once: none when it is unknown, used or expired.
  std::optional<ProgressTarget> Redeem(const std::string& token);
  size_t outstanding();

 private:
  void DropExpiredLocked(std::chrono::steady_clock::time_point now);

  const ProgressTokensOptions options_;
  std::mutex mu_;
  struct Entry {
    ProgressTarget target;
    std::chrono::steady_clock::time_point expires;
  };
  std::unordered_map<std::string, Entry> tokens_;  // guarded by mu_
  // The waiting tokens in the order they were issued, which is the order they expire in
  // (one ttl).
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::string>> order_;  // guarded by mu_
};

}  // namespace statlet::pulls
