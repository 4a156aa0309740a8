// CriDriver: plays the kubelet against a real runtime over CRI for the e2e stage. Starts
// pods under a cgroup root of the test's own (kubelet's cgroupfs layout below it), creates
// and starts containers with the full sandbox config, and on removal deletes the pod
// cgroup in every hierarchy as the kubelet does (containerd leaves it behind).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "base/status.h"
#include "proto/api.grpc.pb.h"
#include "proto/image_service.grpc.pb.h"
#include "tests/e2e/cri_lifecycle.pb.h"
#include "tests/support/live_cgroup.h"

namespace statlet::e2e {

namespace v1 = ::runtime::v1;
namespace lifecycle = ::statlet::e2e::lifecycle;

// A channel to a CRI unix socket, with no message size cap (50 pods of metrics).
std::shared_ptr<grpc::Channel> CriChannel(const std::string& socket_path);

// A deadline-bound context for one call.
std::unique_ptr<grpc::ClientContext> CallContext(std::chrono::milliseconds timeout = std::chrono::seconds(30));

struct PodSpec {
  std::string name;
  std::string namespace_;
  std::map<std::string, std::string> labels;
  // The node's network and PID namespaces (hostNetwork, hostPID), as the kubelet asks.
  bool host_network = false;
  bool host_pid = false;
  bool privileged = false;         // a privileged container needs a privileged sandbox
  std::string log_directory = "";  // where the runtime writes its containers' logs ("": none)
  // The pod's QoS class as the kubelet's cgroupfs layout names it: "guaranteed" (the pod
  // right under kubepods), "burstable" or "besteffort".
  std::string qos_class = "besteffort";
};

struct ContainerSpec {
  std::string name;
  std::vector<std::string> command;  // run in the image; e.g. {"sh", "-c", "…"}
  // linux.resources as the kubelet sends them: the memory limit (0: none) and the cgroup v2
  // knobs it passes through `unified` (Memory QoS: memory.min, memory.high).
  int64_t memory_limit_bytes = 0;
  std::map<std::string, std::string> unified = {};
};

struct Pod {
  std::string id;
  std::string uid;
  std::string name, namespace_;
  std::string cgroup_parent;  // relative to each hierarchy's root
  lifecycle::PodSandboxConfig config;
};

class CriDriver {
 public:
  // socket: the runtime's CRI socket; cgroup_root: where the pods go ("/statlet-e2e-123");
  // image: what every container and the sandbox run.
  CriDriver(const std::string& socket, std::string cgroup_root, std::string image);

  // Polls until the runtime's CRI plugin knows the image (imported with ctr).
  Status WaitForImage(std::chrono::milliseconds timeout) { return WaitForImage(image_, timeout); }
  Status WaitForImage(const std::string& image, std::chrono::milliseconds timeout);
  StatusOr<Pod> RunPod(const PodSpec& spec);
  StatusOr<std::string> StartContainer(const Pod& pod, const ContainerSpec& spec);
  // Creates and starts a container from a full config (its image, mounts, security context
  // as given; the kubelet's labels are added).
  StatusOr<std::string> StartContainer(const Pod& pod, lifecycle::ContainerConfig config);
  StatusOr<lifecycle::ContainerStatus> ContainerStatus(const std::string& id);
  // Stops (SIGKILL at once) and removes.
  Status RemoveContainer(const std::string& id);
  // Stops and removes the sandbox and its containers, then the pod cgroup.
  Status RemovePod(const Pod& pod);

  v1::RuntimeService::Stub* runtime() { return runtime_.get(); }
  const std::string& image() const { return image_; }
  const std::string& cgroup_root() const { return cgroup_root_; }

 private:
  std::string cgroup_root_;
  std::string image_;
  // A lifecycle call on the runtime's RuntimeService (method: "RunPodSandbox", …).
  template <typename Req, typename Resp>
  Status Call(const char* method, const Req& req, Resp* resp);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::RuntimeService::Stub> runtime_;
  std::unique_ptr<v1::ImageService::Stub> images_;
};

// Cgroups in every hierarchy and pod uids: the live tests' shared ones.
using ::statlet::testing::CgroupMounts;
using ::statlet::testing::NewUid;
using ::statlet::testing::RemoveCgroupEverywhere;

}  // namespace statlet::e2e
