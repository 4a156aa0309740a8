// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include "tests/proxy/kubelet_calls.h"

#include <sys/stat.h>

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/sync_stream.h>

#include "tests/proxy/proxy_stage.h"

namespace statlet::proxy_test {
namespace {

namespace pb = ::google::protobuf;

void ReplaceAll(std::string* s, const std::map<std::string, std::string>& tokens) {
  for (const auto& [from, to] : tokens) {
    if (from.empty()) continue;
    for (size_t p = s->find(from); p != std::string::npos; p = s->find(from, p + to.size())) {
      s->replace(p, from.size(), to);
    }
  }
}

bool IsTime(const std::string& name) {
  return name == "timestamp" || (name.size() > 3 && name.compare(name.size() - 3, 3, "_at") == 0);
}

// "http://10.0.0.1:38421/exec/AbCd" -> "http://10.0.0.1:38421/": the path is a token of
// the runtime's streaming server, new for every call.
std::string UrlBase(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path + 1);
}

}  // namespace

Pod NewPod(const std::string& cgroup_root, const std::string& scratch_dir, const std::string& name) {
  Pod pod;
  pod.uid = NewUid();
  pod.name = name;
  pod.namespace_ = "proxy-test";
  pod.cgroup_parent = cgroup_root + "/kubepods/besteffort/pod" + pod.uid;
  // /var/log/pods/<namespace>_<name>_<uid>, under the scratch directory.
  pod.log_directory = scratch_dir + "/pods/" + pod.namespace_ + "_" + name + "_" + pod.uid;
  mkdir((scratch_dir + "/pods").c_str(), 0755);
  mkdir(pod.log_directory.c_str(), 0755);
  v1::PodSandboxConfig& c = pod.config;
  c.mutable_metadata()->set_name(name);
  c.mutable_metadata()->set_uid(pod.uid);
  c.mutable_metadata()->set_namespace_(pod.namespace_);
  c.mutable_metadata()->set_attempt(0);
  c.set_hostname(name);
  c.set_log_directory(pod.log_directory);
  c.mutable_dns_config()->add_servers("10.96.0.10");
  c.mutable_dns_config()->add_searches(pod.namespace_ + ".svc.cluster.local");
  c.mutable_dns_config()->add_options("ndots:5");
  (*c.mutable_labels())["io.kubernetes.pod.name"] = name;
  (*c.mutable_labels())["io.kubernetes.pod.namespace"] = pod.namespace_;
  (*c.mutable_labels())["io.kubernetes.pod.uid"] = pod.uid;
  (*c.mutable_labels())["app"] = "proxy-test";
  (*c.mutable_annotations())["kubernetes.io/config.source"] = "api";
  (*c.mutable_annotations())["kubernetes.io/config.seen"] = "2026-11-27T00:00:00.000000000Z";
  v1::LinuxPodSandboxConfig* linux = c.mutable_linux();
  linux->set_cgroup_parent(pod.cgroup_parent);
  v1::NamespaceOption* ns = linux->mutable_security_context()->mutable_namespace_options();
  ns->set_network(v1::POD);
  ns->set_pid(v1::CONTAINER);
  ns->set_ipc(v1::POD);
  linux->mutable_security_context()->mutable_seccomp()->set_profile_type(v1::SecurityProfile::RuntimeDefault);
  return pod;
}

v1::CreateContainerRequest CreateRequest(const Pod& pod, const std::string& name, const std::string& image,
                                         const std::vector<std::string>& command) {
  v1::CreateContainerRequest req;
  req.set_pod_sandbox_id(pod.id);
  *req.mutable_sandbox_config() = pod.config;
  v1::ContainerConfig* c = req.mutable_config();
  c->mutable_metadata()->set_name(name);
  c->mutable_metadata()->set_attempt(0);
  c->mutable_image()->set_image(image);
  c->mutable_image()->set_user_specified_image(image);
  for (const auto& arg : command) c->add_command(arg);
  c->set_log_path(name + "/0.log");
  auto* env = c->add_envs();
  env->set_key("PROXY_TEST");
  env->set_value("1");
  (*c->mutable_labels())["io.kubernetes.container.name"] = name;
  (*c->mutable_labels())["io.kubernetes.pod.name"] = pod.name;
  (*c->mutable_labels())["io.kubernetes.pod.namespace"] = pod.namespace_;
  (*c->mutable_labels())["io.kubernetes.pod.uid"] = pod.uid;
  (*c->mutable_annotations())["io.kubernetes.container.hash"] = "1a2b3c4d";
  (*c->mutable_annotations())["io.kubernetes.container.restartCount"] = "0";
  (*c->mutable_annotations())["io.kubernetes.container.terminationMessagePath"] = "/dev/termination-log";
  v1::LinuxContainerConfig* linux = c->mutable_linux();
  linux->mutable_resources()->set_cpu_period(100000);
  linux->mutable_resources()->set_cpu_shares(2);
  linux->mutable_resources()->set_oom_score_adj(1000);
  v1::LinuxContainerSecurityContext* sc = linux->mutable_security_context();
  sc->mutable_namespace_options()->set_network(v1::POD);
  sc->mutable_namespace_options()->set_pid(v1::CONTAINER);
  sc->mutable_namespace_options()->set_ipc(v1::POD);
  sc->mutable_seccomp()->set_profile_type(v1::SecurityProfile::RuntimeDefault);
  sc->add_masked_paths("/proc/kcore");
  sc->add_readonly_paths("/proc/sys");
  return req;
}

KubeletClient::KubeletClient(const std::string& socket)
    : runtime_channel_(KubeletChannel(socket, /*fresh=*/true)),
      image_channel_(KubeletChannel(socket, /*fresh=*/true)),
      runtime_(v1::RuntimeService::NewStub(runtime_channel_)),
      images_(v1::ImageService::NewStub(image_channel_)) {}

grpc::Status RunPod(KubeletClient& kubelet, Pod* pod) {
  v1::RunPodSandboxRequest run;
  *run.mutable_config() = pod->config;
  v1::RunPodSandboxResponse ran;
  // A sandbox's first run may unpack the pause image: longer than a call's usual deadline.
  grpc::Status s = kubelet.runtime().RunPodSandbox(Ctx(std::chrono::seconds(120)).get(), run, &ran);
  if (s.ok()) pod->id = ran.pod_sandbox_id();
  return s;
}

grpc::Status StopAndRemovePod(KubeletClient& kubelet, const Pod& pod) {
  v1::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(pod.id);
  v1::StopPodSandboxResponse stopped;
  grpc::Status s = kubelet.runtime().StopPodSandbox(Ctx().get(), stop, &stopped);
  if (!s.ok()) return s;
  v1::RemovePodSandboxRequest rm;
  rm.set_pod_sandbox_id(pod.id);
  v1::RemovePodSandboxResponse removed;
  return kubelet.runtime().RemovePodSandbox(Ctx().get(), rm, &removed);
}

grpc::Status CreateAndStart(KubeletClient& kubelet, const Pod& pod, const std::string& name, const std::string& image,
                            const std::vector<std::string>& command, std::string* container_id) {
  v1::CreateContainerResponse created;
  grpc::Status s = kubelet.runtime().CreateContainer(Ctx().get(), CreateRequest(pod, name, image, command), &created);
  if (!s.ok()) return s;
  *container_id = created.container_id();
  v1::StartContainerRequest start;
  start.set_container_id(*container_id);
  v1::StartContainerResponse started;
  return kubelet.runtime().StartContainer(Ctx().get(), start, &started);
}

const pb::ServiceDescriptor& UpstreamRuntimeService() {
  return *v1::VersionRequest::descriptor()->file()->FindServiceByName("RuntimeService");
}
const pb::ServiceDescriptor& UpstreamImageService() {
  return *v1::VersionRequest::descriptor()->file()->FindServiceByName("ImageService");
}

Answer CallMethod(grpc::Channel* channel, const pb::MethodDescriptor& method, const pb::Message& request,
                  std::chrono::milliseconds timeout) {
  Answer a;
  const std::string path = "/" + method.service()->full_name() + "/" + method.name();
  const pb::Message* prototype = pb::MessageFactory::generated_factory()->GetPrototype(method.output_type());
  std::string bytes = request.SerializeAsString();
  grpc::Slice slice(bytes);
  grpc::ByteBuffer req(&slice, 1);
  auto ctx = Ctx(timeout);
  auto parse = [&](const grpc::ByteBuffer& buf) {
    std::unique_ptr<pb::Message> m(prototype->New());
    std::vector<grpc::Slice> slices;
    std::string data;
    if (buf.Dump(&slices).ok()) {
      for (const auto& s : slices) data.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    m->ParseFromString(data);
    return m;
  };
  // The channel outlives the call; RpcMethod wants a shared owner it does not keep.
  std::shared_ptr<grpc::ChannelInterface> unowned(std::shared_ptr<grpc::ChannelInterface>(), channel);
  if (method.server_streaming()) {
    grpc::internal::RpcMethod rpc(path.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING, unowned);
    std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
        grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel, rpc, ctx.get(), req));
    grpc::ByteBuffer msg;
    while (reader->Read(&msg)) a.stream.push_back(parse(msg));
    a.status = reader->Finish();
  } else {
    grpc::internal::RpcMethod rpc(path.c_str(), grpc::internal::RpcMethod::NORMAL_RPC, unowned);
    grpc::ByteBuffer resp;
    a.status =
        grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(channel, rpc, ctx.get(), req, &resp);
    if (a.status.ok()) a.response = parse(resp);
  }
  for (const auto& [k, v] : ctx->GetServerTrailingMetadata()) {
    a.trailers.emplace(std::string(k.data(), k.size()), std::string(v.data(), v.size()));
  }
  return a;
}

void Normalize(pb::Message* message, const std::map<std::string, std::string>& tokens) {
  const pb::Reflection* r = message->GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  r->ListFields(*message, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    const std::string& name = f->name();
    if ((IsTime(name) && !f->is_repeated() && f->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64) || name == "ip" ||
        name == "additional_ips") {
      r->ClearField(message, f);
      continue;
    }
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(*message, f); ++i) {
          std::string v = r->GetRepeatedString(*message, f, i);
          ReplaceAll(&v, tokens);
          r->SetRepeatedString(message, f, i, v);
        }
      } else {
        std::string v = r->GetString(*message, f);
        if (name == "url") v = UrlBase(v);
        ReplaceAll(&v, tokens);
        r->SetString(message, f, v);
      }
    } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        // Map entries are messages too (key, value): their strings are rewritten alike.
        for (int i = 0; i < r->FieldSize(*message, f); ++i) Normalize(r->MutableRepeatedMessage(message, f, i), tokens);
      } else {
        Normalize(r->MutableMessage(message, f), tokens);
      }
    }
  }
}

std::string Differences(const pb::Message& a, const pb::Message& b) {
  pb::util::MessageDifferencer d;
  d.set_repeated_field_comparison(pb::util::MessageDifferencer::AS_SET);
  std::string report;
  d.ReportDifferencesToString(&report);
  return d.Compare(a, b) ? "" : report;
}

std::string Describe(const grpc::Status& s) { return std::to_string(s.error_code()) + ": " + s.error_message(); }

}  // namespace statlet::proxy_test
