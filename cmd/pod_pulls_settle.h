// When `statlet pull --pod --until-done` may end (docs/image-pulls.md). The kubelet pulls a
// pod's images one after another, each just before its container is created (an init
// container's image, then, once it ran, the next one), and KEP-5334's stream says nothing
// of pulls not begun yet. So "every pull seen is complete" is not the end: the pod is done
// when that has held for the settle time with no line of a new pull or layer.
#pragma once

#include <chrono>
#include <optional>

namespace statlet {

class PodPullsSettle {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PodPullsSettle(Clock::duration settle) : settle_(settle) {}

  // A batch of lines arrived at `now`; `complete`: every pull seen so far is complete (or
  // failed) after it.
  void Saw(Clock::time_point now, bool complete) {
    last_ = now;
    complete_ = complete;
  }
  // Whether to end: complete, and nothing arrived for the settle time since.
  bool Done(Clock::time_point now) const { return complete_ && now - last_ >= settle_; }
  // When Done turns true if no line arrives before; none while a pull is incomplete.
  std::optional<Clock::time_point> Due() const {
    if (!complete_) return std::nullopt;
    return last_ + settle_;
  }

 private:
  Clock::duration settle_;
  Clock::time_point last_{};
  bool complete_ = false;
};

}  // namespace statlet
