// PullStage: the e2e stage (a private containerd + runc, statlet watching it) plus what
// image pulls need: Debian's docker-registry and the tests' RateLimitedProxy, both in
// containerd's network namespace on its loopback (containerd pulls through the proxy),
// images built by the test (busybox base + a random layer) and pushed with skopeo, and
// clients of statlet's and containerd's image services and containerd's content store.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "base/status.h"
#include "proto/containerd_content.grpc.pb.h"
#include "proto/image_service.grpc.pb.h"
#include "tests/e2e/e2e_stage.h"
#include "tests/pull/rate_limited_proxy.h"
#include "tests/support/statlet_daemon.h"

namespace statlet::pulltest {

namespace v1 = ::runtime::v1;
namespace kep = ::statlet::kep3542;
namespace content = ::containerd::services::content::v1;

// The registry's bytes reach containerd at this rate: a 64 MiB layer takes about 3 s.
inline constexpr uint64_t kDefaultRate = 20ull << 20;

struct TestImage {
  std::string name;  // "statlet/<name>"
  std::string ref;   // through the proxy: "127.0.0.1:<port>/statlet/<name>:1"
  std::string manifest_digest, config_digest;
  struct Layer {
    std::string digest;
    uint64_t size = 0;
  };
  std::vector<Layer> layers;
  uint64_t total = 0;                                 // sum of the layer sizes
  const Layer& big() const { return layers.back(); }  // the random layer
};

// Another statlet daemon against the stage's containerd, with flags of its own.
struct ExtraAgent {
  pid_t pid = -1;
  std::string socket;
  int metrics_port = 0;
  std::string log;
};

class PullStage {
 public:
  static StatusOr<std::unique_ptr<PullStage>> Start(std::vector<std::string> agent_flags = {});
  ~PullStage();

  // Builds an image whose second layer is `random_mib` MiB drawn from `seed`, pushes it to
  // the registry (not through the proxy) and returns how to pull it through the proxy.
  StatusOr<TestImage> PushImage(const std::string& name, int random_mib, const std::string& seed);
  // Removes the image from containerd and waits until its random layer is gone from the
  // content store (neither committed nor being written), so the next pull downloads it.
  Status EnsureAbsent(const TestImage& image, std::chrono::milliseconds timeout = std::chrono::seconds(15));
  // Whether containerd's CRI knows the image (its ImageStatus).
  StatusOr<bool> ContainerdHasImage(const std::string& ref);
  // Layer ingests containerd is writing now (refs).
  StatusOr<std::vector<std::string>> ContainerdIngests();
  // Runs containerd's garbage collection now (a lease created and deleted with --sync):
  // what no lease or image holds goes, half-written ingests included.
  Status CollectGarbage();

  // Starts `ctr -n <ns> images pull --plain-http <ref>` in containerd's network namespace
  // (ctr fetches itself and writes through containerd's content service): a pull no statlet
  // carries. Its pid; the caller waits with WaitPid.
  StatusOr<pid_t> StartCtrPull(const std::string& ns, const std::string& ref);
  // Removes the image record `ref` from namespace `ns` (`ctr images rm --sync`).
  Status CtrRemoveImage(const std::string& ns, const std::string& ref);

  // containerd alone stopped (SIGTERM) and started again over its state, in its network
  // namespace (tests/e2e/containerd_harness.sh stop-daemon / start-daemon): the registry,
  // the proxy and the agents stay.
  Status StopContainerd();
  Status StartContainerd();

  StatusOr<ExtraAgent> StartAgent(const std::string& name, const std::vector<std::string>& flags);
  void StopAgent(ExtraAgent* agent);

  RateLimitedProxy& proxy() { return *proxy_; }
  e2e::E2eStage& e2e() { return *e2e_; }
  const std::string& dir() const { return e2e_->dir(); }
  std::string statlet_socket() const { return e2e_->dir() + "/statlet-cri.sock"; }
  v1::ImageService::Stub* statlet() { return statlet_.get(); }
  v1::ImageService::Stub* containerd() { return containerd_.get(); }
  content::Content::Stub* content() { return content_.get(); }
  std::unique_ptr<v1::ImageService::Stub> ImagesAt(const std::string& socket);
  std::string Logs() const;

 private:
  PullStage() = default;
  Status StartRegistry();
  pid_t containerd_pid_ = -1;
  pid_t registry_pid_ = -1;
  int registry_port_ = 5000;
  std::unique_ptr<e2e::E2eStage> e2e_;
  std::unique_ptr<RateLimitedProxy> proxy_;
  std::unique_ptr<v1::ImageService::Stub> statlet_, containerd_;
  std::unique_ptr<content::Content::Stub> content_;
  std::vector<std::unique_ptr<testing::Daemon>> agents_;
};

// Runs `fn` on a thread inside the network namespace of `pid` (sockets it makes live there).
Status InNetns(pid_t pid, const std::function<Status()>& fn);
// The exit status of `pid` once it exited (-1 when `timeout` passed first; it is then killed).
int WaitPid(pid_t pid, std::chrono::milliseconds timeout);
// Runs a command to completion with its output in `log`.
Status Run(const std::vector<std::string>& argv, const std::string& log);
// A context for a call to the containerd content service (namespace k8s.io).
std::unique_ptr<grpc::ClientContext> ContentContext(std::chrono::milliseconds timeout = std::chrono::seconds(10));

// A PullImageWithProgress call run to its end on a thread of its own, each message kept
// with the moment it arrived.
struct Report {
  std::chrono::steady_clock::time_point at;
  kep::PullImageWithProgressResponse msg;
};
class ProgressCall {
 public:
  ProgressCall(v1::ImageService::Stub* stub, kep::PullImageWithProgressRequest request);
  ~ProgressCall();
  // Cancels the call (the client goes away).
  void Cancel();
  // Waits until the call ends; its status.
  grpc::Status Wait(std::chrono::milliseconds timeout = std::chrono::seconds(120));
  bool done() const;
  std::vector<Report> reports() const;
  // The last offset received (0 before any).
  uint64_t last_offset() const;
  std::chrono::steady_clock::time_point started() const { return started_; }
  std::chrono::steady_clock::time_point ended() const;

 private:
  grpc::ClientContext ctx_;
  std::chrono::steady_clock::time_point started_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Report> reports_;
  bool done_ = false;
  grpc::Status status_;
  std::chrono::steady_clock::time_point ended_;
  std::thread thread_;
};

// A request: image, granularity, interval, timeout (negative: unset), detailed.
kep::PullImageWithProgressRequest ProgressRequest(const std::string& image, kep::PullImageProgressGranularity g,
                                                  uint64_t interval, int no_progress_timeout, bool detailed);

}  // namespace statlet::pulltest
