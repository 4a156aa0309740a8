// PassThrough: proxy mode's generic gRPC service. Every runtime.v1 RuntimeService and
// ImageService call that no registered method of statlet's server answers comes here (gRPC
// matches registered methods first, so the stats calls never do) and goes to the node
// runtime by its method path, message bytes untouched; the methods named in local_methods
// (statlet's pulls) go the same way to statlet's own image service, on an in-process
// server (cri_server.cc):
//
//   kubelet ──HTTP/2──▶ statlet CRI socket ──┬─ registered: stats calls
//                                             └─ anything else ─▶ PassedCall ──┬─▶ runtime
//                                                                              └─▶ pulls (in-process)
//
// The whole pass runs on one thread of the service's own, driving one completion queue
// that both sides share: the server's asynchronous generic service (the caller's call) and
// the generic client stub (the same call on the runtime's socket). A passed call is a
// small state machine (passed_call.h) that thread alone touches: it receives the call,
// reads the request, starts the upstream call, takes the answer in and writes it back
// without handing the call to another thread in between. A method statlet's proto
// declares unary goes to the runtime as one unary call and comes back in one batch
// (metadata, message, status, trailers); streaming and unknown methods are pumped one
// message at a time each way. The caller's deadline and cancellation reach the runtime
// (the client call is a child of the server call), its metadata too; the runtime's initial
// metadata, messages, status code, message, details and trailers come back unchanged.
// Nothing on that thread waits: a call never blocks it, and the stats work never runs there.
// While a unary call that changes no workload waits on the runtime, the thread polls the
// queue without sleeping for a short bounded time after each event (kSpinForRuntime in
// passthrough.cc), so that the runtime's answer, which usually comes within it, does not
// have to wake the thread.
//
// What a client can cost (the socket is the kubelet's; whoever else reaches it must not
// take the node's runtime with it): passed calls in flight at once (max_calls; more are
// answered RESOURCE_EXHAUSTED at once), the bytes of the messages they hold (max_held_bytes;
// each call holds at most one message per direction, none larger than
// max_message_bytes), and time: a call whose request does not arrive within
// request_timeout, or whose answer its client does not take within write_stall_timeout,
// is cancelled (the thread looks at the calls in flight once a second). HTTP/2 bounds the
// calls of one connection (cri_server.cc).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <grpcpp/alarm.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/server_builder.h>

#include "base/status.h"

namespace statlet::cri {

struct PassThroughOptions {
  std::string runtime_endpoint;  // unix:///run/containerd/containerd.sock
  int max_calls = 4096;
  size_t max_message_bytes = size_t{16} << 20;  // what the kubelet and containerd accept
  size_t max_held_bytes = size_t{64} << 20;
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds write_stall_timeout{120000};
  // Methods statlet answers itself on a server of its own in this process (full paths),
  // and the in-process channel to it: their calls are passed there, not to the runtime
  // (cri_server.cc says why). Such a call may take long (a pull), so the thread does not
  // poll for its answer.
  std::vector<std::string> local_methods;
  std::shared_ptr<grpc::Channel> local_channel;
  // Called (on the pass-through's thread, never under a lock of statlet's; it must not
  // wait on anything) when a call that changes the node's sandboxes or containers
  // succeeded: the runtime metadata is stale.
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

class PassThroughService {
 public:
  static StatusOr<std::unique_ptr<PassThroughService>> Create(PassThroughOptions options);
  // Stops (see Stop).
  ~PassThroughService();

  // Registers the generic service and its completion queue with `builder` (before
  // BuildAndStart), once.
  void AddTo(grpc::ServerBuilder* builder);
  // Starts taking calls; after the server built with AddTo started.
  void Start();
  // After the server's Shutdown: cancels the calls still in flight, waits for them to
  // end, shuts the completion queue down and joins the thread. Idempotent; also right for
  // a service whose server never started.
  void Stop();

  PassThroughStats stats() const;
  const std::string& socket_path() const { return path_; }

 private:
  friend class PassedCall;
  PassThroughService(PassThroughOptions options, std::string path);
  void Run();  // the thread
  void CheckTimes();

  // For PassedCall (on the thread).
  // The stub `method` is passed through; *local: whether to this process's own server.
  grpc::GenericStub& StubFor(std::string_view method, bool* local);
  bool Hold(size_t bytes);  // false (nothing held) when over max_held_bytes
  void Release(size_t bytes) { held_bytes_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed); }
  void Link(PassedCall* call);
  void Unlink(PassedCall* call);

  const PassThroughOptions options_;
  const std::string path_;  // the runtime's socket
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  std::unique_ptr<grpc::GenericStub> local_stub_;  // when options_.local_channel is set
  grpc::AsyncGenericService generic_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::thread thread_;

  // The thread's own.
  PassedCall* live_ = nullptr;  // calls taken from the server and not yet over
  int requests_ = 0;            // calls asked of the server and not yet handed over
  int awaiting_runtime_ = 0;    // unary calls sent to the runtime and not yet answered (those that change no workload)
  bool stopping_seen_ = false;
  bool cq_shut_ = false;

  std::atomic<bool> stopping_{false};
  std::unique_ptr<grpc::Alarm> wake_;  // the stop's wake-up of the thread
  char wake_tag_ = 0;

  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> held_bytes_{0};
  std::atomic<uint64_t> calls_{0}, refused_{0}, timed_out_{0};
};

}  // namespace statlet::cri
