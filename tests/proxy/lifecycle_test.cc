// statlet as the node's CRI endpoint, against a real containerd 1.6 and runc: a
// kubelet-like client drives a pod's whole life through statlet's proxy socket in the
// kubelet's order, and every answer is compared with the same call made straight to
// containerd — read calls on the same object must answer alike; calls that create or
// change something are made on twin pods (one through statlet, one straight) and must
// answer alike up to the twins' ids, names, times and addresses. Then every method of
// upstream cri-api v0.36.3 (and two newer ones) is called through the proxy: each gets
// containerd's answer, or statlet's for the calls statlet answers, never statlet's own
// UNIMPLEMENTED.
// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <set>

#include <grpcpp/generic/generic_stub.h>

#include "tests/proxy/kubelet_calls.h"
#include "tests/proxy/shared_stage.h"

namespace statlet::proxy_test {
namespace {

namespace pb = ::google::protobuf;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The calls statlet answers itself in proxy mode; every other one is containerd's.
const std::set<std::string>& StatletAnswers() {
  static const auto* calls = new std::set<std::string>{"ContainerStats",          "ListContainerStats",
                                                       "StreamContainerStats",    "PodSandboxStats",
                                                       "ListPodSandboxStats",     "StreamPodSandboxStats",
                                                       "ListMetricDescriptors",   "ListPodSandboxMetrics",
                                                       "StreamPodSandboxMetrics", "PullImage"};
  return *calls;
}

const pb::MethodDescriptor& Method(const std::string& name) {
  for (const pb::ServiceDescriptor* s : {&UpstreamRuntimeService(), &UpstreamImageService()}) {
    if (const pb::MethodDescriptor* m = s->FindMethodByName(name)) return *m;
  }
  ADD_FAILURE() << "upstream has no method " << name;
  std::abort();
}

std::unique_ptr<pb::Message> NewRequest(const pb::MethodDescriptor& m) {
  return std::unique_ptr<pb::Message>(pb::MessageFactory::generated_factory()->GetPrototype(m.input_type())->New());
}

class ProxyLifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    stage_ = SharedStage(&error);
    ASSERT_NE(stage_, nullptr) << error;
    through_ = KubeletChannel(stage_->statlet_socket(), /*fresh=*/true);
    direct_ = KubeletChannel(stage_->containerd_socket(), /*fresh=*/true);
  }

  // The same call through statlet and straight to containerd: same status (code and
  // message) and, when OK, the same answer once times are cleared. Returns statlet's.
  Answer Same(const std::string& method, const pb::Message& request, milliseconds timeout = seconds(30)) {
    const pb::MethodDescriptor& m = Method(method);
    Answer a = CallMethod(through_.get(), m, request, timeout);
    Answer b = CallMethod(direct_.get(), m, request, timeout);
    Answer a_copy = Copy(a);
    ExpectAlike(method, &a_copy, &b, {});
    return a;
  }

  // Twin calls: `a` through statlet, `b` straight to containerd; alike once `tokens` (the
  // twins' ids and names) are replaced. `learn` may add the ids the calls just created to
  // `tokens` before the comparison. Returns statlet's answer and sets `*direct`.
  using Learn = std::function<void(const Answer& a, const Answer& b)>;
  Answer Twin(const std::string& method, const pb::Message& a_request, const pb::Message& b_request,
              const std::map<std::string, std::string>& tokens, Answer* direct, milliseconds timeout = seconds(60),
              const Learn& learn = nullptr) {
    const pb::MethodDescriptor& m = Method(method);
    Answer a = CallMethod(through_.get(), m, a_request, timeout);
    *direct = CallMethod(direct_.get(), m, b_request, timeout);
    if (learn) learn(a, *direct);
    Answer a_copy = Copy(a), b_copy = Copy(*direct);
    ExpectAlike(method, &a_copy, &b_copy, tokens);
    return a;
  }

  static Answer Copy(const Answer& x) {
    Answer y;
    y.status = x.status;
    if (x.response) {
      y.response.reset(x.response->New());
      y.response->CopyFrom(*x.response);
    }
    for (const auto& m : x.stream) {
      y.stream.emplace_back(m->New());
      y.stream.back()->CopyFrom(*m);
    }
    return y;
  }

  static void ExpectAlike(const std::string& method, Answer* a, Answer* b,
                          const std::map<std::string, std::string>& tokens) {
    EXPECT_EQ(a->status.error_code(), b->status.error_code())
        << method << ": through statlet " << Describe(a->status) << ", straight " << Describe(b->status);
    std::string am = a->status.error_message(), bm = b->status.error_message();
    for (const auto& [from, to] : tokens) {
      for (std::string* s : {&am, &bm}) {
        for (size_t p = s->find(from); p != std::string::npos; p = s->find(from, p + to.size())) {
          s->replace(p, from.size(), to);
        }
      }
    }
    EXPECT_EQ(am, bm) << method;
    EXPECT_EQ(a->status.error_details(), b->status.error_details()) << method;
    if (a->response && b->response) {
      Normalize(a->response.get(), tokens);
      Normalize(b->response.get(), tokens);
      EXPECT_EQ(Differences(*a->response, *b->response), "") << method;
    }
    EXPECT_EQ(a->stream.size(), b->stream.size()) << method;
  }

  // ListPodSandbox and ListContainers through statlet and straight: the same lists.
  void ExpectSameLists(const std::string& when) {
    SCOPED_TRACE(when);
    Same("ListPodSandbox", v1::ListPodSandboxRequest());
    Same("ListContainers", v1::ListContainersRequest());
  }

  ProxyStage* stage_ = nullptr;
  std::shared_ptr<grpc::Channel> through_, direct_;
};

TEST_F(ProxyLifecycle, APodsLifeAnswersAsContainerdDoes) {
  Pod a = NewPod(stage_->cgroup_root(), stage_->dir(), "twin-a");
  Pod b = NewPod(stage_->cgroup_root(), stage_->dir(), "twin-b");
  std::map<std::string, std::string> tokens = {
      {a.uid, "<uid>"}, {b.uid, "<uid>"}, {"twin-a", "<pod>"}, {"twin-b", "<pod>"}};
  Answer direct;

  // RunPodSandbox, then the kubelet's PodSandboxStatus.
  v1::RunPodSandboxRequest run_a, run_b;
  *run_a.mutable_config() = a.config;
  *run_b.mutable_config() = b.config;
  Answer ran =
      Twin("RunPodSandbox", run_a, run_b, tokens, &direct, seconds(120), [&](const Answer& x, const Answer& y) {
        if (x.response) a.id = static_cast<v1::RunPodSandboxResponse&>(*x.response).pod_sandbox_id();
        if (y.response) b.id = static_cast<v1::RunPodSandboxResponse&>(*y.response).pod_sandbox_id();
        tokens[a.id] = "<sandbox>";
        tokens[b.id] = "<sandbox>";
      });
  ASSERT_TRUE(ran.status.ok()) << Describe(ran.status) << "\n" << stage_->Logs();
  ASSERT_TRUE(direct.status.ok()) << Describe(direct.status);
  {
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(a.id);
    Same("PodSandboxStatus", req);
    req.set_verbose(true);
    Same("PodSandboxStatus", req);
    v1::PodSandboxStatusRequest req_b;
    req_b.set_pod_sandbox_id(b.id);
    req.set_verbose(false);
    Twin("PodSandboxStatus", req, req_b, tokens, &direct);
  }
  ExpectSameLists("after RunPodSandbox");

  // PullImage on the image connection (statlet's pull engine, the runtime's pull).
  {
    v1::PullImageRequest req;
    req.mutable_image()->set_image(stage_->image());
    *req.mutable_sandbox_config() = a.config;
    Same("PullImage", req, seconds(120));
    v1::ImageStatusRequest status;
    status.mutable_image()->set_image(stage_->image());
    Same("ImageStatus", status);
  }

  // CreateContainer, StartContainer, ContainerStatus.
  const std::vector<std::string> command = {"sh", "-c", "echo started; exec sleep 2147483647"};
  std::string ca, cb;
  Answer created = Twin("CreateContainer", CreateRequest(a, "app", stage_->image(), command),
                        CreateRequest(b, "app", stage_->image(), command), tokens, &direct, seconds(60),
                        [&](const Answer& x, const Answer& y) {
                          if (x.response) ca = static_cast<v1::CreateContainerResponse&>(*x.response).container_id();
                          if (y.response) cb = static_cast<v1::CreateContainerResponse&>(*y.response).container_id();
                          tokens[ca] = "<container>";
                          tokens[cb] = "<container>";
                        });
  ASSERT_TRUE(created.status.ok()) << Describe(created.status);
  v1::StartContainerRequest start_a, start_b;
  start_a.set_container_id(ca);
  start_b.set_container_id(cb);
  ASSERT_TRUE(Twin("StartContainer", start_a, start_b, tokens, &direct).status.ok());
  v1::ContainerStatusRequest status_a, status_b;
  status_a.set_container_id(ca);
  status_b.set_container_id(cb);
  Same("ContainerStatus", status_a);
  Twin("ContainerStatus", status_a, status_b, tokens, &direct);
  ExpectSameLists("after StartContainer");

  // The stats statlet answers name what the runtime lists, right after the change.
  {
    v1::ListPodSandboxStatsRequest req;
    req.mutable_filter();
    Answer stats = CallMethod(through_.get(), Method("ListPodSandboxStats"), req, seconds(30));
    ASSERT_TRUE(stats.status.ok()) << Describe(stats.status);
    bool found = false;
    for (const auto& s : static_cast<v1::ListPodSandboxStatsResponse&>(*stats.response).stats()) {
      if (s.attributes().id() != a.id) continue;
      found = true;
      ASSERT_EQ(s.linux().containers_size(), 1);
      EXPECT_EQ(s.linux().containers(0).attributes().id(), ca);
    }
    EXPECT_TRUE(found) << "sandbox " << a.id << " not among statlet's ListPodSandboxStats";
  }

  // ExecSync and Exec (the URL of containerd's streaming server), same container.
  {
    v1::ExecSyncRequest req;
    req.set_container_id(ca);
    for (const char* arg : {"sh", "-c", "echo out; echo err >&2; exit 3"}) req.add_cmd(arg);
    req.set_timeout(10);
    Answer exec = Same("ExecSync", req);
    ASSERT_TRUE(exec.status.ok()) << Describe(exec.status);
    const auto& r = static_cast<v1::ExecSyncResponse&>(*exec.response);
    EXPECT_EQ(r.stdout(), "out\n");
    EXPECT_EQ(r.stderr(), "err\n");
    EXPECT_EQ(r.exit_code(), 3);
    v1::ExecRequest url;
    url.set_container_id(ca);
    url.add_cmd("sh");
    url.set_stdout(true);
    Answer exec_url = Same("Exec", url);
    ASSERT_TRUE(exec_url.status.ok()) << Describe(exec_url.status);
    EXPECT_NE(static_cast<v1::ExecResponse&>(*exec_url.response).url().find("/exec/"), std::string::npos);
  }

  // UpdateContainerResources, and what ContainerStatus then reports.
  {
    v1::UpdateContainerResourcesRequest up_a, up_b;
    up_a.set_container_id(ca);
    up_a.mutable_linux()->set_cpu_period(100000);
    up_a.mutable_linux()->set_cpu_quota(50000);
    up_a.mutable_linux()->set_cpu_shares(512);
    up_b = up_a;
    up_b.set_container_id(cb);
    ASSERT_TRUE(Twin("UpdateContainerResources", up_a, up_b, tokens, &direct).status.ok());
    Same("ContainerStatus", status_a);
  }

  // GetContainerEvents: a long-lived server stream (containerd 1.6 answers
  // UNIMPLEMENTED with its own message; a later one streams events).
  Same("GetContainerEvents", v1::GetEventsRequest(), seconds(2));

  // ReopenContainerLog, then the stop and removal, pod last.
  {
    v1::ReopenContainerLogRequest reopen_a, reopen_b;
    reopen_a.set_container_id(ca);
    reopen_b.set_container_id(cb);
    Twin("ReopenContainerLog", reopen_a, reopen_b, tokens, &direct);
    v1::StopContainerRequest stop_a, stop_b;
    stop_a.set_container_id(ca);
    stop_b.set_container_id(cb);
    ASSERT_TRUE(Twin("StopContainer", stop_a, stop_b, tokens, &direct).status.ok());
    Same("ContainerStatus", status_a);
    v1::RemoveContainerRequest rm_a, rm_b;
    rm_a.set_container_id(ca);
    rm_b.set_container_id(cb);
    ASSERT_TRUE(Twin("RemoveContainer", rm_a, rm_b, tokens, &direct).status.ok());
    Same("ContainerStatus", status_a);  // NOT_FOUND both ways
    ExpectSameLists("after RemoveContainer");
  }
  {
    v1::StopPodSandboxRequest stop_a, stop_b;
    stop_a.set_pod_sandbox_id(a.id);
    stop_b.set_pod_sandbox_id(b.id);
    ASSERT_TRUE(Twin("StopPodSandbox", stop_a, stop_b, tokens, &direct).status.ok());
    v1::PodSandboxStatusRequest st;
    st.set_pod_sandbox_id(a.id);
    Same("PodSandboxStatus", st);
    v1::RemovePodSandboxRequest rm_a, rm_b;
    rm_a.set_pod_sandbox_id(a.id);
    rm_b.set_pod_sandbox_id(b.id);
    ASSERT_TRUE(Twin("RemovePodSandbox", rm_a, rm_b, tokens, &direct).status.ok());
    Same("PodSandboxStatus", st);  // NOT_FOUND both ways
    ExpectSameLists("after RemovePodSandbox");
  }
  EXPECT_TRUE(RemoveCgroupEverywhere(a.cgroup_parent, seconds(10)).ok());
  EXPECT_TRUE(RemoveCgroupEverywhere(b.cgroup_parent, seconds(10)).ok());
}

// A request for every upstream method: real ids where the call only reads, ids nobody has
// where it would change something (the lifecycle test makes those calls for real).
std::unique_ptr<pb::Message> RequestFor(const pb::MethodDescriptor& m, const Pod& pod, const std::string& container,
                                        const std::string& image) {
  std::unique_ptr<pb::Message> req = NewRequest(m);
  const std::string& name = m.name();
  const bool reads = name.rfind("List", 0) == 0 || name.rfind("Stream", 0) == 0 ||
                     name.find("Status") != std::string::npos || name.find("Stats") != std::string::npos ||
                     name == "ExecSync" || name == "Exec" || name == "Attach" || name == "PortForward" ||
                     name == "Version" || name == "ImageFsInfo" || name == "PullImage";
  const pb::Reflection* r = req->GetReflection();
  const pb::Descriptor* d = req->GetDescriptor();
  if (const pb::FieldDescriptor* f = d->FindFieldByName("pod_sandbox_id")) {
    r->SetString(req.get(), f, reads ? pod.id : "no-such-sandbox");
  }
  if (const pb::FieldDescriptor* f = d->FindFieldByName("container_id")) {
    r->SetString(req.get(), f, reads ? container : "no-such-container");
  }
  if (const pb::FieldDescriptor* f = d->FindFieldByName("image"); f && f->message_type() != nullptr) {
    auto* spec = static_cast<v1::ImageSpec*>(r->MutableMessage(req.get(), f));
    spec->set_image(name == "RemoveImage" ? "localhost/statlet/no-such-image:1" : image);
  }
  if (const pb::FieldDescriptor* f = d->FindFieldByName("filter"); f && f->message_type() != nullptr) {
    r->MutableMessage(req.get(), f);  // an empty filter, as the kubelet sends
  }
  if (name == "ExecSync" || name == "Exec") {
    auto* exec = req.get();
    const pb::FieldDescriptor* cmd = d->FindFieldByName("cmd");
    r->AddString(exec, cmd, "true");
  }
  if (name == "Exec" || name == "Attach") r->SetBool(req.get(), d->FindFieldByName("stdout"), true);
  if (name == "ExecSync") r->SetInt64(req.get(), d->FindFieldByName("timeout"), 10);
  if (name == "Version") r->SetString(req.get(), d->FindFieldByName("version"), "v1");
  return req;
}

TEST_F(ProxyLifecycle, EveryUpstreamMethodGetsTheRuntimesAnswerOrStatlets) {
  Pod pod = NewPod(stage_->cgroup_root(), stage_->dir(), "every-method");
  KubeletClient kubelet(stage_->statlet_socket());
  {
    v1::RunPodSandboxRequest req;
    *req.mutable_config() = pod.config;
    v1::RunPodSandboxResponse resp;
    grpc::Status s = kubelet.runtime().RunPodSandbox(Ctx(seconds(120)).get(), req, &resp);
    ASSERT_TRUE(s.ok()) << Describe(s);
    pod.id = resp.pod_sandbox_id();
  }
  std::string container;
  {
    v1::CreateContainerResponse created;
    grpc::Status s = kubelet.runtime().CreateContainer(
        Ctx().get(), CreateRequest(pod, "app", stage_->image(), {"sleep", "2147483647"}), &created);
    ASSERT_TRUE(s.ok()) << Describe(s);
    container = created.container_id();
    v1::StartContainerRequest start;
    start.set_container_id(container);
    v1::StartContainerResponse started;
    ASSERT_TRUE(kubelet.runtime().StartContainer(Ctx().get(), start, &started).ok());
  }

  int methods = 0, by_statlet = 0, by_containerd_ok = 0, by_containerd_error = 0;
  for (const pb::ServiceDescriptor* service : {&UpstreamRuntimeService(), &UpstreamImageService()}) {
    for (int i = 0; i < service->method_count(); ++i) {
      const pb::MethodDescriptor& m = *service->method(i);
      SCOPED_TRACE(service->name() + "/" + m.name());
      ++methods;
      std::unique_ptr<pb::Message> req = RequestFor(m, pod, container, stage_->image());
      Answer through = CallMethod(through_.get(), m, *req, seconds(60));
      Answer direct = CallMethod(direct_.get(), m, *req, seconds(60));
      if (m.name() == "PullImage") {
        // statlet's pull engine, over the runtime's own pull: the runtime's outcome. (The
        // stage's image was imported, not pulled: containerd's pull of it fails, alike.)
        ++by_statlet;
        EXPECT_EQ(through.status.error_code(), direct.status.error_code()) << Describe(through.status);
        EXPECT_EQ(through.status.error_message(), direct.status.error_message());
        if (through.response && direct.response) {
          EXPECT_EQ(Differences(*through.response, *direct.response), "");
        }
        continue;
      }
      if (StatletAnswers().count(m.name()) != 0) {
        ++by_statlet;
        EXPECT_TRUE(through.status.ok()) << Describe(through.status);
        continue;
      }
      // containerd's answer, whatever it is: same code, same message (an UNIMPLEMENTED
      // therefore comes from containerd, with its words), same answer.
      EXPECT_EQ(through.status.error_code(), direct.status.error_code())
          << "through statlet " << Describe(through.status) << ", straight " << Describe(direct.status);
      EXPECT_EQ(through.status.error_message(), direct.status.error_message());
      if (through.response && direct.response) {
        Normalize(through.response.get(), {});
        Normalize(direct.response.get(), {});
        EXPECT_EQ(Differences(*through.response, *direct.response), "");
      }
      EXPECT_EQ(through.stream.size(), direct.stream.size());
      (direct.status.ok() ? by_containerd_ok : by_containerd_error)++;
      std::printf("  %-40s %s\n", (service->name() + "/" + m.name()).c_str(), Describe(through.status).c_str());
    }
  }
  // Methods newer than v0.36.3 (cri-api master): passed by path, containerd's answer too.
  for (const char* path : {"/runtime.v1.RuntimeService/CheckpointPod", "/runtime.v1.RuntimeService/RestorePod"}) {
    SCOPED_TRACE(path);
    grpc::GenericStub through_stub(through_), direct_stub(direct_);
    auto call = [&](grpc::GenericStub& stub) {
      grpc::Slice empty("");
      grpc::ByteBuffer req(&empty, 1), resp;  // an empty message (a default ByteBuffer is none at all)
      grpc::Status out;
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      auto ctx = Ctx(seconds(10));
      stub.UnaryCall(ctx.get(), path, grpc::StubOptions(), &req, &resp, [&](grpc::Status s) {
        std::lock_guard<std::mutex> lock(mu);
        out = s;
        done = true;
        cv.notify_all();
      });
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done; });
      return out;
    };
    grpc::Status t = call(through_stub), s = call(direct_stub);
    EXPECT_EQ(t.error_code(), s.error_code()) << Describe(t) << " vs " << Describe(s);
    EXPECT_EQ(t.error_message(), s.error_message());
    std::printf("  %-40s %s\n", path, Describe(t).c_str());
  }
  std::printf(
      "figure: %d upstream v0.36.3 methods through the proxy: %d answered by statlet, %d by containerd OK, "
      "%d by containerd with an error (its own)\n",
      methods, by_statlet, by_containerd_ok, by_containerd_error);
  EXPECT_EQ(methods, 41);

  grpc::Status removed = StopAndRemovePod(kubelet, pod);
  EXPECT_TRUE(removed.ok()) << removed.error_message();
  EXPECT_TRUE(RemoveCgroupEverywhere(pod.cgroup_parent, seconds(10)).ok());
}

}  // namespace
}  // namespace statlet::proxy_test
