// Runs a loop's iterations on the calling thread and a few helper threads kept for the
// lifetime of the object: the collector reads its ~10,000 cgroup files per collection at
// 1,000 containers this way, each read a syscall that waits on nothing but the CPU (the
// kernel formats the file), so two threads take a third off a collection there (for a
// third more CPU on a 2-vCPU VM: bench/collector/collection_bench). The helpers sleep
// between loops; a loop too short to pay for waking them runs on the caller alone.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace statlet {

class ParallelFor {
 public:
  // `threads` in all, the caller included (0 and 1: no helper).
  explicit ParallelFor(size_t threads);
  ~ParallelFor();
  ParallelFor(const ParallelFor&) = delete;
  ParallelFor& operator=(const ParallelFor&) = delete;

  size_t threads() const { return helpers_.size() + 1; }

  // Calls fn(worker, i) once for every i in [0, n), in blocks of `block` consecutive
  // indices taken in turn by whichever thread is free; `worker` (< threads()) names the
  // thread, for state of its own. Returns when every call has returned. Below `min_n`
  // iterations (or with no helper) all run on the caller as worker 0. Not reentrant: one
  // loop at a time.
  void Run(size_t n, size_t block, size_t min_n, const std::function<void(size_t worker, size_t i)>& fn);

 private:
  void Help(size_t worker);
  void Drain(size_t worker);

  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;  // bumped per loop that uses the helpers
  size_t running_ = 0;       // helpers not yet done with the current loop
  bool stop_ = false;
  // The current loop (written under mu_ before the helpers are woken).
  size_t n_ = 0, block_ = 1;
  const std::function<void(size_t, size_t)>* fn_ = nullptr;
  std::atomic<size_t> next_{0};
};

}  // namespace statlet
