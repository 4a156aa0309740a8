// A bounded wait for a child's signal on a pipe: a child that fails before it signals ends
// the wait at once (it exited) or at a deadline (it hangs), with a message that says which,
// instead of leaving the test's read blocked until ctest's timeout.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <string>

namespace statlet::testing {

// Reads `n` bytes the child `pid` writes on `fd` (a pipe's read end) within `timeout`.
// "" when they came, else why not: the child exited (its status), closed the pipe, or the
// deadline passed. The child stays unreaped (its owner reaps it).
inline std::string ReadFromChild(int fd, void* buf, size_t n, pid_t pid, std::chrono::milliseconds timeout) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return "pidfd_open: errno " + std::to_string(errno);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto* out = static_cast<char*>(buf);
  size_t got = 0;
  std::string why;
  while (got < n) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      why = "the child sent nothing within " + std::to_string(timeout.count()) + " ms";
      break;
    }
    pollfd fds[2] = {{fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
    if (poll(fds, 2, static_cast<int>(left)) < 0) {
      if (errno == EINTR) continue;
      why = "poll: errno " + std::to_string(errno);
      break;
    }
    if (fds[0].revents != 0) {
      const ssize_t r = read(fd, out + got, n - got);
      if (r > 0) {
        got += static_cast<size_t>(r);
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      why = r == 0 ? "the child closed the pipe before it signalled" : "read: errno " + std::to_string(errno);
      break;
    }
    if (fds[1].revents != 0) {
      siginfo_t info{};
      waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
      why = "the child exited (" + std::string(info.si_code == CLD_EXITED ? "status " : "signal ") +
            std::to_string(info.si_status) + ") before it signalled";
      break;
    }
  }
  close(pidfd);
  return why;
}

}  // namespace statlet::testing
