// Hands memory that malloc keeps after a burst back to the kernel. glibc returns freed
// memory only from the top of a heap; a burst of small allocations freed out of order (a
// client flooding a socket with frames, a megabyte answer) leaves the resident set at its
// peak although almost nothing is in use. A thread looks at the resident set every
// `period` and calls malloc_trim when it grew by more than `slack` since the last look
// that found it settled: one read of /proc/self/statm when nothing happens. A trim that
// frees nothing (the memory is still in use) is tried again later, backing off up to 32
// periods and no further, so that what a burst leaves behind goes back however long the
// burst held it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace statlet {

class MemoryTrimmer {
 public:
  MemoryTrimmer(std::chrono::milliseconds period, size_t slack_bytes);
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // Runs `release` at every look, before it: an owner drops there what nobody can use any
  // more (the Sampler's stale snapshot) and says how many bytes that freed. When that is a
  // quarter of the slack or more, the look trims whatever the resident set is (a small
  // release is left to malloc's free lists: a trim takes the heaps' locks). Set before Start.
  void SetRelease(std::function<size_t()> release) { release_ = std::move(release); }
  void Start();
  void Stop();
  uint64_t trims() const;

 private:
  void Run();

  std::chrono::milliseconds period_;
  size_t slack_;
  std::function<size_t()> release_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t trims_ = 0;
  std::thread thread_;
};

// The process's resident set in bytes (/proc/self/statm); 0 when unreadable.
size_t ResidentBytes();

}  // namespace statlet
