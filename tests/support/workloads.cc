#include "tests/support/workloads.h"

#include <sched.h>
#include <time.h>

namespace statlet::testing {
namespace {

int64_t ThreadCpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

void BurnCpu(int64_t cpu_ns) {
  const int64_t end = ThreadCpuNs() + cpu_ns;
  volatile uint64_t x = 0;
  while (ThreadCpuNs() < end) {
    for (int i = 0; i < 1000; i++) x = x + i;
  }
}

uint64_t SpinForever() {
  volatile uint64_t x = 0;
  for (;;) x = x + 1;
}

bool PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

}  // namespace statlet::testing
