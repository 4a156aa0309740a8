#include "tests/e2e/cri_driver.h"

#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>

namespace statlet::e2e {
namespace {

Status FromGrpc(const char* call, const grpc::Status& s) {
  if (s.ok()) return Status::Ok();
  return Unavailable(std::string(call) + ": " + std::to_string(s.error_code()) + " " + s.error_message());
}

}  // namespace

std::shared_ptr<grpc::Channel> CriChannel(const std::string& socket_path) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  return grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
}

std::unique_ptr<grpc::ClientContext> CallContext(std::chrono::milliseconds timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

CriDriver::CriDriver(const std::string& socket, std::string cgroup_root, std::string image)
    : cgroup_root_(std::move(cgroup_root)),
      image_(std::move(image)),
      channel_(CriChannel(socket)),
      runtime_(v1::RuntimeService::NewStub(channel_)),
      images_(v1::ImageService::NewStub(channel_)) {}

template <typename Req, typename Resp>
Status CriDriver::Call(const char* method, const Req& req, Resp* resp) {
  const std::string path = std::string("/runtime.v1.RuntimeService/") + method;
  grpc::internal::RpcMethod rpc(path.c_str(), grpc::internal::RpcMethod::NORMAL_RPC, channel_);
  auto ctx = CallContext();
  return FromGrpc(method, grpc::internal::BlockingUnaryCall<Req, Resp>(channel_.get(), rpc, ctx.get(), req, resp));
}

Status CriDriver::WaitForImage(const std::string& image, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    v1::ImageStatusRequest req;
    req.mutable_image()->set_image(image);
    v1::ImageStatusResponse resp;
    grpc::Status s = images_->ImageStatus(CallContext(std::chrono::seconds(2)).get(), req, &resp);
    if (s.ok() && resp.has_image()) return Status::Ok();
    last = s.ok() ? "not listed yet" : s.error_message();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Unavailable("image " + image + " not known to the runtime: " + last);
}

StatusOr<Pod> CriDriver::RunPod(const PodSpec& spec) {
  Pod pod;
  pod.uid = NewUid();
  pod.name = spec.name;
  pod.namespace_ = spec.namespace_;
  // The kubelet's cgroupfs layout, under the test's own root.
  const std::string qos_dir = spec.qos_class == "guaranteed" ? "" : spec.qos_class + "/";
  pod.cgroup_parent = cgroup_root_ + "/kubepods/" + qos_dir + "pod" + pod.uid;
  lifecycle::PodSandboxConfig& cfg = pod.config;
  cfg.mutable_metadata()->set_name(spec.name);
  cfg.mutable_metadata()->set_namespace_(spec.namespace_);
  cfg.mutable_metadata()->set_uid(pod.uid);
  cfg.mutable_metadata()->set_attempt(0);
  if (!spec.host_network) cfg.set_hostname(spec.name);  // host network: the node's own UTS namespace
  if (!spec.log_directory.empty()) cfg.set_log_directory(spec.log_directory);
  cfg.mutable_labels()->insert(spec.labels.begin(), spec.labels.end());
  (*cfg.mutable_labels())["io.kubernetes.pod.name"] = spec.name;
  (*cfg.mutable_labels())["io.kubernetes.pod.namespace"] = spec.namespace_;
  (*cfg.mutable_labels())["io.kubernetes.pod.uid"] = pod.uid;
  auto* linux = cfg.mutable_linux();
  linux->set_cgroup_parent(pod.cgroup_parent);
  auto* ns = linux->mutable_security_context()->mutable_namespace_options();
  ns->set_network(spec.host_network ? lifecycle::NODE : lifecycle::POD);
  ns->set_pid(spec.host_pid ? lifecycle::NODE : lifecycle::CONTAINER);  // CONTAINER: the kubelet's default
  ns->set_ipc(lifecycle::POD);
  if (spec.privileged) linux->mutable_security_context()->set_privileged(true);

  lifecycle::RunPodSandboxRequest req;
  *req.mutable_config() = cfg;
  lifecycle::RunPodSandboxResponse resp;
  if (Status s = Call("RunPodSandbox", req, &resp); !s.ok()) return s;
  pod.id = resp.pod_sandbox_id();
  return pod;
}

StatusOr<std::string> CriDriver::StartContainer(const Pod& pod, const ContainerSpec& spec) {
  lifecycle::ContainerConfig c;
  c.mutable_metadata()->set_name(spec.name);
  c.mutable_image()->set_image(image_);
  for (const auto& arg : spec.command) c.add_command(arg);
  if (spec.memory_limit_bytes != 0 || !spec.unified.empty()) {
    lifecycle::LinuxContainerResources* r = c.mutable_linux()->mutable_resources();
    r->set_memory_limit_in_bytes(spec.memory_limit_bytes);
    r->mutable_unified()->insert(spec.unified.begin(), spec.unified.end());
  }
  return StartContainer(pod, std::move(c));
}

StatusOr<std::string> CriDriver::StartContainer(const Pod& pod, lifecycle::ContainerConfig config) {
  lifecycle::CreateContainerRequest req;
  req.set_pod_sandbox_id(pod.id);
  // The full sandbox config: containerd places the container by its cgroup_parent.
  *req.mutable_sandbox_config() = pod.config;
  lifecycle::ContainerConfig* c = req.mutable_config();
  *c = std::move(config);
  // The config's attempt (0 unless it says): a restart is a new container of the same
  // name and the next attempt, as the kubelet makes it.
  const std::string name = c->metadata().name();
  (*c->mutable_labels())["io.kubernetes.container.name"] = name;
  (*c->mutable_labels())["io.kubernetes.pod.name"] = pod.name;
  (*c->mutable_labels())["io.kubernetes.pod.namespace"] = pod.namespace_;
  (*c->mutable_labels())["io.kubernetes.pod.uid"] = pod.uid;
  lifecycle::CreateContainerResponse created;
  if (Status s = Call("CreateContainer", req, &created); !s.ok()) return s;
  lifecycle::StartContainerRequest start;
  start.set_container_id(created.container_id());
  lifecycle::StartContainerResponse started;
  if (Status s = Call("StartContainer", start, &started); !s.ok()) return s;
  return created.container_id();
}

StatusOr<lifecycle::ContainerStatus> CriDriver::ContainerStatus(const std::string& id) {
  lifecycle::ContainerStatusRequest req;
  req.set_container_id(id);
  lifecycle::ContainerStatusResponse resp;
  if (Status s = Call("ContainerStatus", req, &resp); !s.ok()) return s;
  return resp.status();
}

Status CriDriver::RemoveContainer(const std::string& id) {
  lifecycle::StopContainerRequest stop;
  stop.set_container_id(id);
  stop.set_timeout(0);
  lifecycle::StopContainerResponse stopped;
  if (Status s = Call("StopContainer", stop, &stopped); !s.ok()) return s;
  lifecycle::RemoveContainerRequest rm;
  rm.set_container_id(id);
  lifecycle::RemoveContainerResponse removed;
  return Call("RemoveContainer", rm, &removed);
}

Status CriDriver::RemovePod(const Pod& pod) {
  lifecycle::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(pod.id);
  lifecycle::StopPodSandboxResponse stopped;
  if (Status s = Call("StopPodSandbox", stop, &stopped); !s.ok()) return s;
  lifecycle::RemovePodSandboxRequest rm;
  rm.set_pod_sandbox_id(pod.id);
  lifecycle::RemovePodSandboxResponse removed;
  if (Status s = Call("RemovePodSandbox", rm, &removed); !s.ok()) return s;
  return RemoveCgroupEverywhere(pod.cgroup_parent, std::chrono::seconds(10));
}

}  // namespace statlet::e2e
