// The statlet daemon as every live test runs it: the real binary in a child process on a
// loopback port, hermetic by default (no CRI socket, no runtime, no eBPF, one cgroup
// subtree; a test's flags come after those and win), waited for until it serves, and what
// the kernel says it costs (RSS and its peak, threads, fds, inotify watches, CPU time).
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
// The connected TCP sockets `pid` holds whose local port is `port` (a server's accepted
// connections; its listener is not counted): from /proc/<pid>/fd and /proc/net/tcp{,6}.
int AcceptedConnections(pid_t pid, int port);
// Restarts VmHWM from the current RSS (/proc/<pid>/clear_refs "5").
bool ResetPeakRss(pid_t pid);

// One GET of /healthz on 127.0.0.1:`port` within 500 ms: whether the web server answered
// (any status: with basic auth on, /healthz answers 401). The daemon starts it last.
bool HealthzAnswers(int port);

struct DaemonOptions {
  std::vector<std::string> flags;  // added after the hermetic defaults (later flags win)
  std::string cgroup_subtree;      // --collector.subtree; empty: a private one that exists nowhere
  bool wait_until_serving = true;  // until /healthz answers (or the process exits)
  bool serve_cri = false;          // a CRI socket (waited for when serving is)
  bool wait_until_ready = false;   // also until /readyz answers 200: the first collection done
  std::string cri_socket;          // with serve_cri: where; empty: <dir>/cri.sock
  std::string dir;                 // the log's directory, kept; empty: a scratch one, removed
  std::string name = "statlet";    // the log is <dir>/<name>.log
  std::string binary;              // empty: StatletBinary()
  std::chrono::milliseconds start_timeout{20000};
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options = {});
  ~Daemon();

  // Serving (when waited for) and still running.
  bool ok() { return error_.empty() && process_->running(); }
  // Why it is not: what it was waited for and the log's last lines.
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }  // as started, also after it exited
  const std::string& cri_socket() const { return cri_socket_; }
  const std::string& log_path() const { return log_path_; }
  std::string log() const;
  bool running() { return process_->running(); }
  // SIGTERM, then SIGKILL after `grace`; the wait status.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(10)) { return process_->Stop(grace); }
  // Waits until /healthz answers (any status: with basic auth on it is 401) or `timeout`
  // passes; false when the process exited.
  bool WaitServing(std::chrono::milliseconds timeout);
  // Waits until /readyz answers 200 (the first collection is done) or `timeout` passes.
  bool WaitReady(std::chrono::milliseconds timeout);

 private:
  // Waits for what `options` asks; an error names what did not come.
  void WaitStarted(const DaemonOptions& options);

  std::string dir_;
  bool own_dir_ = false;
  std::string log_path_;
  std::string cri_socket_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<BinaryProcess> process_;
  std::string error_;
};

}  // namespace statlet::testing
