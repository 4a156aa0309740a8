#include "base/parallel_for.h"

#include <algorithm>

namespace statlet {

ParallelFor::ParallelFor(size_t threads) {
  for (size_t w = 1; w < threads; ++w) helpers_.emplace_back([this, w] { Help(w); });
}

ParallelFor::~ParallelFor() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : helpers_) t.join();
}

void ParallelFor::Drain(size_t worker) {
  for (;;) {
    const size_t begin = next_.fetch_add(block_, std::memory_order_relaxed);
    if (begin >= n_) return;
    const size_t end = std::min(n_, begin + block_);
    for (size_t i = begin; i < end; ++i) (*fn_)(worker, i);
  }
}

void ParallelFor::Help(size_t worker) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    lk.unlock();
    Drain(worker);
    lk.lock();
    if (--running_ == 0) done_.notify_one();
  }
}

void ParallelFor::Run(size_t n, size_t block, size_t min_n, const std::function<void(size_t, size_t)>& fn) {
  if (helpers_.empty() || n < std::max<size_t>(min_n, 2)) {
    for (size_t i = 0; i < n; ++i) fn(0, i);
    return;
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    n_ = n;
    block_ = std::max<size_t>(block, 1);
    fn_ = &fn;
    next_.store(0, std::memory_order_relaxed);
    running_ = helpers_.size();
    ++generation_;
  }
  wake_.notify_all();
  Drain(0);
  std::unique_lock<std::mutex> lk(mu_);
  done_.wait(lk, [&] { return running_ == 0; });
  fn_ = nullptr;
}

}  // namespace statlet
