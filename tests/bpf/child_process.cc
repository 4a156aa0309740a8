#include "tests/bpf/child_process.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thread>

namespace statlet::testing {

pid_t SpawnInCgroup(TestCgroup& cg, const std::function<int()>& body) {
  int go[2];
  if (pipe(go) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(go[1]);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(120);  // parent gave up
    _exit(body());
  }
  close(go[0]);
  bool moved = cg.AddProcess(pid);
  if (moved) {
    moved = write(go[1], "g", 1) == 1;
  }
  close(go[1]);
  if (!moved) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

int WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval
  }
}

void BurnCpu(int64_t cpu_ns) {
  timespec ts;
  auto now = [&] {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  };
  const int64_t end = now() + cpu_ns;
  volatile uint64_t x = 0;
  while (now() < end) {
    for (int i = 0; i < 1000; i++) x = x + i;
  }
}

bool PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

}  // namespace statlet::testing

namespace statlet::testing {

ChildGuard::~ChildGuard() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

int ChildGuard::Wait(std::chrono::milliseconds timeout) {
  int status = WaitForExit(pid_, timeout);
  pid_ = -1;
  return status;
}

}  // namespace statlet::testing
