// PassThrough: proxy mode's generic gRPC service. Every runtime.v1 RuntimeService and
// ImageService call that no registered method of statlet's server answers comes here (gRPC
// matches registered methods first, so the stats calls and PullImage never do) and goes to
// the node runtime by its method path, message bytes untouched:
//
//   kubelet ──HTTP/2──▶ statlet CRI socket ──┬─ registered: stats calls, PullImage
//                                             └─ anything else ─▶ PassedCall ──▶ runtime
//
// Each call is a pair of callback reactors (server side and client side, passed_call.cc)
// pumping one message at a time in each direction: server-streaming and any other shape
// alike, no thread held while a side waits. A method statlet's proto declares unary takes
// a shorter road: its request goes to the runtime in one batch (metadata, message,
// half-close), and the answer comes back in one (metadata, message, status, trailers). The caller's deadline and
// cancellation reach the runtime (the client call is a child of the server call), its metadata too; the runtime's
// initial metadata, messages, status code, message, details and trailers come back unchanged.
//
// What a client can cost (the socket is the kubelet's; whoever else reaches it must not
// take the node's runtime with it): passed calls in flight at once (max_calls; more are
// answered RESOURCE_EXHAUSTED at once), the bytes of the messages they hold (max_held_bytes;
// each call holds at most one message per direction, none larger than
// max_message_bytes), and time: a call whose request does not arrive within
// request_timeout, or whose answer its client does not take within write_stall_timeout,
// is cancelled. HTTP/2 bounds the calls of one connection (cri_server.cc).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>

#include "base/status.h"

namespace statlet::cri {

struct PassThroughOptions {
  std::string runtime_endpoint;  // unix:///run/containerd/containerd.sock
  int max_calls = 4096;
  size_t max_message_bytes = size_t{16} << 20;  // what the kubelet and containerd accept
  size_t max_held_bytes = size_t{64} << 20;
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds write_stall_timeout{120000};
  // Called (on a gRPC thread, never under a lock of statlet's) when a call that changes
  // the node's sandboxes or containers succeeded: the runtime metadata is stale.
  std::function<void(std::string_view method)> on_change;
};

struct PassThroughStats {
  int64_t in_flight = 0;
  int64_t held_bytes = 0;
  uint64_t calls = 0;      // passed calls started
  uint64_t refused = 0;    // answered RESOURCE_EXHAUSTED for max_calls or max_held_bytes
  uint64_t timed_out = 0;  // cancelled for request_timeout or write_stall_timeout
};

// The method paths statlet passes: runtime.v1 RuntimeService and ImageService.
bool IsPassableMethod(std::string_view path);
// Whether a successful call of `path` changes the node's sandboxes or containers.
bool ChangesWorkloads(std::string_view path);
// Whether statlet's runtime.v1 proto declares `path` unary (one request, one answer): such
// a call is passed in one batch each way (passed_call.h). A method the proto lacks is not.
bool IsUnaryMethod(std::string_view path);

class PassedCall;

class PassThroughService final : public grpc::CallbackGenericService {
 public:
  static StatusOr<std::unique_ptr<PassThroughService>> Create(PassThroughOptions options);
  // Destroy only after the server that used it has shut down.
  ~PassThroughService() override;

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override;
  PassThroughStats stats() const;
  const std::string& socket_path() const { return path_; }

 private:
  friend class PassedCall;
  PassThroughService(PassThroughOptions options, std::string path);
  void Watch();

  // For PassedCall.
  bool Hold(size_t bytes);  // false (nothing held) when over max_held_bytes
  void Release(size_t bytes) { held_bytes_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed); }
  void Register(const std::shared_ptr<PassedCall>& call);

  const PassThroughOptions options_;
  const std::string path_;  // the runtime's socket
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;

  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> held_bytes_{0};
  std::atomic<uint64_t> calls_{0}, refused_{0}, timed_out_{0};

  // The watchdog: calls waiting for their request or for their client to take an answer.
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  std::vector<std::weak_ptr<PassedCall>> watched_;  // guarded by watch_mu_
  bool stopping_ = false;                           // guarded by watch_mu_
  std::thread watchdog_;
};

}  // namespace statlet::cri
