#include "cri/passed_call.h"

#include <time.h>

#include <string_view>
#include <utility>

#include "cri/passthrough.h"

namespace statlet::cri {
namespace {

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string_view View(const grpc::string_ref& r) { return {r.data(), r.size()}; }

// Metadata the gRPC library writes itself on every call, or consumes before the
// application sees it: never copied from one side to the other. Everything else (e.g.
// W3C traceparent/baggage, binary "-bin" values) is. grpc-status-details-bin is among
// them: the library writes it again from the status's details.
bool Reserved(std::string_view key) {
  return key.empty() || key.front() == ':' || key.rfind("grpc-", 0) == 0 || key == "user-agent" || key == "host" ||
         key == "te" || key == "content-type";
}

}  // namespace

// The runtime side of the call: its reactions go to the PassedCall.
class PassedCall::Upstream final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit Upstream(PassedCall* call) : call_(call) {}
  void OnReadInitialMetadataDone(bool ok) override { call_->UpstreamInitialMetadata(ok); }
  void OnReadDone(bool ok) override { call_->UpstreamReadDone(ok); }
  void OnWriteDone(bool ok) override { call_->UpstreamWriteDone(ok); }
  void OnDone(const grpc::Status& s) override { call_->UpstreamDone(s); }

 private:
  PassedCall* const call_;
};

// The runtime side of a unary call.
class PassedCall::UnaryUpstream final : public grpc::ClientUnaryReactor {
 public:
  explicit UnaryUpstream(PassedCall* call) : call_(call) {}
  void OnReadInitialMetadataDone(bool ok) override { call_->UpstreamInitialMetadata(ok); }
  void OnDone(const grpc::Status& s) override { call_->UnaryDone(s); }

 private:
  PassedCall* const call_;
};

PassedCall* PassedCall::Start(PassThroughService* service, grpc::GenericCallbackServerContext* ctx) {
  auto call = std::make_shared<PassedCall>(service, ctx);
  call->self_ = call;
  call->awaiting_request_since_.store(NowNs(), std::memory_order_relaxed);
  service->Register(call);
  call->StartRead(&call->request_);
  return call.get();
}

PassedCall::PassedCall(PassThroughService* service, grpc::GenericCallbackServerContext* ctx)
    : service_(service), ctx_(ctx), method_(ctx->method()), unary_(IsUnaryMethod(method_)) {}

PassedCall::~PassedCall() {
  service_->Release(request_held_ + response_held_);
  service_->in_flight_.fetch_sub(1, std::memory_order_relaxed);
}

grpc::Status PassedCall::RefusedHeld(size_t bytes) const {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "statlet's CRI proxy holds " +
                                                                std::to_string(service_->options_.max_held_bytes) +
                                                                " bytes of messages in flight at most; a message of " +
                                                                std::to_string(bytes) + " bytes does not fit now");
}

void PassedCall::NewUpstreamContext() {
  upstream_ctx_ = grpc::ClientContext::FromCallbackServerContext(*ctx_);
  for (const auto& [key, value] : ctx_->client_metadata()) {
    if (!Reserved(View(key))) upstream_ctx_->AddMetadata(std::string(View(key)), std::string(View(value)));
  }
}

void PassedCall::StartUnaryUpstream() {
  // Under mu_, as StartUpstream. The caller's further messages are not read: the unary
  // call has sent its one request and half-closed.
  NewUpstreamContext();
  unary_upstream_ = std::make_unique<UnaryUpstream>(this);
  service_->stub_.PrepareUnaryCall(upstream_ctx_.get(), method_, grpc::StubOptions(), &request_, &response_,
                                   unary_upstream_.get());
  upstream_started_ = true;
  writes_closed_ = true;
}

void PassedCall::StartUpstream(bool with_message, bool writes_done) {
  // Under mu_ (the caller holds it): the context and reactor exist before the watchdog
  // can see upstream_started_. Nothing here calls back.
  NewUpstreamContext();
  upstream_ = std::make_unique<Upstream>(this);
  service_->stub_.PrepareBidiStreamingCall(upstream_ctx_.get(), method_, grpc::StubOptions(), upstream_.get());
  upstream_started_ = true;
  // Holds: reads and writes are started from the server side's reactions, outside the
  // upstream's own; each side's hold goes when that side is over.
  read_hold_ = true;
  write_hold_ = !writes_done;
  writes_closed_ = writes_done;
  upstream_writing_ = with_message;
  upstream_->AddMultipleHolds(writes_done ? 1 : 2);
  upstream_->StartRead(&response_);
  if (with_message) upstream_->StartWrite(&request_);
  if (writes_done) upstream_->StartWritesDone();
}

void PassedCall::FinishLocked(std::unique_lock<std::mutex>* lock, grpc::Status status) {
  if (finish_called_) return;
  finish_called_ = true;
  awaiting_request_since_.store(0, std::memory_order_relaxed);
  lock->unlock();
  Finish(std::move(status));
  lock->lock();
}

void PassedCall::MaybeReleaseLocked(std::unique_lock<std::mutex>* lock) {
  if (!server_done_ || (upstream_started_ && !upstream_released_)) {
    lock->unlock();
    return;
  }
  std::shared_ptr<PassedCall> last = std::move(self_);
  lock->unlock();
  // `last` may be the final reference: nothing of this object is touched after it.
}

// ---------------------------------------------------------------- the caller's side

void PassedCall::OnReadDone(bool ok) {
  std::unique_lock<std::mutex> lock(mu_);
  awaiting_request_since_.store(0, std::memory_order_relaxed);
  if (!ok) {  // the caller half-closed (or the call is over)
    caller_half_closed_ = true;
    if (!upstream_started_) {
      if (ctx_->IsCancelled() || finish_called_) {
        FinishLocked(&lock, grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled before its request"));
        return;
      }
      StartUpstream(false, true);  // a call without a message: the runtime says what it makes of it
      Upstream* up = upstream_.get();
      lock.unlock();
      up->StartCall();
      return;
    }
    if (upstream_writing_ || writes_closed_) return;  // UpstreamWriteDone half-closes
    writes_closed_ = true;
    write_hold_ = false;
    lock.unlock();
    upstream_->StartWritesDone();
    upstream_->RemoveHold();
    return;
  }
  const size_t bytes = request_.Length();
  if (finish_called_ || upstream_done_ || writes_closed_) {  // nobody reads it any more
    request_.Clear();
    return;
  }
  if (!service_->Hold(bytes)) {
    override_ = RefusedHeld(bytes);
    request_.Clear();
    if (!upstream_started_) {
      FinishLocked(&lock, *override_);
      return;
    }
    writes_closed_ = true;
    const bool release = std::exchange(write_hold_, false);
    lock.unlock();
    upstream_ctx_->TryCancel();
    if (release) upstream_->RemoveHold();
    return;
  }
  request_held_ = bytes;
  if (!upstream_started_ && unary_) {
    StartUnaryUpstream();
    UnaryUpstream* up = unary_upstream_.get();
    lock.unlock();
    up->StartCall();
    return;
  }
  if (!upstream_started_) {
    StartUpstream(true, false);
    Upstream* up = upstream_.get();
    lock.unlock();
    up->StartCall();
    return;
  }
  upstream_writing_ = true;
  lock.unlock();
  upstream_->StartWrite(&request_);
}

void PassedCall::OnWriteDone(bool ok) {
  std::unique_lock<std::mutex> lock(mu_);
  server_writing_ = false;
  writing_since_.store(0, std::memory_order_relaxed);
  service_->Release(std::exchange(response_held_, 0));
  response_.Clear();
  if (!ok) {  // the caller is gone: so is the runtime's call
    const bool release = std::exchange(read_hold_, false);
    if (finish_pending_) FinishLocked(&lock, *finish_pending_);
    const bool cancel = !upstream_done_;
    lock.unlock();
    if (cancel) upstream_ctx_->TryCancel();
    if (release) upstream_->RemoveHold();
    return;
  }
  if (finish_pending_) {
    FinishLocked(&lock, *finish_pending_);
    return;
  }
  if (!read_hold_) return;  // the runtime's answers ended
  lock.unlock();
  upstream_->StartRead(&response_);
}

void PassedCall::OnCancel() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!upstream_started_) {
    FinishLocked(&lock, grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the caller"));
    return;
  }
  const bool cancel = !upstream_done_;
  lock.unlock();
  // The runtime's call is a child of this one and is cancelled with it; said again here
  // for a call cancelled by statlet's watchdog.
  if (cancel) upstream_ctx_->TryCancel();
}

void PassedCall::OnDone() {
  std::unique_lock<std::mutex> lock(mu_);
  // The watchdog may be inside TryCancel on this call (from another thread): the context
  // is freed once this returns.
  cv_.wait(lock, [&] { return !cancelling_ || cancelling_thread_ == std::this_thread::get_id(); });
  server_done_ = true;
  awaiting_request_since_.store(0, std::memory_order_relaxed);
  writing_since_.store(0, std::memory_order_relaxed);
  MaybeReleaseLocked(&lock);
}

void PassedCall::Cancel() {
  std::unique_lock<std::mutex> lock(mu_);
  if (server_done_ || cancelling_) return;
  cancelling_ = true;
  cancelling_thread_ = std::this_thread::get_id();
  const bool upstream = upstream_started_ && !upstream_done_;
  lock.unlock();
  ctx_->TryCancel();  // may run this call's reactions, OnDone included, on this thread
  if (upstream) upstream_ctx_->TryCancel();
  lock.lock();
  cancelling_ = false;
  cv_.notify_all();
}

// ---------------------------------------------------------------- the runtime's side

void PassedCall::UpstreamInitialMetadata(bool ok) {
  std::unique_lock<std::mutex> lock(mu_);
  got_metadata_ = ok;
  if (ok && !finish_called_) {
    // Sent with the first answer or the status (no write has started: none before this).
    for (const auto& [key, value] : upstream_ctx_->GetServerInitialMetadata()) {
      if (!Reserved(View(key))) ctx_->AddInitialMetadata(std::string(View(key)), std::string(View(value)));
    }
  }
  metadata_forwarded_ = true;
  if (!answer_waiting_ || finish_called_) return;
  answer_waiting_ = false;
  server_writing_ = true;
  writing_since_.store(NowNs(), std::memory_order_relaxed);
  lock.unlock();
  StartWrite(&response_);
}

void PassedCall::UpstreamReadDone(bool ok) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!ok) {  // the runtime's answers ended: its status follows, nothing more is written to it
    const bool release_read = std::exchange(read_hold_, false);
    writes_closed_ = true;
    const bool release_write = !upstream_writing_ && std::exchange(write_hold_, false);
    lock.unlock();
    if (release_read) upstream_->RemoveHold();
    if (release_write) upstream_->RemoveHold();
    return;
  }
  const size_t bytes = response_.Length();
  if (finish_called_ || !service_->Hold(bytes)) {
    if (!finish_called_) override_ = RefusedHeld(bytes);
    response_.Clear();
    const bool release = std::exchange(read_hold_, false);
    lock.unlock();
    upstream_ctx_->TryCancel();
    if (release) upstream_->RemoveHold();
    return;
  }
  response_held_ = bytes;
  if (!metadata_forwarded_) {
    answer_waiting_ = true;
    return;
  }
  server_writing_ = true;
  writing_since_.store(NowNs(), std::memory_order_relaxed);
  lock.unlock();
  StartWrite(&response_);
}

void PassedCall::UpstreamWriteDone(bool ok) {
  std::unique_lock<std::mutex> lock(mu_);
  upstream_writing_ = false;
  service_->Release(std::exchange(request_held_, 0));
  request_.Clear();
  if (!ok) writes_closed_ = true;  // the runtime's call ended; its status follows
  if (writes_closed_) {
    const bool release = std::exchange(write_hold_, false);
    lock.unlock();
    if (release) upstream_->RemoveHold();
    return;
  }
  if (caller_half_closed_) {
    writes_closed_ = true;
    write_hold_ = false;
    lock.unlock();
    upstream_->StartWritesDone();
    upstream_->RemoveHold();
    return;
  }
  // The next request message (CRI callers half-close right after the first).
  awaiting_request_since_.store(NowNs(), std::memory_order_relaxed);
  lock.unlock();
  StartRead(&request_);
}

grpc::Status PassedCall::ForwardedStatusLocked(const grpc::Status& status) {
  grpc::Status s = override_ ? *override_ : status;
  if (finish_called_) return s;
  for (const auto& [key, value] : upstream_ctx_->GetServerTrailingMetadata()) {
    if (!Reserved(View(key))) ctx_->AddTrailingMetadata(std::string(View(key)), std::string(View(value)));
  }
  // A runtime that cannot be reached: the library's message names the socket; should it
  // not, the caller still learns which runtime statlet passes to.
  const std::string& path = service_->socket_path();
  if (!override_ && s.error_code() == grpc::StatusCode::UNAVAILABLE && !got_metadata_ &&
      s.error_message().find(path) == std::string::npos) {
    s = grpc::Status(s.error_code(), s.error_message() + " (container runtime at unix://" + path + ")",
                     s.error_details());
  }
  return s;
}

void PassedCall::UnaryDone(const grpc::Status& status) {
  std::unique_lock<std::mutex> lock(mu_);
  upstream_done_ = true;
  service_->Release(std::exchange(request_held_, 0));
  request_.Clear();
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
  grpc::Status s = ForwardedStatusLocked(status);
  const bool changed = status.ok() && !override_ && ChangesWorkloads(method_);
  if (!finish_called_) {
    // The runtime's initial metadata is on the caller's call (UpstreamInitialMetadata
    // came first): metadata, answer, status and trailers leave in one batch.
    finish_called_ = true;
    lock.unlock();
    if (answer) {
      writing_since_.store(NowNs(), std::memory_order_relaxed);
      StartWriteAndFinish(&response_, grpc::WriteOptions(), std::move(s));
    } else {
      Finish(std::move(s));
    }
  } else {
    lock.unlock();
  }
  if (changed && service_->options_.on_change) service_->options_.on_change(method_);
  lock.lock();
  upstream_released_ = true;
  MaybeReleaseLocked(&lock);
}

void PassedCall::UpstreamDone(const grpc::Status& status) {
  std::unique_lock<std::mutex> lock(mu_);
  upstream_done_ = true;
  grpc::Status s = ForwardedStatusLocked(status);
  const bool changed = status.ok() && !override_ && ChangesWorkloads(method_);
  if (server_writing_) {
    finish_pending_ = s;
  } else {
    FinishLocked(&lock, std::move(s));
  }
  lock.unlock();
  if (changed && service_->options_.on_change) service_->options_.on_change(method_);
  lock.lock();
  upstream_released_ = true;
  MaybeReleaseLocked(&lock);
}

}  // namespace statlet::cri
