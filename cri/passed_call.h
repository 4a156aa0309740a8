// PassedCall: one call passed to the runtime (see passthrough.h). The server side is the
// caller's call on statlet's socket, the client side ("upstream") the same call on the
// runtime's socket. Both sides' operations complete on the pass-through's one completion
// queue, whose one thread hands each completion to OnEvent: the object is a state machine
// touched by that thread alone (no lock), and lives until none of its operations is
// outstanding.
//
// A unary method (IsUnaryMethod) with its request in hand goes as one unary call:
//
//   caller ──request──▶ server read ─▶ upstream unary call (metadata, message, half-close)
//   caller ◀─metadata, answer, status, trailers in one write ◀─ upstream finish
//
// Any other method (streaming, or one statlet's proto lacks) is pumped, one message at a
// time in each direction:
//
//   caller ──request──▶ server read ─▶ upstream write ─▶ (done) ─▶ server read ...
//   caller ◀─answer──── server write ◀─ upstream read ◀─ (done) ◀─ upstream read ...
//
// The upstream call starts when the first request message (or the caller's half-close)
// arrives, so a call that never sends one costs the runtime nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>

namespace statlet::cri {

class PassThroughService;

class alignas(16) PassedCall {
 public:
  // What a completion is for: the tag of an operation is the call's address plus one of
  // these (the object is 16-byte aligned).
  enum Op : uintptr_t {
    kRequest = 0,   // the server handed a new call to this object
    kDone = 1,      // the caller's call is over (finished or cancelled)
    kRead = 2,      // a request message from the caller (or its half-close)
    kWrite = 3,     // an answer written to the caller
    kFinish = 4,    // the caller's status sent
    kUpRead = 5,    // an answer message from the runtime (or the end of them)
    kUpWrite = 6,   // a request message written to the runtime
    kUpClose = 7,   // the upstream half-close sent
    kUpFinish = 8,  // the runtime's status (and, unary, its initial metadata and answer)
  };
  static constexpr uintptr_t kOpMask = 15;

  // Asks the server for the next call on `service`'s queue; the call object is its own
  // until OnEvent says it is over.
  static void Request(PassThroughService* service);

  // Handles one completion; returns false when the object is over (the caller deletes it).
  bool OnEvent(Op op, bool ok);
  ~PassedCall();

  // For the periodic check (same thread): cancels the call when it waited longer than
  // the service's bounds for its request or for its caller to take an answer.
  bool TimedOut(int64_t now_ns, int64_t request_ns, int64_t stall_ns);
  // Cancels both sides (server shutdown).
  void Cancel();

  // The service's list of live calls (for the periodic check).
  PassedCall* prev = nullptr;
  PassedCall* next = nullptr;

 private:
  explicit PassedCall(PassThroughService* service) : service_(service), stream_(&ctx_) {}
  void* Tag(Op op) {
    ++pending_;
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(this) | op);
  }

  void Arrived();
  void ReadDone(bool ok);
  void WriteDone(bool ok);
  // The runtime's initial metadata onto the caller's call, once (`got`: it sent some).
  void ForwardInitialMetadata(bool got);
  void UpReadDone(bool ok);
  void UpWriteDone(bool ok);
  void UpFinished();

  // The caller's metadata on a new upstream context (a child of the caller's call).
  void NewUpstreamContext();
  void StartUnary();
  void StartPump(bool with_message, bool writes_done);
  // Asks for the runtime's status once nothing more is read from it.
  void UpFinish();
  // The pumped call's answer goes to the caller (its metadata first).
  void WriteAnswer();
  // The unary road's end: answer, status and trailers to the caller in one batch.
  void AnswerUnary();
  // The runtime's status as the caller gets it: its trailers copied to the caller's call,
  // statlet's verdict when it has one, UNAVAILABLE naming the runtime.
  grpc::Status ForwardedStatus();
  // The caller's status, once; with_answer: response_ leaves with it in one batch.
  void FinishServer(grpc::Status status, bool with_answer = false);
  void NoteChange();
  grpc::Status RefusedHeld(size_t bytes) const;

  PassThroughService* const service_;
  grpc::GenericServerContext ctx_;
  grpc::GenericServerAsyncReaderWriter stream_;
  bool unary_ = false;    // IsUnaryMethod(method)
  bool counted_ = false;  // counts against max_calls
  bool local_ = false;    // passed to statlet's in-process image service, not the runtime
  bool spins_ = false;    // counts in awaiting_runtime_ while its unary call waits
  int pending_ = 0;       // operations outstanding

  std::unique_ptr<grpc::ClientContext> up_ctx_;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> up_unary_;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> up_;
  grpc::Status up_status_;

  grpc::ByteBuffer request_;   // the one request message in flight
  grpc::ByteBuffer response_;  // the one answer message in flight
  size_t request_held_ = 0;    // bytes counted against max_held_bytes
  size_t response_held_ = 0;

  bool up_started_ = false;
  bool up_writing_ = false;          // an upstream write is outstanding
  bool writes_closed_ = false;       // the upstream half-close is sent (or never will be)
  bool up_finish_asked_ = false;     // UpFinish called
  bool up_metadata_done_ = false;    // the runtime's initial metadata is in (and forwarded)
  bool up_done_ = false;             // the runtime's status is in
  bool got_metadata_ = false;        // the runtime sent initial metadata: it answered
  bool caller_half_closed_ = false;  // the server read side ended
  bool server_writing_ = false;
  bool finish_called_ = false;
  bool server_done_ = false;
  std::optional<grpc::Status> finish_pending_;  // the runtime's status, waiting for a write
  std::optional<grpc::Status> override_;        // statlet's own verdict (limits)

  int64_t awaiting_request_since_ = 0;  // CLOCK_MONOTONIC ns; 0: not waiting
  int64_t writing_since_ = 0;
};

}  // namespace statlet::cri
