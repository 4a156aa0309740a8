#include "cmd/pull_pod.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/unix_socket.h"
#include "cmd/pod_pulls_settle.h"
#include "cmd/pull_display.h"
#include "proto/api.grpc.pb.h"
#include "proto/kep5334_image_pull_progress.pb.h"
#include "pulls/pull_progress_service.h"
#include "runtime/runtime_client.h"

namespace statlet {
namespace {

namespace v1 = ::runtime::v1;

std::shared_ptr<grpc::Channel> Channel(const std::string& path) {
  return grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return ctx;
}

// The pod's sandbox: the ready one, else the newest. "" when there is none.
StatusOr<std::string> FindSandbox(v1::RuntimeService::Stub* stub, const std::string& ns, const std::string& name,
                                  grpc::StatusCode* code) {
  v1::ListPodSandboxRequest req;
  v1::ListPodSandboxResponse resp;
  grpc::Status s = stub->ListPodSandbox(Context().get(), req, &resp);
  *code = s.error_code();
  if (!s.ok()) return Unavailable("ListPodSandbox: " + s.error_message());
  const v1::PodSandbox* best = nullptr;
  for (const auto& p : resp.items()) {
    if (p.metadata().namespace_() != ns || p.metadata().name() != name) continue;
    const bool ready = p.state() == v1::SANDBOX_READY;
    if (best == nullptr || (ready && best->state() != v1::SANDBOX_READY) ||
        (ready == (best->state() == v1::SANDBOX_READY) && p.created_at() > best->created_at())) {
      best = &p;
    }
  }
  if (best == nullptr) return NotFound("no pod " + ns + "/" + name + " in the runtime's sandbox list");
  return best->id();
}

StatusOr<std::string> FindContainer(v1::RuntimeService::Stub* stub, const std::string& sandbox,
                                    const std::string& name) {
  v1::ListContainersRequest req;
  req.mutable_filter()->set_pod_sandbox_id(sandbox);
  v1::ListContainersResponse resp;
  grpc::Status s = stub->ListContainers(Context().get(), req, &resp);
  if (!s.ok()) return Unavailable("ListContainers: " + s.error_message());
  const v1::Container* best = nullptr;
  for (const auto& c : resp.containers()) {
    if (c.metadata().name() == name && (best == nullptr || c.created_at() > best->created_at())) best = &c;
  }
  if (best == nullptr) {
    return NotFound("no container " + name + " in the pod yet (the kubelet creates it once its image is pulled): " +
                    "follow the whole pod without --container");
  }
  return best->id();
}

struct ImageState {
  explicit ImageState(const std::string& image, bool terminal) : display(image, terminal) {}
  std::vector<std::string> order;                             // layers as first seen
  std::map<std::string, std::pair<int64_t, int64_t>> layers;  // progress, total
  std::string error;
  PullDisplay display;
  bool changed = false;

  bool Complete() const {
    if (!error.empty()) return true;
    if (layers.empty()) return false;
    for (const auto& [d, pt] : layers) {
      if (pt.second <= 0 || pt.first < pt.second) return false;
    }
    return true;
  }
  PullReport Report() const {
    PullReport r;
    uint64_t total = 0;
    for (const auto& d : order) {
      const auto& [progress, size] = layers.at(d);
      std::string stage = size > 0 && progress >= size ? "done" : progress > 0 ? "downloading" : "waiting";
      r.layers.push_back({d, static_cast<uint64_t>(progress), static_cast<uint64_t>(size), stage});
      r.offset += static_cast<uint64_t>(std::min(progress, size));
      total += static_cast<uint64_t>(size);
    }
    r.total = total;
    return r;
  }
};

class Follower {
 public:
  Follower(bool terminal) : terminal_(terminal), start_(std::chrono::steady_clock::now()) {}

  // One line of the stream; false when it is not a Progress object.
  bool Take(const std::string& line) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("progress") || !j.contains("total") ||
        !j["progress"].is_number_integer() || !j["total"].is_number_integer() ||
        (j.contains("image") && !j["image"].is_string()) || (j.contains("layer") && !j["layer"].is_string()) ||
        (j.contains("error") && !j["error"].is_string()))
      return false;
    const std::string image = j.value("image", "");
    const std::string layer = j.value("layer", "");
    auto it = images_.find(image);
    if (it == images_.end()) {
      it = images_.emplace(image, ImageState(image.empty() ? "pod" : image, terminal_)).first;
      order_.push_back(image);
    }
    ImageState& s = it->second;
    if (j.contains("error")) {
      s.error = j.value("error", "");
      std::fprintf(stderr, "statlet pull: %s failed: %s\n", image.c_str(), s.error.c_str());
    }
    if (!layer.empty()) {
      if (s.layers.count(layer) == 0) s.order.push_back(layer);
      s.layers[layer] = {j["progress"].get<int64_t>(), j["total"].get<int64_t>()};
    }
    s.changed = true;
    return true;
  }

  // What to write after a batch of lines.
  std::string Draw() {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::string out;
    if (terminal_) {
      if (drawn_ > 0) out += "\033[" + std::to_string(drawn_) + "A\r";
      drawn_ = 0;
      for (const auto& image : order_) {
        ImageState& s = images_.at(image);
        int rows = 0;
        out += s.display.Block(s.Report(), elapsed, &rows);
        drawn_ += rows;
        s.changed = false;
      }
      return out;
    }
    for (const auto& image : order_) {
      ImageState& s = images_.at(image);
      if (!s.changed) continue;
      out += s.display.Update(s.Report(), elapsed);
      s.changed = false;
    }
    return out;
  }

  bool AllComplete() const {
    if (images_.empty()) return false;
    for (const auto& [i, s] : images_) {
      if (!s.Complete()) return false;
    }
    return true;
  }
  bool AnyFailed() const {
    for (const auto& [i, s] : images_) {
      if (!s.error.empty()) return true;
    }
    return false;
  }

 private:
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, ImageState> images_;
  std::vector<std::string> order_;
  int drawn_ = 0;
};

}  // namespace

int FollowPodPulls(const PullPodOptions& o) {
  const size_t slash = o.pod.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == o.pod.size()) {
    std::fprintf(stderr, "statlet pull: --pod %s: expected NAMESPACE/NAME\n", o.pod.c_str());
    return 2;
  }
  const std::string ns = o.pod.substr(0, slash), name = o.pod.substr(slash + 1);
  auto cri = ParseUnixEndpoint(o.cri_endpoint);
  if (!cri.ok()) {
    std::fprintf(stderr, "statlet pull: --cri.endpoint: %s\n", cri.status().message().c_str());
    return 2;
  }
  // The pod lists: statlet's socket passes them to the runtime in proxy mode; otherwise
  // (UNIMPLEMENTED there) the runtime's own socket.
  auto stub = v1::RuntimeService::NewStub(Channel(*cri));
  grpc::StatusCode code = grpc::StatusCode::OK;
  auto sandbox = FindSandbox(stub.get(), ns, name, &code);
  if (!sandbox.ok() && code == grpc::StatusCode::UNIMPLEMENTED) {
    std::string runtime = o.runtime_endpoint;
    if (runtime.empty()) {
      for (const auto& candidate : DefaultRuntimeSockets()) {
        auto p = ParseUnixEndpoint(candidate);
        if (p.ok() && SocketIsLive(*p)) {
          runtime = candidate;
          break;
        }
      }
    }
    auto path = ParseUnixEndpoint(runtime);
    if (runtime.empty() || !path.ok()) {
      std::fprintf(stderr, "statlet pull: no runtime socket to list pods from: give --runtime.endpoint\n");
      return 1;
    }
    stub = v1::RuntimeService::NewStub(Channel(*path));
    sandbox = FindSandbox(stub.get(), ns, name, &code);
  }
  if (!sandbox.ok()) {
    std::fprintf(stderr, "statlet pull --pod %s: %s\n", o.pod.c_str(), sandbox.status().message().c_str());
    return 1;
  }
  v1::ImagePullProgressRequest req;
  if (o.container.empty()) {
    req.set_pod_sandbox_id(*sandbox);
  } else {
    auto container = FindContainer(stub.get(), *sandbox, o.container);
    if (!container.ok()) {
      std::fprintf(stderr, "statlet pull --pod %s: %s\n", o.pod.c_str(), container.status().message().c_str());
      return 1;
    }
    req.set_container_id(*container);
  }
  v1::ImagePullProgressResponse resp;
  const grpc::internal::RpcMethod method(pulls::kImagePullProgressMethod, grpc::internal::RpcMethod::NORMAL_RPC);
  auto ctx = Context();
  grpc::Status s = grpc::internal::BlockingUnaryCall(Channel(*cri).get(), method, ctx.get(), req, &resp);
  if (!s.ok()) {
    std::fprintf(stderr, "statlet pull --pod %s: ImagePullProgress on %s: %s\n", o.pod.c_str(), o.cri_endpoint.c_str(),
                 s.error_message().c_str());
    return 1;
  }
  // scheme://host:port and the path.
  const std::string& url = resp.url();
  const size_t host_at = url.find("://");
  const size_t path_at = host_at == std::string::npos ? std::string::npos : url.find('/', host_at + 3);
  if (path_at == std::string::npos) {
    std::fprintf(stderr, "statlet pull: ImagePullProgress answered a URL without a path: %s\n", url.c_str());
    return 1;
  }
  httplib::Client client(url.substr(0, path_at));
  if (!o.ca_file.empty()) client.set_ca_cert_path(o.ca_file.c_str());
  if (!o.basic_auth.empty()) {
    const size_t colon = o.basic_auth.find(':');
    client.set_basic_auth(o.basic_auth.substr(0, colon).c_str(),
                          colon == std::string::npos ? "" : o.basic_auth.substr(colon + 1).c_str());
  }
  client.set_read_timeout(std::chrono::hours(24));  // a pod may wait long between pulls

  Follower follower(!o.plain && isatty(STDOUT_FILENO));
  std::string pending;
  bool done = false, bad = false;
  // --until-done: a thread ends the read once the pod's pulls have settled (the stream
  // itself may stay silent for ever).
  PodPullsSettle settle(o.settle);
  std::mutex settle_mu;
  std::condition_variable settle_cv;
  bool reading = true, settled = false;
  std::thread watch;
  if (o.until_done) {
    watch = std::thread([&] {
      std::unique_lock<std::mutex> lock(settle_mu);
      while (reading) {
        const auto due = settle.Due();
        if (!due) {
          settle_cv.wait(lock);
        } else if (settle.Done(PodPullsSettle::Clock::now())) {
          settled = true;
          client.stop();  // the blocked read returns
          return;
        } else {
          settle_cv.wait_until(lock, *due);
        }
      }
    });
  }
  int status = 0;
  std::string refusal;
  auto result = client.Get(
      url.substr(path_at).c_str(),
      [&](const httplib::Response& r) {
        status = r.status;
        if (status == 200 && o.until_done) {
          // Nothing seen yet is nothing incomplete: a pod with every image present (no line
          // ever comes) ends after the settle time too.
          std::lock_guard<std::mutex> lock(settle_mu);
          settle.Saw(PodPullsSettle::Clock::now(), true);
          settle_cv.notify_all();
        }
        return true;
      },
      [&](const char* data, size_t n) {
        if (status != 200) {
          refusal.append(data, std::min<size_t>(n, 4096));
          return refusal.size() < 4096;
        }
        pending.append(data, n);
        size_t start = 0, nl;
        while ((nl = pending.find('\n', start)) != std::string::npos) {
          if (!follower.Take(pending.substr(start, nl - start))) bad = true;
          start = nl + 1;
        }
        pending.erase(0, start);
        std::string text = follower.Draw();
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        if (o.until_done) {
          std::lock_guard<std::mutex> lock(settle_mu);
          settle.Saw(PodPullsSettle::Clock::now(), follower.AllComplete());
          settle_cv.notify_all();
          if (settled) return false;
        }
        return !bad && pending.size() < (1 << 20);
      });
  if (watch.joinable()) {
    {
      std::lock_guard<std::mutex> lock(settle_mu);
      reading = false;
      done = settled;
      settle_cv.notify_all();
    }
    watch.join();
  }
  if (status != 0 && status != 200) {
    std::fprintf(stderr, "statlet pull --pod %s: %s answered %d: %s", o.pod.c_str(), url.c_str(), status,
                 refusal.c_str());
    return 1;
  }
  if (bad) {
    std::fprintf(stderr, "statlet pull --pod %s: the stream sent a line that is no Progress object\n", o.pod.c_str());
    return 1;
  }
  if (!done && !result && result.error() != httplib::Error::Canceled) {
    std::fprintf(stderr, "statlet pull --pod %s: %s: %s\n", o.pod.c_str(), url.c_str(),
                 httplib::to_string(result.error()).c_str());
    return 1;
  }
  return follower.AnyFailed() ? 1 : 0;
}

}  // namespace statlet
