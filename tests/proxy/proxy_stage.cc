// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include "tests/proxy/proxy_stage.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "tests/support/wait_for.h"

#ifndef STATLET_PROXY_HARNESS
#error "STATLET_PROXY_HARNESS must name tests/e2e/containerd_harness.sh"
#endif
#ifndef STATLET_BINARY
#error "STATLET_BINARY must name the statlet binary of this tree"
#endif

namespace statlet::proxy_test {
namespace v1 = ::runtime::v1;

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

std::shared_ptr<grpc::Channel> KubeletChannel(const std::string& socket, bool fresh) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(16 * 1024 * 1024);  // k8s.io/cri-client's maxMsgSize
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (fresh) {
    static std::atomic<int> n{0};
    args.SetInt("statlet.test.connection", ++n);  // distinct args: a subchannel of its own
  }
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

std::unique_ptr<grpc::ClientContext> Ctx(std::chrono::milliseconds timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

Status ProxyStage::Harness(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/bin/bash", harness_};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = dir_ + ".harness.log";
  pid_t pid = testing::SpawnLogged(argv, log);
  if (pid < 0) return ErrnoStatus(errno, "fork");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  return Internal("containerd_harness.sh " + args[0] + " failed:\n" + Tail(log, 30));
}

StatusOr<std::unique_ptr<ProxyStage>> ProxyStage::Start(const StageOptions& options) {
  std::unique_ptr<ProxyStage> stage(new ProxyStage());
  char tmpl[] = "/tmp/statlet-proxy-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return ErrnoStatus(errno, "mkdtemp");
  stage->dir_ = tmpl;
  stage->harness_ = STATLET_PROXY_HARNESS;
  stage->cgroup_root_ = "/statlet-proxy-" + std::to_string(getpid());
  stage->image_ = options.image;
  stage->statlet_flags_ = options.statlet_flags;
  stage->harness_started_ = true;  // stop cleans up whatever part of start ran
  if (Status s = stage->Harness({"start", stage->dir_, stage->cgroup_root_, stage->image_}); !s.ok()) return s;
  // The kubelet creates its top-level and QoS cgroups in every hierarchy before any pod.
  for (const std::string& mount : CgroupMounts()) {
    std::string path = mount;
    for (const char* part : {"", "/kubepods", "/kubepods/besteffort", "/kubepods/burstable"}) {
      const std::string dir = path + stage->cgroup_root_ + part;
      if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus(errno, "mkdir " + dir);
    }
  }
  if (Status s = stage->StartStatlet(); !s.ok()) return Internal(s.message() + "\n" + stage->Logs());
  return stage;
}

ProxyStage::~ProxyStage() {
  StopStatlet(SIGTERM);
  if (!harness_started_) return;
  // Pods left behind by a failed test go with containerd; then the pods' cgroups.
  if (Harness({"stop", dir_}).ok()) unlink((dir_ + ".harness.log").c_str());
  for (const std::string& mount : CgroupMounts()) {
    for (const char* part : {"/kubepods/besteffort", "/kubepods/burstable", "/kubepods", ""}) {
      rmdir((mount + cgroup_root_ + part).c_str());
    }
  }
}

Status ProxyStage::StartStatlet(const std::vector<std::string>& extra, std::chrono::milliseconds timeout) {
  if (statlet_pid_ > 0) return Internal("statlet is running already");
  metrics_port_ = testing::FreeLoopbackPort();
  std::vector<std::string> argv = StatletArgs(/*proxy=*/true, statlet_socket(), metrics_port_);
  argv.insert(argv.end(), extra.begin(), extra.end());
  statlet_pid_ = testing::SpawnLogged(argv, dir_ + "/statlet.log");
  if (statlet_pid_ < 0) return ErrnoStatus(errno, "fork");
  std::string last;
  const bool up = testing::WaitFor(
      [&] {
        if (!statlet_running()) return true;
        // A connection of its own each time: a channel that failed to connect waits out a
        // backoff before it tries again, which would be measured as statlet's.
        auto stub = v1::RuntimeService::NewStub(KubeletChannel(statlet_socket(), /*fresh=*/true));
        v1::VersionResponse resp;
        grpc::Status s = stub->Version(Ctx(std::chrono::milliseconds(500)).get(), v1::VersionRequest(), &resp);
        last = s.ok() ? "" : s.error_message();
        return s.ok();
      },
      timeout);
  if (!statlet_running()) return Unavailable("statlet exited:\n" + Tail(dir_ + "/statlet.log", 20));
  if (!up) return Unavailable("statlet's socket did not answer Version: " + last);
  return Status::Ok();
}

std::vector<std::string> ProxyStage::StatletArgs(bool proxy, const std::string& socket, int port) const {
  std::vector<std::string> argv = {
      STATLET_BINARY,
      "--cri.listen=" + socket,
      "--runtime.endpoint=unix://" + containerd_socket(),
      "--web.listen-address=127.0.0.1:" + std::to_string(port),
      "--collector.subtree=" + cgroup_root_,
      "--runtime.refresh-period=500ms",
      "--log.level=warn",
  };
  if (proxy) argv.push_back("--cri.proxy");
  argv.insert(argv.end(), statlet_flags_.begin(), statlet_flags_.end());
  return argv;
}

bool ProxyStage::statlet_running() {
  if (statlet_pid_ <= 0) return false;
  int status = 0;
  if (waitpid(statlet_pid_, &status, WNOHANG) == statlet_pid_) {
    statlet_pid_ = -1;
    return false;
  }
  return true;
}

void ProxyStage::StopStatlet(int sig) {
  if (!statlet_running()) return;
  kill(statlet_pid_, sig);
  if (!testing::WaitFor([&] { return !statlet_running(); }, std::chrono::seconds(10))) {
    kill(statlet_pid_, SIGKILL);
    waitpid(statlet_pid_, nullptr, 0);
  }
  statlet_pid_ = -1;
}

Status ProxyStage::StopContainerd() { return Harness({"stop-daemon", dir_}); }
Status ProxyStage::StartContainerd() { return Harness({"start-daemon", dir_}); }

pid_t ProxyStage::containerd_pid() const {
  std::ifstream in(dir_ + "/containerd.pid");
  pid_t pid = -1;
  in >> pid;
  return pid;
}

std::string ProxyStage::Logs() const {
  return "--- statlet.log\n" + Tail(dir_ + "/statlet.log", 20) + "--- containerd.log\n" +
         Tail(dir_ + "/containerd.log", 20);
}

}  // namespace statlet::proxy_test
