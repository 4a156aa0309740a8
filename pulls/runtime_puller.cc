#include "pulls/runtime_puller.h"

#include <sys/stat.h>

#include <thread>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "base/unix_socket.h"
#include "proto/api.pb.h"

namespace statlet::pulls {
namespace {

bool IsSocket(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

constexpr char kPullImageMethod[] = "/runtime.v1.ImageService/PullImage";

// One runtime PullImage in flight. Owns what the library writes into until `done` runs.
class CriPullCall final : public RuntimePuller::Call {
 public:
  struct State {
    grpc::ClientContext ctx;
    grpc::ByteBuffer request, response;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<grpc::GenericStub> stub;
    std::function<void(RuntimePullResult)> done;
  };
  explicit CriPullCall(std::shared_ptr<State> state) : state_(std::move(state)) {}
  void Cancel() override { state_->ctx.TryCancel(); }

 private:
  std::shared_ptr<State> state_;
};

class CriRuntimePuller final : public RuntimePuller {
 public:
  explicit CriRuntimePuller(RuntimeChannel* channel) : channel_(channel) {}

  std::unique_ptr<Call> Start(std::string request, std::function<void(RuntimePullResult)> done) override {
    auto state = std::make_shared<CriPullCall::State>();
    state->done = std::move(done);
    auto channel = channel_->Get();
    if (!channel.ok()) {
      // Still asynchronous: `done` must not run inside Start.
      RuntimePullResult r;
      r.grpc_code = grpc::StatusCode::UNAVAILABLE;
      r.message = "no container runtime: " + channel.status().message();
      std::thread([state, r] { state->done(r); }).detach();
      return std::make_unique<CriPullCall>(state);
    }
    state->channel = *channel;
    state->stub = std::make_unique<grpc::GenericStub>(state->channel);
    grpc::Slice slice(request);
    state->request = grpc::ByteBuffer(&slice, 1);
    state->stub->UnaryCall(&state->ctx, kPullImageMethod, grpc::StubOptions(), &state->request, &state->response,
                           [state](grpc::Status s) {
                             RuntimePullResult r;
                             r.grpc_code = s.error_code();
                             r.message = s.error_message();
                             if (s.ok()) {
                               std::vector<grpc::Slice> slices;
                               ::runtime::v1::PullImageResponse resp;
                               std::string bytes;
                               if (state->response.Dump(&slices).ok()) {
                                 for (const auto& sl : slices) {
                                   bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
                                 }
                               }
                               if (resp.ParseFromString(bytes)) {
                                 r.image_ref = resp.image_ref();
                               } else {
                                 r.grpc_code = grpc::StatusCode::INTERNAL;
                                 r.message = "the runtime's PullImageResponse does not parse";
                               }
                             }
                             // Release what `done` holds as soon as it has run.
                             auto done = std::move(state->done);
                             done(std::move(r));
                           });
    return std::make_unique<CriPullCall>(state);
  }

 private:
  RuntimeChannel* channel_;
};

}  // namespace

RuntimeChannel::RuntimeChannel(std::string endpoint, std::vector<std::string> candidates)
    : endpoint_(std::move(endpoint)), candidates_(std::move(candidates)) {}

StatusOr<std::shared_ptr<grpc::Channel>> RuntimeChannel::Get() {
  std::string path;
  if (!endpoint_.empty()) {
    auto p = ParseUnixEndpoint(endpoint_);
    if (!p.ok()) return p.status();
    path = *p;
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    if (channel_ && IsSocket(path_)) return channel_;
    for (const auto& c : candidates_) {
      if (IsSocket(c)) {
        path = c;
        break;
      }
    }
    if (path.empty()) return Unavailable("no runtime socket found");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!channel_ || path_ != path) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    channel_ = grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), args);
    path_ = path;
  }
  return channel_;
}

std::unique_ptr<RuntimePuller> NewCriRuntimePuller(RuntimeChannel* channel) {
  return std::make_unique<CriRuntimePuller>(channel);
}

}  // namespace statlet::pulls
