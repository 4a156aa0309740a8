#include "exporters/worker_pool.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

namespace statlet {

WorkerPool::WorkerPool(std::string name, size_t threads, size_t max_queued, int nice)
    : name_(std::move(name)), nice_(nice), max_queued_(max_queued) {
  for (size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { Run(); });
    pthread_setname_np(threads_.back().native_handle(), name_.substr(0, 15).c_str());
  }
}

WorkerPool::~WorkerPool() { Stop(); }

bool WorkerPool::TrySubmit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::Stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  // `dropped` is destroyed here, outside the lock: a job's captures may own anything.
}

void WorkerPool::Run() {
  // On Linux a nice value is per thread.
  if (nice_ != 0) ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice_);
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace statlet
