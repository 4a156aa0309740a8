// Child processes for the probe tests: forked, moved into a cgroup before they run their
// body, reaped with a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>

#include "tests/bpf/test_cgroup.h"

namespace statlet::testing {

// Forks a child that runs `body` (its return value is the exit code) only after it was
// moved into `cg`. Returns the pid, or -1 (with the child killed) on failure.
pid_t SpawnInCgroup(TestCgroup& cg, const std::function<int()>& body);

// Waits for `pid` to exit; kills it when `timeout` passes first. Returns the wait status,
// or -1 on timeout.
int WaitForExit(pid_t pid, std::chrono::milliseconds timeout);

// Runs on this thread until it has used `cpu_ns` of CPU time.
void BurnCpu(int64_t cpu_ns);

// Pins the calling thread to one CPU.
bool PinToCpu(int cpu);

}  // namespace statlet::testing

namespace statlet::testing {

// Kills and reaps a child when the scope ends before the test reaped it (failed assert).
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard();
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  // Waits like WaitForExit and disarms the guard.
  int Wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_;
};

}  // namespace statlet::testing
