#include "base/memory_trimmer.h"

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace statlet {

size_t ResidentBytes() {
  int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char* p = buf;
  std::strtoull(p, &p, 10);  // size
  const unsigned long long pages = std::strtoull(p, nullptr, 10);
  return static_cast<size_t>(pages) * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

MemoryTrimmer::MemoryTrimmer(std::chrono::milliseconds period, size_t slack_bytes)
    : period_(period), slack_(slack_bytes) {}

MemoryTrimmer::~MemoryTrimmer() { Stop(); }

void MemoryTrimmer::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
  pthread_setname_np(thread_.native_handle(), "statlet-trim");
}

void MemoryTrimmer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t MemoryTrimmer::trims() const {
  std::lock_guard<std::mutex> lock(mu_);
  return trims_;
}

void MemoryTrimmer::Run() {
  // `settled`: the resident set of the memory in use, the level trims bring it back to.
  // A trim that frees memory leaves it unchanged (the next look trims again if the set is
  // still above it: a trim during a burst's release frees only what was freed so far). A
  // trim that frees nothing found the memory in use (an answer still being sent, or the
  // node grew): the next look comes later, doubling up to kMaxBackoff periods, and stays
  // that far apart while the set is above the level. The level is not raised to a set that
  // held that long: memory a long burst kept in use and then freed sits in malloc's free
  // lists without the resident set moving, and only a trim finds it. A node that truly
  // grew costs one fruitless trim every kMaxBackoff periods (8 s at 250 ms), which walks
  // only the free lists.
  constexpr int kMaxBackoff = 32;
  size_t settled = ResidentBytes();
  int backoff = 1;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, period_ * backoff, [this] { return stop_; })) return;
    }
    const bool released = release_ && release_() >= slack_ / 4;
    const size_t now = ResidentBytes();
    if (!released && now <= settled + slack_) {
      settled = std::min(settled, now);
      backoff = 1;
      continue;
    }
    malloc_trim(0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++trims_;
    }
    const size_t after = ResidentBytes();
    if (now - std::min(now, after) >= slack_) {
      backoff = 1;
    } else {
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
  }
}

}  // namespace statlet
