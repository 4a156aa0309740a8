// PassedCall: one call passed to the runtime (see passthrough.h). The server side is the
// caller's call on statlet's socket, the client side ("upstream") the same call on the
// runtime's socket; messages are pumped one at a time in each direction:
//
//   caller ──request──▶ server read ─▶ upstream write ─▶ (done) ─▶ server read ...
//   caller ◀─answer──── server write ◀─ upstream read ◀─ (done) ◀─ upstream read ...
//
// The upstream call starts when the first request message (or the caller's half-close)
// arrives, so a call that never sends one costs the runtime nothing.
//
// A unary method (IsUnaryMethod) with its request in hand goes as one unary call instead:
//
//   caller ──request──▶ server read ─▶ upstream unary call (metadata, message, half-close)
//   caller ◀─metadata, answer, status, trailers in one write ◀─ (done)
//
// Each pumped message costs a batch on each side, and each batch a wake-up of a gRPC
// thread; the unary road takes one batch each way for the whole answer. The object lives
// until both sides are done (and the watchdog lets go of it).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/support/client_callback.h>

namespace statlet::cri {

class PassThroughService;

class PassedCall final : public grpc::ServerGenericBidiReactor {
 public:
  // Creates the call, registers it with the watchdog and starts reading the request.
  static PassedCall* Start(PassThroughService* service, grpc::GenericCallbackServerContext* ctx);
  PassedCall(PassThroughService* service, grpc::GenericCallbackServerContext* ctx);
  ~PassedCall() override;

  // Server side (the caller).
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // For the watchdog: what the call waits for, since when (CLOCK_MONOTONIC ns; 0: not).
  int64_t awaiting_request_since() const { return awaiting_request_since_.load(std::memory_order_relaxed); }
  int64_t writing_since() const { return writing_since_.load(std::memory_order_relaxed); }
  // Cancels both sides (from the watchdog thread); no-op once the server side is done.
  void Cancel();

 private:
  class Upstream;
  friend class Upstream;
  class UnaryUpstream;
  friend class UnaryUpstream;

  // Upstream reactions.
  void UpstreamInitialMetadata(bool ok);
  void UpstreamReadDone(bool ok);
  void UpstreamWriteDone(bool ok);
  void UpstreamDone(const grpc::Status& status);
  // The unary road's end: the runtime's whole answer is in.
  void UnaryDone(const grpc::Status& status);

  // Creates the upstream call with the caller's metadata, writes `request_` when
  // `with_message`, half-closes when `writes_done`.
  void StartUpstream(bool with_message, bool writes_done);
  // Creates the unary upstream call for `request_` (under mu_); the caller starts it.
  void StartUnaryUpstream();
  // The caller's metadata on a new upstream context (a child of the caller's call).
  void NewUpstreamContext();
  // The runtime's status as the caller gets it: its trailers copied to the caller's call,
  // statlet's verdict when it has one, UNAVAILABLE naming the runtime (under mu_).
  grpc::Status ForwardedStatusLocked(const grpc::Status& status);
  // Finishes the server side once; the lock is released around the library call.
  void FinishLocked(std::unique_lock<std::mutex>* lock, grpc::Status status);
  // Drops the self reference once both sides are done.
  void MaybeReleaseLocked(std::unique_lock<std::mutex>* lock);
  grpc::Status RefusedHeld(size_t bytes) const;

  PassThroughService* const service_;
  grpc::GenericCallbackServerContext* const ctx_;
  const std::string method_;
  const bool unary_;  // IsUnaryMethod(method_)
  std::unique_ptr<grpc::ClientContext> upstream_ctx_;
  std::unique_ptr<Upstream> upstream_;
  std::unique_ptr<UnaryUpstream> unary_upstream_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<PassedCall> self_;  // guarded by mu_: held until both sides are done

  grpc::ByteBuffer request_;   // the one request message in flight
  grpc::ByteBuffer response_;  // the one answer message in flight
  size_t request_held_ = 0;    // bytes counted against max_held_bytes
  size_t response_held_ = 0;

  // Guarded by mu_.
  bool upstream_started_ = false;
  bool upstream_done_ = false;      // the runtime's status is in
  bool upstream_released_ = false;  // its OnDone returned: nothing of it runs any more
  bool read_hold_ = false;          // the upstream holds (see StartUpstream)
  bool write_hold_ = false;
  bool upstream_writing_ = false;
  bool writes_closed_ = false;       // the upstream half-close is sent (or never will be)
  bool caller_half_closed_ = false;  // the server read side ended
  bool metadata_forwarded_ = false;  // the runtime's initial metadata is on the caller's call
  bool answer_waiting_ = false;      // response_ read before the runtime's metadata was forwarded
  bool server_writing_ = false;
  bool finish_called_ = false;
  bool server_done_ = false;
  bool got_metadata_ = false;                   // the runtime sent initial metadata: it answered
  std::optional<grpc::Status> finish_pending_;  // the runtime's status, waiting for a write
  std::optional<grpc::Status> override_;        // statlet's own verdict (limits)
  bool cancelling_ = false;                     // the watchdog is inside TryCancel
  std::thread::id cancelling_thread_;

  std::atomic<int64_t> awaiting_request_since_{0};
  std::atomic<int64_t> writing_since_{0};
};

}  // namespace statlet::cri
