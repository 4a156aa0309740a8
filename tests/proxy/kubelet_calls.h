// What a kubelet sends, built from upstream cri-api v0.36.3 (tests/cri/upstream): the
// RunPodSandbox and CreateContainer configs of its cgroupfs layout, and the calls of one
// pod's life in its order. Plus how two answers are compared: the same call through
// statlet and straight to containerd must answer alike, up to what legitimately differs
// (times, and for twin objects their ids, names and addresses).
#pragma once

// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

namespace statlet::proxy_test {

namespace v1 = ::runtime::v1;

struct Pod {
  std::string id;  // the sandbox id, once run
  std::string uid, name, namespace_;
  std::string cgroup_parent;  // relative to each hierarchy's root
  std::string log_directory;
  v1::PodSandboxConfig config;
};

// A pod as the kubelet describes it: metadata, labels, annotations, hostname, log
// directory (created here, as the kubelet does), DNS, cgroup parent under
// `cgroup_root`/kubepods/besteffort, namespace options.
Pod NewPod(const std::string& cgroup_root, const std::string& scratch_dir, const std::string& name);
// CreateContainer as the kubelet sends it: the container config (image, command, labels,
// annotations, log path, resources, security context) and the full sandbox config.
v1::CreateContainerRequest CreateRequest(const Pod& pod, const std::string& name, const std::string& image,
                                         const std::vector<std::string>& command);

// The kubelet's two connections (runtime and image service) to one socket.
class KubeletClient {
 public:
  explicit KubeletClient(const std::string& socket);
  v1::RuntimeService::Stub& runtime() { return *runtime_; }
  v1::ImageService::Stub& images() { return *images_; }

 private:
  std::shared_ptr<grpc::Channel> runtime_channel_, image_channel_;
  std::unique_ptr<v1::RuntimeService::Stub> runtime_;
  std::unique_ptr<v1::ImageService::Stub> images_;
};

// Runs `pod`'s sandbox as the kubelet does; sets pod->id.
grpc::Status RunPod(KubeletClient& kubelet, Pod* pod);
// Creates and starts a container `name` running `command` in the running `pod`, as the
// kubelet does (CreateContainer, StartContainer); sets *container_id once created.
grpc::Status CreateAndStart(KubeletClient& kubelet, const Pod& pod, const std::string& name, const std::string& image,
                            const std::vector<std::string>& command, std::string* container_id);
// Stops and removes `pod`'s sandbox as the kubelet does; the first call's error, if any.
grpc::Status StopAndRemovePod(KubeletClient& kubelet, const Pod& pod);
// A container's command that keeps it running until it is stopped.
inline const std::vector<std::string> kSleepForGood = {"sleep", "2147483647"};

// One call's outcome as a caller sees it.
struct Answer {
  grpc::Status status;
  std::unique_ptr<google::protobuf::Message> response;             // parsed, when OK
  std::vector<std::unique_ptr<google::protobuf::Message>> stream;  // server-streaming answers
  std::multimap<std::string, std::string> trailers;
};
// Calls `path` with `request` on `channel` as the kubelet would (unary or server
// streaming, from upstream's descriptor of the method), parsing what comes back.
Answer CallMethod(grpc::Channel* channel, const google::protobuf::MethodDescriptor& method,
                  const google::protobuf::Message& request, std::chrono::milliseconds timeout);
// Upstream's descriptors of runtime.v1.RuntimeService and ImageService (v0.36.3).
const google::protobuf::ServiceDescriptor& UpstreamRuntimeService();
const google::protobuf::ServiceDescriptor& UpstreamImageService();

// Rewrites, in place, what may differ between two answers that should be alike: every
// occurrence of a key of `tokens` in a string (field, map key or value) becomes its value;
// times (*_at, timestamp) and addresses (ip, additional_ips) are cleared; a streaming URL
// keeps only its scheme, host and port.
void Normalize(google::protobuf::Message* message, const std::map<std::string, std::string>& tokens);
// "" when equal (repeated fields compared as sets), else the differences.
std::string Differences(const google::protobuf::Message& a, const google::protobuf::Message& b);
// "code: message" of a status, for test messages.
std::string Describe(const grpc::Status& s);

}  // namespace statlet::proxy_test
