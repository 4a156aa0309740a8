#include "base/memory_trimmer.h"

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

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
  size_t settled = ResidentBytes();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, period_, [this] { return stop_; })) return;
    }
    const size_t now = ResidentBytes();
    if (now > settled + slack_) {
      malloc_trim(0);
      std::lock_guard<std::mutex> lock(mu_);
      ++trims_;
    }
    // What remains after a trim (or a quiet period) is the new baseline: live memory grows
    // and shrinks with the node, and only growth beyond it is worth a trim.
    const size_t after = ResidentBytes();
    settled = after < settled || now > settled + slack_ ? after : settled;
  }
}

}  // namespace statlet
