#include "base/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace statlet {
namespace {

TEST(ParallelForTest, EveryIndexOnceWhateverTheBlock) {
  ParallelFor pf(3);
  ASSERT_EQ(pf.threads(), 3u);
  for (size_t n : {0u, 1u, 2u, 7u, 64u, 1001u}) {
    for (size_t block : {0u, 1u, 5u, 64u, 5000u}) {
      std::vector<std::atomic<int>> calls(n);
      std::atomic<bool> bad_worker{false};
      pf.Run(n, block, 0, [&](size_t w, size_t i) {
        if (w >= 3) bad_worker = true;
        calls[i].fetch_add(1);
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(calls[i].load(), 1) << "n=" << n << " block=" << block << " i=" << i;
      EXPECT_FALSE(bad_worker.load());
    }
  }
}

// Iteration 0 waits until another iteration runs on another thread: it can only come
// true when a helper takes part (the wait's timeout only bounds a failing run).
TEST(ParallelForTest, HelpersRunIterationsAtTheSameTime) {
  ParallelFor pf(2);
  for (int round = 0; round < 20; ++round) {
    std::mutex mu;
    std::condition_variable cv;
    std::set<std::thread::id> threads;
    bool met = false;
    pf.Run(2, 1, 0, [&](size_t, size_t i) {
      std::unique_lock<std::mutex> lk(mu);
      threads.insert(std::this_thread::get_id());
      if (threads.size() == 2) {
        met = true;
        cv.notify_all();
      }
      if (i == 0 || i == 1) cv.wait_for(lk, std::chrono::seconds(10), [&] { return met; });
    });
    ASSERT_TRUE(met) << "round " << round;
    EXPECT_EQ(threads.size(), 2u);
  }
}

TEST(ParallelForTest, ShortLoopsAndNoHelpersStayOnTheCaller) {
  const auto caller = std::this_thread::get_id();
  for (size_t threads : {0u, 1u, 4u}) {
    ParallelFor pf(threads);
    std::atomic<int> elsewhere{0}, not_zero{0}, calls{0};
    const size_t min_n = threads > 1 ? 100 : 0;
    pf.Run(threads > 1 ? 99 : 500, 1, min_n, [&](size_t w, size_t) {
      if (std::this_thread::get_id() != caller) elsewhere++;
      if (w != 0) not_zero++;
      calls++;
    });
    EXPECT_EQ(elsewhere.load(), 0);
    EXPECT_EQ(not_zero.load(), 0);
    EXPECT_EQ(calls.load(), threads > 1 ? 99 : 500);
  }
}

// Writes made inside a loop are seen by the caller once Run returns.
TEST(ParallelForTest, ResultsAreVisibleToTheCaller) {
  ParallelFor pf(2);
  std::vector<uint64_t> out(100000);
  for (int round = 0; round < 5; ++round) {
    pf.Run(out.size(), 16, 0, [&](size_t, size_t i) { out[i] = i * 3 + static_cast<uint64_t>(round); });
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], i * 3 + static_cast<uint64_t>(round));
  }
}

}  // namespace
}  // namespace statlet
