// E2eStage: one private containerd (started by containerd_harness.sh, in its own network
// namespace) and one statlet agent watching it, both under a scratch directory and a
// cgroup root of this process's own. The test and the bench build on it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tests/e2e/cri_driver.h"
#include "tests/support/statlet_daemon.h"

namespace statlet::e2e {

struct StageOptions {
  std::string agent_binary;    // the statlet daemon
  std::string harness_script;  // containerd_harness.sh
  std::string image = "localhost/statlet/busybox:1";
  // Extra agent flags (daemon flags or --runtime.refresh-period / --cri.max-age).
  std::vector<std::string> agent_flags;
  // Collect every cgroup of the host (as a node agent does), not only the stage's root.
  bool whole_host = false;
};

class E2eStage {
 public:
  static StatusOr<std::unique_ptr<E2eStage>> Start(const StageOptions& options);
  ~E2eStage();
  E2eStage(const E2eStage&) = delete;
  E2eStage& operator=(const E2eStage&) = delete;

  // Stops the agent (SIGTERM, by PID) and the harness' containerd; removes every trace.
  void Stop();

  CriDriver& driver() { return *driver_; }
  v1::RuntimeService::Stub* containerd() { return driver_->runtime(); }
  v1::RuntimeService::Stub* statlet() { return statlet_.get(); }
  int metrics_port() const { return agent_->port(); }
  pid_t agent_pid() const { return agent_->pid(); }
  // containerd and the shims it started: the processes that answer its stats calls.
  std::vector<pid_t> ContainerdPids() const;
  const std::string& dir() const { return dir_; }
  const std::string& cgroup_root() const { return cgroup_root_; }
  // The last lines of the agent's and containerd's logs, for failure messages.
  std::string Logs() const;

 private:
  E2eStage() = default;
  Status StartAgent(const StageOptions& options);

  std::string dir_;
  std::string cgroup_root_;
  std::string harness_;
  bool harness_started_ = false;
  std::unique_ptr<testing::Daemon> agent_;
  std::unique_ptr<CriDriver> driver_;
  std::shared_ptr<grpc::Channel> statlet_channel_;
  std::unique_ptr<v1::RuntimeService::Stub> statlet_;
};

// ---------------------------------------------------------------------------- helpers
// Runs a command (found on PATH) to completion; its output goes to `log`.
Status RunCommand(const std::vector<std::string>& argv, const std::string& log);
// The last `lines` lines of a file.
std::string Tail(const std::string& path, size_t lines);
// Calls `check` until it returns "" or `timeout` passes; returns its last answer (what is
// still missing).
std::string Eventually(std::chrono::milliseconds timeout, const std::function<std::string()>& check);

// One sample of the Prometheus text format.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
StatusOr<std::vector<Sample>> ParseExposition(const std::string& text);

// utime + stime of a process, in nanoseconds (0 when it is gone).
uint64_t ProcessCpuNs(pid_t pid);
// Open fds of a process (-1 when it is gone).
int CountFds(pid_t pid);

}  // namespace statlet::e2e
