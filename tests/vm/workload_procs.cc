// A forker with a known shape: --threads extra threads, then child processes until
// the cgroup's pids.max refuses a fork. Its report is the exact process/thread count.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "tests/vm/workload.h"

namespace statlet::vmtest {

int RunForker(const Flags& f) {
  int threads = std::atoi(f.Get("threads", "0").c_str());
  int max_children = std::atoi(f.Get("max-children", "64").c_str());
  for (int i = 0; i < threads; ++i) std::thread([] { PauseForever(); }).detach();
  int children = 0;
  int refused_errno = 0;
  while (children < max_children) {
    pid_t pid = ::fork();
    if (pid == 0) PauseForever();
    if (pid < 0) {
      refused_errno = errno;
      break;
    }
    ++children;
  }
  // A refusal other than EAGAIN (the pids controller's answer) means the test is broken.
  std::string report = "processes=" + std::to_string(1 + children) +
                       "\nthreads=" + std::to_string(1 + threads + children) +
                       "\nfork_refused_errno=" + (refused_errno ? std::strerror(refused_errno) : "none") + "\n";
  if (!WriteReport(f.Get("report"), report)) {
    std::fprintf(stderr, "statlet_vm_workload: report: %s\n", std::strerror(errno));
    return 1;
  }
  PauseForever();
}

}  // namespace statlet::vmtest
