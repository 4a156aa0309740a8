#include "cri/passed_call.h"

#include <time.h>

#include <string_view>
#include <utility>

#include "base/monotonic_clock.h"
#include "cri/passthrough.h"

namespace statlet::cri {
namespace {

std::string_view View(const grpc::string_ref& r) { return {r.data(), r.size()}; }

// Metadata the gRPC library writes itself on every call, or consumes before the
// application sees it: never copied from one side to the other. Everything else (e.g.
// W3C traceparent/baggage, binary "-bin" values) is. grpc-status-details-bin is among
// them: the library writes it again from the status's details.
bool Reserved(std::string_view key) {
  return key.empty() || key.front() == ':' || key.rfind("grpc-", 0) == 0 || key == "user-agent" || key == "host" ||
         key == "te" || key == "content-type";
}

// A path as a status message quotes it: a client's path can be long.
std::string Quoted(std::string_view path) {
  constexpr size_t kShown = 96;
  if (path.size() <= kShown) return "\"" + std::string(path) + "\"";
  return "\"" + std::string(path.substr(0, kShown)) + "...\"";
}

}  // namespace

void PassedCall::Request(PassThroughService* service) {
  auto* call = new PassedCall(service);
  // Before the call exists: the library then reports its end (kDone) once it has begun.
  call->ctx_.AsyncNotifyWhenDone(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(call) | kDone));
  ++service->requests_;
  service->generic_.RequestCall(&call->ctx_, &call->stream_, service->cq_.get(), service->cq_.get(),
                                call->Tag(kRequest));
}

PassedCall::~PassedCall() {
  service_->Release(request_held_ + response_held_);
  if (counted_) service_->in_flight_.fetch_sub(1, std::memory_order_relaxed);
}

bool PassedCall::OnEvent(Op op, bool ok) {
  --pending_;
  switch (op) {
    case kRequest:
      --service_->requests_;
      if (!ok) return false;  // the server is shutting down: no call came, none is asked for
      ++pending_;             // kDone follows once the call is over
      service_->Link(this);
      if (!service_->stopping_seen_) Request(service_);  // the next caller's object
      Arrived();
      break;
    case kDone:
      server_done_ = true;
      awaiting_request_since_ = writing_since_ = 0;
      // The runtime's call is a child of this one and is cancelled with it; said again
      // here for a call cancelled by statlet (time bounds, shutdown).
      if (ctx_.IsCancelled() && up_started_ && !up_done_) up_ctx_->TryCancel();
      break;
    case kRead: ReadDone(ok); break;
    case kWrite: WriteDone(ok); break;
    case kFinish: writing_since_ = 0; break;
    case kUpClose: break;  // a failure shows in the runtime's status
    case kUpRead: UpReadDone(ok); break;
    case kUpWrite: UpWriteDone(ok); break;
    case kUpFinish: UpFinished(); break;
  }
  if (pending_ > 0) return true;
  service_->Unlink(this);
  return false;
}

bool PassedCall::TimedOut(int64_t now_ns, int64_t request_ns, int64_t stall_ns) {
  if (server_done_) return false;
  if ((awaiting_request_since_ != 0 && now_ns - awaiting_request_since_ > request_ns) ||
      (writing_since_ != 0 && now_ns - writing_since_ > stall_ns)) {
    awaiting_request_since_ = writing_since_ = 0;
    Cancel();
    return true;
  }
  return false;
}

void PassedCall::Cancel() {
  if (server_done_) return;
  ctx_.TryCancel();  // the outstanding operations fail; nothing runs here
  if (up_started_ && !up_done_) up_ctx_->TryCancel();
}

grpc::Status PassedCall::RefusedHeld(size_t bytes) const {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "statlet's CRI proxy holds " +
                                                                std::to_string(service_->options_.max_held_bytes) +
                                                                " bytes of messages in flight at most; a message of " +
                                                                std::to_string(bytes) + " bytes does not fit now");
}

// ---------------------------------------------------------------- the caller's side

void PassedCall::Arrived() {
  const std::string& method = ctx_.method();
  if (!IsPassableMethod(method)) {
    FinishServer(
        grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                     "statlet passes runtime.v1 RuntimeService and ImageService calls only, not " + Quoted(method)));
    return;
  }
  const int max_calls = service_->options_.max_calls;
  if (service_->in_flight_.fetch_add(1, std::memory_order_relaxed) >= max_calls) {
    service_->in_flight_.fetch_sub(1, std::memory_order_relaxed);
    service_->refused_.fetch_add(1, std::memory_order_relaxed);
    FinishServer(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        "statlet's CRI proxy has " + std::to_string(max_calls) + " calls in flight (--cri.proxy-max-calls)"));
    return;
  }
  counted_ = true;
  service_->calls_.fetch_add(1, std::memory_order_relaxed);
  unary_ = IsUnaryMethod(method);
  awaiting_request_since_ = MonotonicNowNs();
  stream_.Read(&request_, Tag(kRead));
}

void PassedCall::ReadDone(bool ok) {
  awaiting_request_since_ = 0;
  if (!ok) {  // the caller half-closed (or the call is over)
    caller_half_closed_ = true;
    if (!up_started_) {
      if (ctx_.IsCancelled() || finish_called_ || server_done_) {
        FinishServer(grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled before its request"));
        return;
      }
      StartPump(false, true);  // a call without a message: the runtime says what it makes of it
      return;
    }
    if (up_writing_ || writes_closed_) return;  // UpWriteDone half-closes
    writes_closed_ = true;
    up_->WritesDone(Tag(kUpClose));
    return;
  }
  const size_t bytes = request_.Length();
  if (finish_called_ || up_done_ || writes_closed_) {  // nobody reads it any more
    request_.Clear();
    return;
  }
  if (!service_->Hold(bytes)) {
    override_ = RefusedHeld(bytes);
    request_.Clear();
    if (!up_started_) {
      FinishServer(*override_);
      return;
    }
    writes_closed_ = true;
    up_ctx_->TryCancel();
    return;
  }
  request_held_ = bytes;
  if (!up_started_ && unary_) {
    StartUnary();
  } else if (!up_started_) {
    StartPump(true, false);
  } else {
    up_writing_ = true;
    up_->Write(request_, Tag(kUpWrite));
  }
}

void PassedCall::WriteDone(bool ok) {
  server_writing_ = false;
  writing_since_ = 0;
  service_->Release(std::exchange(response_held_, 0));
  response_.Clear();
  if (!ok) {  // the caller is gone: so is the runtime's call
    if (finish_pending_) FinishServer(*finish_pending_);
    if (!up_done_) up_ctx_->TryCancel();
    UpFinish();
    return;
  }
  if (finish_pending_) {
    FinishServer(*finish_pending_);
    return;
  }
  if (up_finish_asked_) return;  // the runtime's answers ended
  up_->Read(&response_, Tag(kUpRead));
}

void PassedCall::FinishServer(grpc::Status status, bool with_answer) {
  if (finish_called_) return;
  finish_called_ = true;
  awaiting_request_since_ = 0;
  if (with_answer) {
    writing_since_ = MonotonicNowNs();
    stream_.WriteAndFinish(response_, grpc::WriteOptions(), status, Tag(kFinish));
  } else {
    stream_.Finish(status, Tag(kFinish));
  }
}

// ---------------------------------------------------------------- the runtime's side

void PassedCall::NewUpstreamContext() {
  up_ctx_ = grpc::ClientContext::FromServerContext(ctx_);
  for (const auto& [key, value] : ctx_.client_metadata()) {
    if (!Reserved(View(key))) up_ctx_->AddMetadata(std::string(View(key)), std::string(View(value)));
  }
}

void PassedCall::StartUnary() {
  // The caller's further messages are not read: the unary call sends its one request and
  // half-closes.
  NewUpstreamContext();
  grpc::GenericStub& stub = service_->StubFor(ctx_.method(), &local_);
  up_unary_ = stub.PrepareUnaryCall(up_ctx_.get(), ctx_.method(), request_, service_->cq_.get());
  up_started_ = true;
  writes_closed_ = true;
  up_finish_asked_ = true;
  up_unary_->StartCall();
  // A call that changes sandboxes or containers takes the runtime milliseconds, and a pull
  // of statlet's own seconds: polling for its answer would only take a CPU from them.
  spins_ = !ChangesWorkloads(ctx_.method()) && !local_;
  if (spins_) ++service_->awaiting_runtime_;
  // One receive for the whole answer: the library takes the runtime's initial metadata in
  // with the message and status, as none was read before.
  up_unary_->Finish(&response_, &up_status_, Tag(kUpFinish));
}

void PassedCall::StartPump(bool with_message, bool writes_done) {
  NewUpstreamContext();
  // The call's metadata leaves with its first message or its half-close: the library
  // sends both from one operation set, which cannot be started twice at once.
  up_ctx_->set_initial_metadata_corked(true);
  up_ = service_->StubFor(ctx_.method(), &local_).PrepareCall(up_ctx_.get(), ctx_.method(), service_->cq_.get());
  up_started_ = true;
  up_->StartCall(nullptr);  // corked: starts nothing yet, reports nothing
  // The first read takes the runtime's initial metadata in with it (the library adds it
  // to the read while none has come; a read of its own beside it would be a second).
  up_->Read(&response_, Tag(kUpRead));
  if (with_message) {
    up_writing_ = true;
    up_->Write(request_, Tag(kUpWrite));
  }
  if (writes_done) {
    writes_closed_ = true;
    up_->WritesDone(Tag(kUpClose));
  }
}

void PassedCall::UpFinish() {
  if (up_finish_asked_ || !up_started_) return;
  up_finish_asked_ = true;
  up_->Finish(&up_status_, Tag(kUpFinish));
}

void PassedCall::ForwardInitialMetadata(bool got) {
  if (up_metadata_done_) return;
  up_metadata_done_ = true;
  got_metadata_ = got;
  if (!got || finish_called_) return;
  // Sent with the first answer or the status (no write has started: none before this).
  for (const auto& [key, value] : up_ctx_->GetServerInitialMetadata()) {
    if (!Reserved(View(key))) ctx_.AddInitialMetadata(std::string(View(key)), std::string(View(value)));
  }
}

void PassedCall::WriteAnswer() {
  if (finish_called_) {  // the caller has its status: the answer goes nowhere
    service_->Release(std::exchange(response_held_, 0));
    response_.Clear();
    if (finish_pending_) return;
    up_ctx_->TryCancel();
    UpFinish();
    return;
  }
  server_writing_ = true;
  writing_since_ = MonotonicNowNs();
  stream_.Write(response_, Tag(kWrite));
}

void PassedCall::UpReadDone(bool ok) {
  // Whatever initial metadata came is in now (a runtime that answers with a status alone
  // sends none).
  ForwardInitialMetadata(ok || !up_ctx_->GetServerInitialMetadata().empty());
  if (!ok) {  // the runtime's answers ended: its status follows, nothing more is written to it
    writes_closed_ = true;
    UpFinish();
    return;
  }
  const size_t bytes = response_.Length();
  if (finish_called_ || !service_->Hold(bytes)) {
    if (!finish_called_) override_ = RefusedHeld(bytes);
    response_.Clear();
    writes_closed_ = true;
    up_ctx_->TryCancel();
    UpFinish();
    return;
  }
  response_held_ = bytes;
  WriteAnswer();
}

void PassedCall::UpWriteDone(bool ok) {
  up_writing_ = false;
  service_->Release(std::exchange(request_held_, 0));
  request_.Clear();
  if (!ok) writes_closed_ = true;  // the runtime's call ended; its status follows
  if (writes_closed_) return;
  if (caller_half_closed_) {
    writes_closed_ = true;
    up_->WritesDone(Tag(kUpClose));
    return;
  }
  // The next request message (CRI callers half-close right after the first).
  awaiting_request_since_ = MonotonicNowNs();
  stream_.Read(&request_, Tag(kRead));
}

grpc::Status PassedCall::ForwardedStatus() {
  grpc::Status s = override_ ? *override_ : up_status_;
  if (finish_called_) return s;
  for (const auto& [key, value] : up_ctx_->GetServerTrailingMetadata()) {
    if (!Reserved(View(key))) ctx_.AddTrailingMetadata(std::string(View(key)), std::string(View(value)));
  }
  // A runtime that cannot be reached: the library's message names the socket; should it
  // not, the caller still learns which runtime statlet passes to. statlet's own image
  // service (in this process) says what it says.
  const std::string& path = service_->socket_path();
  if (!override_ && !local_ && s.error_code() == grpc::StatusCode::UNAVAILABLE && !got_metadata_ &&
      s.error_message().find(path) == std::string::npos) {
    s = grpc::Status(s.error_code(), s.error_message() + " (container runtime at unix://" + path + ")",
                     s.error_details());
  }
  return s;
}

void PassedCall::NoteChange() {
  if (up_status_.ok() && !override_ && ChangesWorkloads(ctx_.method()) && service_->options_.on_change) {
    service_->options_.on_change(ctx_.method());
  }
}

void PassedCall::UpFinished() {
  up_done_ = true;
  if (up_unary_ != nullptr) {
    if (spins_) --service_->awaiting_runtime_;
    service_->Release(std::exchange(request_held_, 0));
    request_.Clear();
    // A runtime that answered sent its initial metadata (empty or not) before the answer;
    // one that failed the call with a status alone sent none.
    ForwardInitialMetadata(response_.Valid() || !up_ctx_->GetServerInitialMetadata().empty());
    AnswerUnary();
    return;
  }
  grpc::Status s = ForwardedStatus();
  if (server_writing_) {
    finish_pending_ = std::move(s);
  } else {
    FinishServer(std::move(s));
  }
  NoteChange();
}

void PassedCall::AnswerUnary() {
  // The answer, when the runtime sent one (an empty message is one: Valid, length 0).
  bool answer = false;
  if (!finish_called_ && !override_ && response_.Valid()) {
    const size_t bytes = response_.Length();
    if (service_->Hold(bytes)) {
      response_held_ = bytes;  // released when the call is gone
      answer = true;
    } else {
      override_ = RefusedHeld(bytes);
    }
  }
  if (!answer) response_.Clear();
  // The runtime's initial metadata is on the caller's call: metadata, answer, status and
  // trailers leave in one batch.
  FinishServer(ForwardedStatus(), answer);
  NoteChange();
}

}  // namespace statlet::cri
