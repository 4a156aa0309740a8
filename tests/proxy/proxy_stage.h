// ProxyStage: a private containerd (tests/e2e/containerd_harness.sh: Debian's containerd
// and runc, CNI bridge, an image built offline) and statlet in proxy mode in front of it,
// under a scratch directory and a cgroup root of this process's own. statlet can be
// killed and started again on the same socket, containerd stopped and started again over
// its state. Both sockets are at hand, so every call can be made through statlet and
// straight to containerd.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "base/status.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"

namespace statlet::proxy_test {

struct StageOptions {
  std::string image = "localhost/statlet/busybox:1";
  std::vector<std::string> statlet_flags;  // after the stage's own (later flags win)
};

class ProxyStage {
 public:
  static StatusOr<std::unique_ptr<ProxyStage>> Start(const StageOptions& options);
  ~ProxyStage();
  ProxyStage(const ProxyStage&) = delete;
  ProxyStage& operator=(const ProxyStage&) = delete;

  // statlet on the stage's socket, proxy mode; returns once a Version call through the
  // socket is answered (containerd's answer), or an error after `timeout`. `extra` flags
  // come after the stage's.
  Status StartStatlet(const std::vector<std::string>& extra = {},
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Sends `sig` to statlet and reaps it (SIGTERM: waits for its own exit).
  void StopStatlet(int sig = SIGTERM);
  // The stage's statlet command line: proxy mode or stats mode, on `socket`, metrics on
  // 127.0.0.1:`port`, over the stage's cgroups and containerd.
  std::vector<std::string> StatletArgs(bool proxy, const std::string& socket, int port) const;
  pid_t statlet_pid() const { return statlet_pid_; }
  bool statlet_running();

  // containerd alone, its pods and state kept (harness stop-daemon / start-daemon).
  Status StopContainerd();
  Status StartContainerd();
  pid_t containerd_pid() const;

  const std::string& dir() const { return dir_; }
  const std::string& cgroup_root() const { return cgroup_root_; }
  const std::string& image() const { return image_; }
  std::string containerd_socket() const { return dir_ + "/containerd.sock"; }
  std::string statlet_socket() const { return dir_ + "/statlet.sock"; }
  int metrics_port() const { return metrics_port_; }
  // The last lines of statlet's and containerd's logs, for failure messages.
  std::string Logs() const;

 private:
  ProxyStage() = default;
  Status Harness(const std::vector<std::string>& args);

  std::string harness_;
  std::string dir_;
  std::string cgroup_root_;
  std::string image_;
  std::vector<std::string> statlet_flags_;
  bool harness_started_ = false;
  pid_t statlet_pid_ = -1;
  int metrics_port_ = 0;
};

// A channel to a CRI socket as the kubelet dials one: authority "localhost", 16 MiB
// receive limit, no retries of its own. `fresh` gives a connection of its own (not shared
// with other channels of the process).
std::shared_ptr<grpc::Channel> KubeletChannel(const std::string& socket, bool fresh = false);

// A context with a deadline `timeout` from now.
std::unique_ptr<grpc::ClientContext> Ctx(std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Cgroups in every hierarchy and pod uids: the live tests' shared ones.
using ::statlet::testing::CgroupMounts;
using ::statlet::testing::NewUid;
using ::statlet::testing::ProcessesIn;
using ::statlet::testing::RemoveCgroupEverywhere;
// The last `lines` lines of a file.
std::string Tail(const std::string& path, size_t lines);

}  // namespace statlet::proxy_test
