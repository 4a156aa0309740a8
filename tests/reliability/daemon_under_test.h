// The statlet daemon as the reliability tests attack it: the real binary in a child
// process on a loopback port, hermetic (no CRI socket, no runtime, no eBPF, one private
// cgroup subtree), and what the kernel says it costs (RSS and its peak, threads, fds,
// inotify watches, CPU time).
//
// STATLET_TEST_BINARY in the environment replaces the binary built with this tree, so the
// same tests can be pointed at an older build to show what they catch.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/child_process.h"

namespace statlet::testing {

// True in an AddressSanitizer build: memory figures there include the sanitizer's
// quarantine and shadow, so tests that bound RSS only report it.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

std::string StatletBinary();

struct ProcessCost {
  uint64_t rss_kib = 0;
  uint64_t peak_rss_kib = 0;  // VmHWM: since start or the last ResetPeakRss
  int threads = 0;
  int fds = 0;
  int inotify_watches = 0;  // over every inotify fd the process holds
  uint64_t cpu_ns = 0;
};
ProcessCost CostOf(pid_t pid);
// Restarts VmHWM from the current RSS (/proc/<pid>/clear_refs "5").
bool ResetPeakRss(pid_t pid);

struct DaemonOptions {
  std::vector<std::string> flags;  // added after the hermetic defaults (later flags win)
  std::string cgroup_subtree;      // empty: a private one that exists nowhere
  bool wait_until_serving = true;  // until /healthz answers (or the process exits)
  bool serve_cri = false;          // a CRI socket in a scratch directory
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options = {});
  ~Daemon();

  // Serving (when waited for) and still running.
  bool ok() { return error_.empty() && process_->running(); }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }  // as started, also after it exited
  const std::string& cri_socket() const { return cri_socket_; }
  std::string log() const;
  bool running() { return process_->running(); }
  // SIGTERM, then SIGKILL after `grace`; the wait status.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(10)) { return process_->Stop(grace); }
  // Waits until /healthz answers or `timeout` passes.
  bool WaitServing(std::chrono::milliseconds timeout);

 private:
  std::string dir_;
  std::string cri_socket_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<BinaryProcess> process_;
  std::string error_;
};

}  // namespace statlet::testing
