// Waiting on a condition in tests and benches: poll it with a deadline, never sleep for a
// guessed time.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace statlet::testing {

// Polls `cond` every 10 ms until it holds or `timeout` passes; then checks it once more.
inline bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // poll interval
  }
  return cond();
}

}  // namespace statlet::testing
