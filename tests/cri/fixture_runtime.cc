// A runtime peer for RuntimeClient tests, built from the upstream proto: answers
// Version, ListPodSandbox, ListContainers and ContainerStatus the way containerd does for
// two pods, and reports how many ContainerStatus and ListContainerStats calls it served in
// Status's info map. ListContainerStats reports the app container's writable layer on
// --fs-dir (or, with --fs-via-imagefsinfo, without a mountpoint: ImageFsInfo names it).
// Prints "ready" once listening; exits on SIGTERM or when stdin closes.
// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <thread>

#include <grpcpp/grpcpp.h>

namespace v1 = ::runtime::v1;

namespace {

const std::string kPodUid = "0a0a0a0a-1111-2222-3333-444444444444";
const std::string kSandbox = std::string(64, '1');
const std::string kOldSandbox = std::string(64, '0');
const std::string kApp = std::string(64, '2');

constexpr uint64_t kLayerBytes = 12'345'678;
constexpr uint64_t kLayerInodes = 321;
constexpr int64_t kLayerTimestamp = 1'700'000'000'000'000'000;

struct FsOptions {
  std::string dir;
  bool via_imagefsinfo = false;
};

class Images final : public v1::ImageService::Service {
 public:
  explicit Images(const FsOptions& fs) : fs_(fs) {}
  grpc::Status ImageFsInfo(grpc::ServerContext*, const v1::ImageFsInfoRequest*, v1::ImageFsInfoResponse* r) override {
    auto* image = r->add_image_filesystems();
    image->mutable_fs_id()->set_mountpoint(fs_.dir + "/images");
    auto* c = r->add_container_filesystems();
    c->mutable_fs_id()->set_mountpoint(fs_.dir);
    return grpc::Status::OK;
  }

 private:
  const FsOptions& fs_;
};

class Runtime final : public v1::RuntimeService::Service {
 public:
  explicit Runtime(const FsOptions& fs) : fs_(fs) {}
  grpc::Status ListContainerStats(grpc::ServerContext*, const v1::ListContainerStatsRequest*,
                                  v1::ListContainerStatsResponse* r) override {
    ++stats_calls_;
    auto* st = r->add_stats();
    st->mutable_attributes()->set_id(kApp);
    st->mutable_attributes()->mutable_metadata()->set_name("app");
    auto* layer = st->mutable_writable_layer();
    layer->set_timestamp(kLayerTimestamp);
    if (!fs_.via_imagefsinfo) layer->mutable_fs_id()->set_mountpoint(fs_.dir);
    layer->mutable_used_bytes()->set_value(kLayerBytes);
    layer->mutable_inodes_used()->set_value(kLayerInodes);
    return grpc::Status::OK;
  }
  grpc::Status Version(grpc::ServerContext*, const v1::VersionRequest*, v1::VersionResponse* r) override {
    r->set_version("0.1.0");
    r->set_runtime_name("fixture-runtime");
    r->set_runtime_version("1.2.3");
    r->set_runtime_api_version("v1");
    return grpc::Status::OK;
  }
  grpc::Status ListPodSandbox(grpc::ServerContext*, const v1::ListPodSandboxRequest*,
                              v1::ListPodSandboxResponse* r) override {
    auto add = [&](const std::string& id, v1::PodSandboxState state, int64_t created) {
      auto* p = r->add_items();
      p->set_id(id);
      p->mutable_metadata()->set_name("web");
      p->mutable_metadata()->set_namespace_("prod");
      p->mutable_metadata()->set_uid(kPodUid);
      p->mutable_metadata()->set_attempt(state == v1::SANDBOX_READY ? 1 : 0);
      p->set_state(state);
      p->set_created_at(created);
      (*p->mutable_labels())["app"] = "web";
      (*p->mutable_annotations())["seen"] = "yes";
    };
    add(kOldSandbox, v1::SANDBOX_NOTREADY, 100);  // an older, stopped attempt of the pod
    add(kSandbox, v1::SANDBOX_READY, 200);
    return grpc::Status::OK;
  }
  grpc::Status ListContainers(grpc::ServerContext*, const v1::ListContainersRequest*,
                              v1::ListContainersResponse* r) override {
    auto* c = r->add_containers();
    c->set_id(kApp);
    c->set_pod_sandbox_id(kSandbox);
    c->mutable_metadata()->set_name("app");
    c->mutable_metadata()->set_attempt(3);
    c->mutable_image()->set_image("sha256:feed");  // containerd lists the image id here
    c->set_image_ref("sha256:feed");
    c->set_state(v1::CONTAINER_RUNNING);
    c->set_created_at(300);
    (*c->mutable_labels())["io.kubernetes.container.name"] = "app";
    (*c->mutable_annotations())["hash"] = "42";
    return grpc::Status::OK;
  }
  grpc::Status ContainerStatus(grpc::ServerContext*, const v1::ContainerStatusRequest* req,
                               v1::ContainerStatusResponse* r) override {
    ++status_calls_;
    if (req->container_id() != kApp) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such container");
    auto* s = r->mutable_status();
    s->set_id(kApp);
    s->set_state(v1::CONTAINER_RUNNING);
    s->set_created_at(300);
    s->set_started_at(400);
    s->mutable_image()->set_image("docker.io/library/app:1.0");  // ...and the name here
    s->set_image_ref("docker.io/library/app@sha256:feed");
    // The resources as containerd reports them with the kubelet's Memory QoS on.
    auto* linux = s->mutable_resources()->mutable_linux();
    linux->set_memory_limit_in_bytes(1000 << 20);
    linux->set_cpu_shares(512);
    (*linux->mutable_unified())["memory.min"] = std::to_string(500 << 20);
    (*linux->mutable_unified())["memory.high"] = std::to_string(950 << 20);
    (*linux->mutable_unified())["memory.oom.group"] = "1";
    return grpc::Status::OK;
  }
  grpc::Status Status(grpc::ServerContext*, const v1::StatusRequest*, v1::StatusResponse* r) override {
    (*r->mutable_info())["container_status_calls"] = std::to_string(status_calls_.load());
    (*r->mutable_info())["list_container_stats_calls"] = std::to_string(stats_calls_.load());
    return grpc::Status::OK;
  }

 private:
  const FsOptions& fs_;
  std::atomic<int> status_calls_{0};
  std::atomic<int> stats_calls_{0};
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || std::string(argv[1]) != "--socket") {
    std::cerr << "usage: cri_fixture_runtime --socket PATH [--fs-dir DIR] [--fs-via-imagefsinfo]\n";
    return 2;
  }
  FsOptions fs;
  fs.dir = "/";
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--fs-dir" && i + 1 < argc) fs.dir = argv[++i];
    else if (a == "--fs-via-imagefsinfo") fs.via_imagefsinfo = true;
    else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  unlink(argv[2]);
  Runtime runtime(fs);
  Images images(fs);
  grpc::ServerBuilder b;
  b.AddListeningPort(std::string("unix:") + argv[2], grpc::InsecureServerCredentials());
  b.RegisterService(&runtime);
  b.RegisterService(&images);
  auto server = b.BuildAndStart();
  if (!server) return 1;
  std::cout << "ready" << std::endl;
  std::thread([] {
    char c;
    while (read(0, &c, 1) > 0) {
    }
    kill(getpid(), SIGTERM);
  }).detach();
  int sig;
  sigwait(&set, &sig);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  unlink(argv[2]);
  return 0;
}
