// A steady clock that moves only when the test says: the injectable `now` of statlet's timed
// code (the pull engine, the observed pulls, the progress tokens), so that a unit test
// asserts a timeout or an expiry by this clock, never by real time passing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

namespace statlet::testing {

class ManualClock {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  time_point Now() const { return start_ + std::chrono::nanoseconds(offset_ns_.load()); }
  void Advance(std::chrono::nanoseconds d) { offset_ns_ += d.count(); }
  // Now() as the std::function an options struct takes; the clock outlives its user.
  std::function<time_point()> Fn() const {
    return [this] { return Now(); };
  }

 private:
  const time_point start_ = std::chrono::steady_clock::now();
  std::atomic<int64_t> offset_ns_{0};  // written by the test, read by the code's threads
};

}  // namespace statlet::testing
