// A token bucket: `rate` tokens a second, `burst` at most saved up. The caller passes the
// time (a steady clock's, or a test's), so the bucket itself never reads a clock.
#pragma once

#include <algorithm>
#include <chrono>

namespace statlet {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  TokenBucket(double rate, double burst) : rate_(rate), burst_(std::max(1.0, burst)), tokens_(burst_) {}

  // Takes a token if one is there at `now`.
  bool TryTake(Clock::time_point now) {
    if (started_) {
      const double elapsed = std::chrono::duration<double>(now - last_).count();
      if (elapsed > 0) tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
    }
    started_ = true;
    if (now > last_) last_ = now;
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }

 private:
  double rate_;
  double burst_;
  double tokens_;
  bool started_ = false;
  Clock::time_point last_{};
};

}  // namespace statlet
