#include "tests/pull/pull_stage.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/unix_socket.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/wait_for.h"

namespace statlet::pulltest {
namespace {

void StopPid(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  int status = 0;
  bool gone = testing::WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; }, std::chrono::seconds(10));
  if (!gone) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
}

std::string NetnsArg(pid_t pid) { return "--net=/proc/" + std::to_string(pid) + "/ns/net"; }

}  // namespace

Status Run(const std::vector<std::string>& argv, const std::string& log) {
  Status s = e2e::RunCommand(argv, log);
  return s.ok() ? s : Internal(s.message() + ":\n" + e2e::Tail(log, 15));
}

Status InNetns(pid_t pid, const std::function<Status()>& fn) {
  std::packaged_task<Status()> task([&]() -> Status {
    std::string ns = "/proc/" + std::to_string(pid) + "/ns/net";
    int fd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "open " + ns);
    int r = setns(fd, CLONE_NEWNET);
    int err = errno;
    close(fd);
    if (r != 0) return ErrnoStatus(err, "setns " + ns);
    return fn();
  });
  auto result = task.get_future();
  std::thread t(std::move(task));
  t.join();
  return result.get();
}

std::unique_ptr<grpc::ClientContext> ContentContext(std::chrono::milliseconds timeout) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->AddMetadata("containerd-namespace", "k8s.io");
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

StatusOr<std::unique_ptr<PullStage>> PullStage::Start(std::vector<std::string> agent_flags) {
  std::unique_ptr<PullStage> s(new PullStage());
  e2e::StageOptions o;
  o.agent_binary = STATLET_E2E_AGENT;
  o.harness_script = STATLET_E2E_HARNESS;
  o.agent_flags = std::move(agent_flags);
  auto stage = e2e::E2eStage::Start(o);
  if (!stage.ok()) return stage.status();
  s->e2e_ = std::move(*stage);
  std::ifstream pidfile(s->dir() + "/containerd.pid");
  if (!(pidfile >> s->containerd_pid_)) return Internal("no containerd.pid");
  if (Status st = s->StartRegistry(); !st.ok()) return st;
  auto proxy = RateLimitedProxy::Start(s->containerd_pid_, s->registry_port_, kDefaultRate);
  if (!proxy.ok()) return proxy.status();
  s->proxy_ = std::move(*proxy);
  // containerd is told the proxy is a plain-HTTP registry (certs.d/<host:port>/hosts.toml).
  const std::string host = "127.0.0.1:" + std::to_string(s->proxy_->port());
  const std::string certs = s->dir() + "/certs.d/" + host;
  mkdir(certs.c_str(), 0755);
  std::ofstream(certs + "/hosts.toml") << "server = \"http://" << host << "\"\n[host.\"http://" << host
                                       << "\"]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n";
  s->statlet_ = v1::ImageService::NewStub(e2e::CriChannel(s->statlet_socket()));
  auto ctd = e2e::CriChannel(s->dir() + "/containerd.sock");
  s->containerd_ = v1::ImageService::NewStub(ctd);
  s->content_ = content::Content::NewStub(ctd);
  return s;
}

PullStage::~PullStage() {
  agents_.clear();
  proxy_.reset();
  StopPid(registry_pid_);
  if (e2e_) e2e_->Stop();
}

Status PullStage::StartRegistry() {
  const std::string root = dir() + "/registry";
  mkdir(root.c_str(), 0755);
  const std::string config = dir() + "/registry.yml";
  std::ofstream(config) << "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: " << root
                        << "\n  delete:\n    enabled: true\n  maintenance:\n    uploadpurging:\n      enabled: false\n"
                        << "http:\n  addr: 127.0.0.1:" << registry_port_ << "\n  secret: statlet-test\n";
  // nsenter execs the registry: the PID is the registry's.
  registry_pid_ = testing::SpawnLogged({"nsenter", NetnsArg(containerd_pid_), "docker-registry", "serve", config},
                                       dir() + "/registry.log");
  if (registry_pid_ < 0) return ErrnoStatus(errno, "fork");
  bool up = testing::WaitFor(
      [&] {
        return InNetns(containerd_pid_,
                       [&]() -> Status {
                         auto r =
                             testing::TimedGet(registry_port_, "/v2/", "", std::chrono::milliseconds(500)).response;
                         if (!r) return Unavailable("no answer");
                         return r->status == 200 ? Status::Ok() : Unavailable("status " + std::to_string(r->status));
                       })
            .ok();
      },
      std::chrono::seconds(20));
  if (!up) return Unavailable("the registry did not answer /v2/:\n" + e2e::Tail(dir() + "/registry.log", 10));
  return Status::Ok();
}

StatusOr<TestImage> PullStage::PushImage(const std::string& name, int random_mib, const std::string& seed) {
  const std::string tar = dir() + "/" + name + ".tar";
  const std::string log = dir() + "/images.log";
  TestImage img;
  img.name = "statlet/" + name;
  if (Status s =
          Run({"/usr/bin/python3", STATLET_MAKE_IMAGE, tar, img.name + ":1", std::to_string(random_mib), seed}, log);
      !s.ok()) {
    return s;
  }
  if (Status s = Run({"nsenter", NetnsArg(containerd_pid_), "skopeo", "--insecure-policy", "copy", "--quiet",
                      "--dest-tls-verify=false", "oci-archive:" + tar + ":1",
                      "docker://127.0.0.1:" + std::to_string(registry_port_) + "/" + img.name + ":1"},
                     log);
      !s.ok()) {
    return s;
  }
  std::ifstream in(tar + ".json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = nlohmann::json::parse(ss.str(), nullptr, false);
  if (doc.is_discarded()) return Internal("cannot read " + tar + ".json");
  img.manifest_digest = doc["manifest"].get<std::string>();
  img.config_digest = doc["config"].get<std::string>();
  for (const auto& l : doc["layers"]) {
    img.layers.push_back({l["digest"].get<std::string>(), l["size"].get<uint64_t>()});
    img.total += img.layers.back().size;
  }
  unlink(tar.c_str());
  img.ref = "127.0.0.1:" + std::to_string(proxy_->port()) + "/" + img.name + ":1";
  return img;
}

StatusOr<bool> PullStage::ContainerdHasImage(const std::string& ref) {
  auto ctx = e2e::CallContext(std::chrono::seconds(10));
  v1::ImageStatusRequest req;
  req.mutable_image()->set_image(ref);
  v1::ImageStatusResponse resp;
  grpc::Status s = containerd_->ImageStatus(ctx.get(), req, &resp);
  if (!s.ok()) return Unavailable("ImageStatus: " + s.error_message());
  return resp.has_image() && !resp.image().id().empty();
}

StatusOr<std::vector<std::string>> PullStage::ContainerdIngests() {
  auto ctx = ContentContext();
  content::ListStatusesRequest req;
  content::ListStatusesResponse resp;
  grpc::Status s = content_->ListStatuses(ctx.get(), req, &resp);
  if (!s.ok()) return Unavailable("ListStatuses: " + s.error_message());
  std::vector<std::string> out;
  for (const auto& st : resp.statuses()) out.push_back(st.ref());
  return out;
}

Status PullStage::CollectGarbage() {
  static int n = 0;
  const std::string id = "statlet-test-gc-" + std::to_string(++n);
  const std::string sock = dir() + "/containerd.sock";
  if (Status s = Run({"ctr", "-a", sock, "-n", "k8s.io", "leases", "create", "--id", id}, dir() + "/ctr.log");
      !s.ok()) {
    return s;
  }
  return Run({"ctr", "-a", sock, "-n", "k8s.io", "leases", "delete", "--sync", id}, dir() + "/ctr.log");
}

Status PullStage::EnsureAbsent(const TestImage& image, std::chrono::milliseconds timeout) {
  // By name and by id: a record under any other name of the image goes too.
  for (const std::string& name : {image.ref, image.config_digest}) {
    auto ctx = e2e::CallContext(std::chrono::seconds(30));
    v1::RemoveImageRequest req;
    req.mutable_image()->set_image(name);
    v1::RemoveImageResponse resp;
    grpc::Status s = containerd_->RemoveImage(ctx.get(), req, &resp);
    if (!s.ok() && s.error_code() != grpc::StatusCode::NOT_FOUND) {
      return Unavailable("RemoveImage " + name + ": " + s.error_message());
    }
  }
  const std::string big = image.big().digest;
  // containerd collects on its own schedule, and can miss a deletion that races with a
  // collection; a synchronous collection makes the next test start clean.
  if (Status s = CollectGarbage(); !s.ok()) return s;
  bool gone = testing::WaitFor(
      [&] {
        auto ctx = ContentContext();
        content::InfoRequest req;
        req.set_digest(big);
        content::InfoResponse resp;
        if (content_->Info(ctx.get(), req, &resp).error_code() != grpc::StatusCode::NOT_FOUND) return false;
        auto ingests = ContainerdIngests();
        if (!ingests.ok()) return false;
        for (const auto& r : *ingests) {
          if (r.find(big) != std::string::npos) return false;
        }
        return true;
      },
      timeout);
  if (gone) return Status::Ok();
  // What holds it, for the failure message.
  std::string state;
  const std::string ctr = "ctr -a " + dir() + "/containerd.sock -n k8s.io ";
  for (const char* what : {"images ls -q", "leases ls", "content active"}) {
    state += std::string("--- ctr ") + what + "\n";
    if (FILE* p = popen((ctr + what + " 2>&1").c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, p)) > 0) state.append(buf, n);
      pclose(p);
    }
  }
  return Unavailable("layer " + big + " is still in containerd's content store\n" + state);
}

std::unique_ptr<v1::ImageService::Stub> PullStage::ImagesAt(const std::string& socket) {
  return v1::ImageService::NewStub(e2e::CriChannel(socket));
}

StatusOr<pid_t> PullStage::StartCtrPull(const std::string& ns, const std::string& ref) {
  pid_t pid = testing::SpawnLogged({"nsenter", NetnsArg(containerd_pid_), "ctr", "-a", dir() + "/containerd.sock", "-n",
                                    ns, "images", "pull", "--plain-http", ref},
                                   dir() + "/ctr-pull.log");
  if (pid < 0) return Internal("cannot start ctr");
  return pid;
}

Status PullStage::StopContainerd() {
  return Run({"/bin/bash", STATLET_E2E_HARNESS, "stop-daemon", dir()}, dir() + "/containerd-stop.log");
}

Status PullStage::StartContainerd() {
  if (Status s = Run({"/bin/bash", STATLET_E2E_HARNESS, "start-daemon", dir()}, dir() + "/containerd-start.log");
      !s.ok()) {
    return s;
  }
  std::ifstream pidfile(dir() + "/containerd.pid");
  if (!(pidfile >> containerd_pid_)) return Internal("no containerd.pid after start-daemon");
  return Status::Ok();
}

Status PullStage::CtrRemoveImage(const std::string& ns, const std::string& ref) {
  return Run({"ctr", "-a", dir() + "/containerd.sock", "-n", ns, "images", "rm", "--sync", ref}, dir() + "/ctr.log");
}

int WaitPid(pid_t pid, std::chrono::milliseconds timeout) {
  int status = 0;
  if (testing::WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; }, timeout)) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

StatusOr<ExtraAgent> PullStage::StartAgent(const std::string& name, const std::vector<std::string>& flags) {
  testing::DaemonOptions o;
  o.binary = STATLET_E2E_AGENT;
  o.dir = dir();
  o.name = name;
  o.cgroup_subtree = e2e_->cgroup_root();
  o.serve_cri = true;
  o.cri_socket = dir() + "/" + name + ".sock";
  o.flags = {"--runtime.endpoint=unix://" + dir() + "/containerd.sock", "--log.level=info"};
  o.flags.insert(o.flags.end(), flags.begin(), flags.end());
  o.start_timeout = std::chrono::seconds(30);
  auto d = std::make_unique<testing::Daemon>(o);
  if (!d->ok()) return Unavailable("agent " + name + " did not start: " + d->error());
  ExtraAgent a{d->pid(), d->cri_socket(), d->port(), d->log_path()};
  agents_.push_back(std::move(d));
  return a;
}

void PullStage::StopAgent(ExtraAgent* a) {
  std::erase_if(agents_, [&](const std::unique_ptr<testing::Daemon>& d) { return d->pid() == a->pid; });
  a->pid = -1;
}

std::string PullStage::Logs() const {
  return e2e_->Logs() + "--- registry.log\n" + e2e::Tail(dir() + "/registry.log", 10);
}

// ---------------------------------------------------------------------------- ProgressCall

kep::PullImageWithProgressRequest ProgressRequest(const std::string& image, kep::PullImageProgressGranularity g,
                                                  uint64_t interval, int no_progress_timeout, bool detailed) {
  kep::PullImageWithProgressRequest r;
  r.mutable_request()->mutable_image()->set_image(image);
  r.set_granularity_type(g);
  r.mutable_interval()->set_value(interval);
  if (no_progress_timeout >= 0) r.mutable_no_progress_timeout()->set_value(static_cast<uint32_t>(no_progress_timeout));
  r.set_verbosity(detailed);
  return r;
}

ProgressCall::ProgressCall(v1::ImageService::Stub* stub, kep::PullImageWithProgressRequest request)
    : started_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this, stub, request = std::move(request)] {
    auto reader = stub->PullImageWithProgress(&ctx_, request);
    kep::PullImageWithProgressResponse msg;
    while (reader->Read(&msg)) {
      std::lock_guard<std::mutex> lock(mu_);
      reports_.push_back({std::chrono::steady_clock::now(), msg});
      cv_.notify_all();
    }
    grpc::Status s = reader->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    status_ = s;
    done_ = true;
    ended_ = std::chrono::steady_clock::now();
    cv_.notify_all();
  });
}

ProgressCall::~ProgressCall() {
  ctx_.TryCancel();
  if (thread_.joinable()) thread_.join();
}

void ProgressCall::Cancel() { ctx_.TryCancel(); }

grpc::Status ProgressCall::Wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return done_; })) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the test's wait for the call timed out");
  }
  return status_;
}

bool ProgressCall::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

std::vector<Report> ProgressCall::reports() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reports_;
}

uint64_t ProgressCall::last_offset() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reports_.empty() ? 0 : reports_.back().msg.offset().value();
}

std::chrono::steady_clock::time_point ProgressCall::ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

}  // namespace statlet::pulltest
