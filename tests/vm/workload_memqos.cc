// Memory QoS workloads: an allocator that livelocks at memory.high, one that grows step by
// step on command, and a reader whose page cache is throttled (and freed) at memory.high.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "tests/vm/workload.h"

namespace statlet::vmtest {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnStop(int) { g_stop = 1; }

bool InstallStop() {
  struct sigaction sa = {};
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  return ::sigaction(SIGUSR1, &sa, nullptr) == 0;
}

bool FileExists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

// Touches fresh anonymous pages in a loop until SIGUSR1: maps a chunk, writes every page,
// and once --window bytes are mapped unmaps the oldest chunk, so the working set stays
// above memory.high (set well below --window) and below memory.max. Without swap nothing
// it holds can be reclaimed: every charge past memory.high is throttled. Then holds what it
// has and reports how many chunks it touched.
int RunAllocLoop(const Flags& f) {
  const uint64_t chunk = f.GetBytes("chunk", 1 << 20);
  const uint64_t window = f.GetBytes("window", 64 << 20);
  if (!InstallStop()) return Fail("sigaction");
  std::deque<void*> mapped;
  uint64_t chunks = 0;
  while (!g_stop) {
    void* p = ::mmap(nullptr, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return Fail("mmap");
    auto* bytes = static_cast<volatile char*>(p);
    for (uint64_t off = 0; off < chunk && !g_stop; off += 4096) bytes[off] = 1;
    mapped.push_back(p);
    ++chunks;
    if (mapped.size() * chunk > window) {
      ::munmap(mapped.front(), chunk);
      mapped.pop_front();
    }
  }
  if (!WriteReport(f.Get("report"), "chunks=" + std::to_string(chunks) + "\n")) return Fail("report");
  PauseForever();
}

// Grows by --step bytes each time the file <--go>/<k> appears (k = 1..--steps), reporting
// "step=k" after each, then holds what it has.
int RunAllocSteps(const Flags& f) {
  const uint64_t step = f.GetBytes("step", 16 << 20);
  const int steps = std::atoi(f.Get("steps", "3").c_str());
  const std::string go = f.Get("go");
  for (int k = 1; k <= steps; ++k) {
    while (!FileExists(go + "/" + std::to_string(k))) ::usleep(20000);
    void* p = ::mmap(nullptr, step, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return Fail("mmap");
    auto* bytes = static_cast<volatile char*>(p);
    for (uint64_t off = 0; off < step; off += 4096) bytes[off] = 1;
    if (!WriteReport(f.Get("report"), "step=" + std::to_string(k) + "\n")) return Fail("report");
  }
  PauseForever();
}

// Reads --path through the page cache over and over until SIGUSR1: its clean cache pages
// are charged to the cgroup and reclaimed cheaply at memory.high (normal throttling).
int RunCacheReader(const Flags& f) {
  const std::string path = f.Get("path");
  if (!InstallStop()) return Fail("sigaction");
  std::vector<char> buf(1 << 20);
  uint64_t passes = 0, bytes = 0;
  while (!g_stop) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Fail("open");
    ssize_t n;
    while (!g_stop && (n = ::read(fd, buf.data(), buf.size())) > 0) bytes += static_cast<uint64_t>(n);
    ::close(fd);
    ++passes;
  }
  if (!WriteReport(f.Get("report"), "passes=" + std::to_string(passes) + "\nbytes=" + std::to_string(bytes) + "\n"))
    return Fail("report");
  PauseForever();
}

}  // namespace statlet::vmtest
