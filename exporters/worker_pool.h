// A fixed set of threads running submitted jobs from a bounded queue. Submitting to a full
// queue fails at once (the caller answers "busy"), so work a client can ask for never
// piles up beyond what the queue holds.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace statlet {

class WorkerPool {
 public:
  // `name` is given to the threads (visible in /proc/<pid>/task/*/comm, at most 15 chars);
  // `nice` (0..19) lowers their scheduling priority, for work a client can make the daemon
  // do at will.
  WorkerPool(std::string name, size_t threads, size_t max_queued, int nice = 0);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False when the queue is full or the pool is stopping; the job is then dropped.
  bool TrySubmit(std::function<void()> job);
  // Drops queued jobs, lets running ones finish and joins the threads. Idempotent.
  void Stop();

 private:
  void Run();

  std::string name_;
  int nice_;
  size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace statlet
