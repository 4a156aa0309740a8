// CPU and memory workloads: a burner for cpu.max, allocators for memory.high and
// memory.max.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/vm/workload.h"

namespace statlet::vmtest {
namespace {

// Writes one byte per page so every page is really charged to the cgroup.
bool TouchAnon(uint64_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  auto* bytes_ptr = static_cast<volatile char*>(p);
  for (uint64_t off = 0; off < bytes; off += 4096) bytes_ptr[off] = 1;
  return true;
}

bool SetOomScoreAdj(int adj) {
  int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string v = std::to_string(adj);
  bool ok = ::write(fd, v.data(), v.size()) == static_cast<ssize_t>(v.size());
  ::close(fd);
  return ok;
}

}  // namespace

int RunBurn(const Flags& f) {
  int threads = std::atoi(f.Get("threads", "1").c_str());
  double seconds = std::atof(f.Get("seconds", "1").c_str());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<uint64_t> sink{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      uint64_t x = 1;
      while (std::chrono::steady_clock::now() < deadline) {
        for (int k = 0; k < 100000; ++k) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      }
      sink += x;
    });
  }
  for (auto& t : workers) t.join();
  if (!WriteReport(f.Get("report"),
                   "threads=" + std::to_string(threads) + "\nsink=" + std::to_string(sink.load() & 1) + "\n"))
    return Fail("report");
  PauseForever();
}

int RunAlloc(const Flags& f) {
  uint64_t bytes = f.GetBytes("bytes", 64 << 20);
  if (!TouchAnon(bytes)) return Fail("mmap");
  if (!WriteReport(f.Get("report"), "bytes=" + std::to_string(bytes) + "\n")) return Fail("report");
  PauseForever();
}

int RunOomLoop(const Flags& f) {
  uint64_t bytes = f.GetBytes("bytes", 256 << 20);
  int kills_wanted = std::atoi(f.Get("kills", "1").c_str());
  // The supervisor must survive its own cgroup's OOM kills: only the child is a candidate.
  if (!SetOomScoreAdj(-1000)) return Fail("oom_score_adj -1000");
  int kills = 0;
  std::string pids;
  for (int i = 0; i < kills_wanted; ++i) {
    pid_t child = ::fork();
    if (child < 0) return Fail("fork");
    if (child == 0) {
      ::prctl(PR_SET_NAME, "oom_victim", 0, 0, 0);
      if (!SetOomScoreAdj(1000)) ::_exit(4);
      TouchAnon(bytes);
      ::_exit(3);  // the limit did not stop it
    }
    int status = 0;
    if (::waitpid(child, &status, 0) != child) return Fail("waitpid");
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
      std::fprintf(stderr, "statlet_vm_workload: child %d was not OOM-killed (status %d)\n", child, status);
      return 1;
    }
    ++kills;
    if (!pids.empty()) pids += ',';
    pids += std::to_string(child);
  }
  if (!WriteReport(f.Get("report"),
                   "kills=" + std::to_string(kills) + "\nvictim_comm=oom_victim\nvictim_pids=" + pids + "\n"))
    return Fail("report");
  PauseForever();
}

}  // namespace statlet::vmtest
