// RuntimePuller: the node runtime's own CRI PullImage, started without blocking a thread
// and cancellable. The request travels as the client's bytes (a serialized
// runtime.v1.PullImageRequest: image, credentials, sandbox config reach the runtime
// unchanged); the runtime keeps credentials, mirrors and unpacking.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"

namespace grpc {
class Channel;
}

namespace statlet::pulls {

struct RuntimePullResult {
  int grpc_code = 0;  // grpc::StatusCode
  std::string message;
  std::string image_ref;  // PullImageResponse.image_ref when grpc_code is OK
};

class RuntimePuller {
 public:
  class Call {
   public:
    virtual ~Call() = default;
    // Cancels the runtime's pull; `done` still runs (with CANCELLED unless it had ended).
    virtual void Cancel() = 0;
  };
  virtual ~RuntimePuller() = default;
  // `done` runs exactly once, on a thread of the RPC library (never inside Start).
  virtual std::unique_ptr<Call> Start(std::string request, std::function<void(RuntimePullResult)> done) = 0;
};

// A channel to the node runtime's CRI socket: the configured endpoint, or the first
// runtime socket found (re-resolved while none is there).
class RuntimeChannel {
 public:
  RuntimeChannel(std::string endpoint, std::vector<std::string> candidates);
  StatusOr<std::shared_ptr<grpc::Channel>> Get();

 private:
  std::string endpoint_;
  std::vector<std::string> candidates_;
  std::mutex mu_;
  std::string path_;
  std::shared_ptr<grpc::Channel> channel_;
};

// RuntimePuller over a RuntimeChannel (`channel` must outlive it).
std::unique_ptr<RuntimePuller> NewCriRuntimePuller(RuntimeChannel* channel);

}  // namespace statlet::pulls
