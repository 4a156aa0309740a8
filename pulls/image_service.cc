#include "pulls/image_service.h"

#include <algorithm>
#include <atomic>
#include <optional>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "proto/cri_services.h"
#include "proto/image_service.grpc.pb.h"
#include "pulls/report_schedule.h"

namespace statlet::pulls {
namespace {

namespace v1 = ::runtime::v1;
namespace kep = ::statlet::kep3542;

grpc::Status ToGrpc(const PullOutcome& o) {
  if (o.kind == PullOutcome::kSucceeded) return grpc::Status::OK;
  if (o.kind == PullOutcome::kStalled) return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, o.message);
  return grpc::Status(static_cast<grpc::StatusCode>(o.grpc_code), o.message);
}

// The PullRequest for the engine from a client's runtime.v1.PullImageRequest.
StatusOr<PullRequest> MakePullRequest(const v1::PullImageRequest& req, std::string runtime_bytes) {
  if (!req.has_image() || req.image().image().empty()) return InvalidArgument("no image given");
  auto name = ParseImageName(req.image().image());
  if (!name.ok()) return name.status();
  PullRequest out;
  out.key = PullKey(*name, req.image().runtime_handler());
  out.name = std::move(*name);
  out.runtime_request = std::move(runtime_bytes);
  // The kubelet names the pod it pulls for; a client without a sandbox_config (crictl
  // pull, statlet pull) pulls for nobody in particular.
  if (req.has_sandbox_config() && req.sandbox_config().has_metadata()) {
    const auto& m = req.sandbox_config().metadata();
    if (!m.name().empty()) out.pod = PodRef{m.namespace_(), m.name(), m.uid()};
  }
  return out;
}

// ---------------------------------------------------------------- report formats

// KEP-3542: offset/total in every report, per-layer details when asked, the runtime's
// image reference in the last message.
struct KepFormat {
  using Response = kep::PullImageWithProgressResponse;
  static Response Progress(const PullView& v, bool detailed, bool /*first*/) {
    Response r;
    r.set_image_ref(v.image);
    Fill(v, detailed, &r);
    return r;
  }
  static std::optional<Response> Final(const PullView& v, const PullOutcome& o, bool detailed) {
    if (o.kind != PullOutcome::kSucceeded) return std::nullopt;
    Response r;
    r.set_image_ref(v.image_ref);
    Fill(v, detailed, &r);
    return r;
  }
  static void Fill(const PullView& v, bool detailed, Response* r) {
    r->mutable_offset()->set_value(v.offset);
    if (v.total) r->mutable_total()->set_value(*v.total);
    if (!detailed) return;
    for (const auto& l : v.layers) {
      auto* d = r->add_details();
      d->set_layer(l.digest);
      d->set_offset(l.offset);
      d->set_total(l.size);
      switch (l.stage) {
        case LayerStage::kWaiting: d->set_stage(kep::LAYER_WAITING); break;
        case LayerStage::kDownloading: d->set_stage(kep::LAYER_DOWNLOADING); break;
        case LayerStage::kDownloaded: d->set_stage(kep::LAYER_DOWNLOADED); break;
        case LayerStage::kPresent: d->set_stage(kep::LAYER_PRESENT); break;
      }
    }
  }
};

// The 2019 KEP: STARTED, then PULLING, then DONE (reason: the image reference) or FAILED
// (reason: why; the call then ends with the error too).
struct StateFormat {
  using Response = kep::PullImageProgressResponse;
  static Response Progress(const PullView& v, bool /*detailed*/, bool first) {
    Response r;
    r.set_state(first ? kep::STARTED : kep::PULLING);
    r.set_size(v.total.value_or(0));
    r.set_current_offset(v.offset);
    return r;
  }
  static std::optional<Response> Final(const PullView& v, const PullOutcome& o, bool /*detailed*/) {
    Response r;
    r.set_size(v.total.value_or(0));
    r.set_current_offset(v.offset);
    if (o.kind == PullOutcome::kSucceeded) {
      r.set_state(kep::DONE);
      r.set_reason(v.image_ref);
    } else {
      r.set_state(kep::FAILED);
      r.set_reason(o.message);
    }
    return r;
  }
};

// ---------------------------------------------------------------- streaming calls

// One streaming pull call: a subscriber of the engine that writes the reports its
// schedule asks for. A write in flight is never waited on: a newer report replaces one
// not yet written, so a slow reader costs one buffered message, and the engine never
// blocks on a client.
template <typename Format>
class StreamCall final : public grpc::ServerWriteReactor<typename Format::Response>, public PullSubscriber {
 public:
  using Response = typename Format::Response;

  // Creates the call and joins the pull (or finishes at once with an error).
  static StreamCall* Start(PullEngine* engine, StatusOr<PullRequest> request, StatusOr<ReportPolicy> policy,
                           SubscribeOptions options) {
    auto call = std::make_shared<StreamCall>(engine, policy.ok() ? *policy : ReportPolicy{});
    call->self_ = call;
    if (!request.ok() || !policy.ok()) {
      const Status& s = !request.ok() ? request.status() : policy.status();
      call->FinishNow(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, s.message()));
      return call.get();
    }
    JoinResult join = engine->Join(std::move(*request), call, options);
    if (!join.ok()) {
      call->FinishNow(ToGrpc(join.error));
    } else {
      std::lock_guard<std::mutex> lock(call->mu_);
      call->subscription_ = join.subscription;
    }
    return call.get();
  }

  StreamCall(PullEngine* engine, ReportPolicy policy) : engine_(engine), schedule_(policy) {}

  void OnProgress(const PullViewPtr& view) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (finishing_ || view->version <= last_version_) return;
    last_version_ = view->version;
    const auto now = Clock::now();
    if (!schedule_.Due(*view, now)) return;
    const bool first = !reported_;
    reported_ = true;
    schedule_.Reported(*view, now);
    Send(Format::Progress(*view, schedule_.policy().detailed, first), &lock);
  }

  void OnDone(const PullViewPtr& view, const PullOutcome& outcome) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (finishing_) return;
    finishing_ = true;
    status_ = ToGrpc(outcome);
    if (auto last = Format::Final(*view, outcome, schedule_.policy().detailed)) Send(std::move(*last), &lock);
    MaybeFinish(&lock);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {  // the client is gone; OnCancel follows
      pending_.reset();
      if (!finishing_) {
        finishing_ = true;
        status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      }
    }
    if (pending_) {
      current_ = std::move(*pending_);
      pending_.reset();
      writing_ = true;
      lock.unlock();
      this->StartWrite(&current_);
      return;
    }
    MaybeFinish(&lock);
  }

  void OnCancel() override {
    uint64_t leave = 0;
    std::unique_lock<std::mutex> lock(mu_);
    pending_.reset();
    if (!finishing_) {
      finishing_ = true;
      status_ = grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client");
      leave = subscription_;
    }
    if (leave != 0) {
      lock.unlock();
      engine_->Leave(leave);  // the pull goes on for the others (or to the end)
      lock.lock();
    }
    MaybeFinish(&lock);
  }

  void OnDone() override {
    std::shared_ptr<StreamCall> last;
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      last = std::move(self_);
    }
    // `last` may be the final reference: this object ends with the scope.
  }

 private:
  void FinishNow(grpc::Status s) {
    std::unique_lock<std::mutex> lock(mu_);
    finishing_ = true;
    status_ = std::move(s);
    MaybeFinish(&lock);
  }

  void Send(Response msg, std::unique_lock<std::mutex>* lock) {
    if (writing_) {
      pending_ = std::move(msg);
      return;
    }
    writing_ = true;
    current_ = std::move(msg);
    lock->unlock();
    this->StartWrite(&current_);
    lock->lock();
  }

  void MaybeFinish(std::unique_lock<std::mutex>* lock) {
    if (!finishing_ || writing_ || pending_ || finish_called_) return;
    finish_called_ = true;
    grpc::Status s = status_;
    lock->unlock();
    this->Finish(s);
    lock->lock();
  }

  PullEngine* engine_;
  std::mutex mu_;
  ReportScheduler schedule_;
  std::shared_ptr<StreamCall> self_;  // held until the library is done with the call
  uint64_t subscription_ = 0;
  uint64_t last_version_ = 0;
  bool reported_ = false;
  bool writing_ = false;
  bool finishing_ = false;  // no more reports: the status is decided
  bool finish_called_ = false;
  bool finished_ = false;
  grpc::Status status_;
  Response current_;
  std::optional<Response> pending_;
};

// PullImage through the engine: one unary answer once the pull ends.
class UnaryPullCall final : public grpc::ServerUnaryReactor, public PullSubscriber {
 public:
  static UnaryPullCall* Start(PullEngine* engine, StatusOr<PullRequest> request, SubscribeOptions options,
                              grpc::ByteBuffer* response) {
    auto call = std::make_shared<UnaryPullCall>(engine, response);
    call->self_ = call;
    if (!request.ok()) {
      call->FinishOnce(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, request.status().message()));
      return call.get();
    }
    JoinResult join = engine->Join(std::move(*request), call, options);
    if (!join.ok()) {
      call->FinishOnce(ToGrpc(join.error));
    } else {
      std::lock_guard<std::mutex> lock(call->mu_);
      call->subscription_ = join.subscription;
    }
    return call.get();
  }

  UnaryPullCall(PullEngine* engine, grpc::ByteBuffer* response) : engine_(engine), response_(response) {}

  void OnProgress(const PullViewPtr&) override {}

  void OnDone(const PullViewPtr& view, const PullOutcome& outcome) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (decided_) return;
      if (outcome.kind == PullOutcome::kSucceeded) {
        v1::PullImageResponse resp;
        resp.set_image_ref(view->image_ref);
        std::string bytes = resp.SerializeAsString();
        grpc::Slice slice(bytes);
        *response_ = grpc::ByteBuffer(&slice, 1);
      }
    }
    FinishOnce(ToGrpc(outcome));
  }

  void OnCancel() override {
    uint64_t leave = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!decided_) leave = subscription_;
    }
    if (leave != 0) engine_->Leave(leave);
    FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client"));
  }

  void OnDone() override {
    std::shared_ptr<UnaryPullCall> last;
    std::lock_guard<std::mutex> lock(mu_);
    last = std::move(self_);
  }

 private:
  void FinishOnce(grpc::Status s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (decided_) return;
      decided_ = true;
    }
    Finish(std::move(s));
  }

  PullEngine* engine_;
  grpc::ByteBuffer* response_;
  std::mutex mu_;
  std::shared_ptr<UnaryPullCall> self_;
  uint64_t subscription_ = 0;
  bool decided_ = false;
};

// ---------------------------------------------------------------- the service

using Base = v1::ImageService::WithRawCallbackMethod_ListImages<v1::ImageService::WithRawCallbackMethod_ImageStatus<
    v1::ImageService::WithRawCallbackMethod_RemoveImage<v1::ImageService::WithRawCallbackMethod_ImageFsInfo<
        v1::ImageService::WithRawCallbackMethod_PullImage<v1::ImageService::WithCallbackMethod_PullImageWithProgress<
            v1::ImageService::WithCallbackMethod_PullImageProgress<v1::ImageService::Service>>>>>>>;

class ImageService final : public Base {
 public:
  ImageService(PullEngine* engine, RuntimeChannel* runtime, ImageServiceOptions options)
      : engine_(engine), runtime_(runtime), options_(options) {
    if (!options_.pulls_only) return;
    // Registered methods take precedence over the server's generic service: the calls
    // that are not pulls are unregistered (the descriptor's order is the service's).
    const google::protobuf::ServiceDescriptor& service = proto::CriImageService();
    const std::vector<std::string>& kept = PullsOnlyMethods();
    for (int i = 0; i < service.method_count(); ++i) {
      const std::string path = "/" + service.full_name() + "/" + service.method(i)->name();
      if (std::find(kept.begin(), kept.end(), path) == kept.end()) MarkMethodGeneric(i);
    }
  }

  grpc::ServerUnaryReactor* ListImages(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                       grpc::ByteBuffer* resp) override {
    return Forward(ctx, "/runtime.v1.ImageService/ListImages", req, resp);
  }
  grpc::ServerUnaryReactor* ImageStatus(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                        grpc::ByteBuffer* resp) override {
    return Forward(ctx, "/runtime.v1.ImageService/ImageStatus", req, resp);
  }
  grpc::ServerUnaryReactor* RemoveImage(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                        grpc::ByteBuffer* resp) override {
    return Forward(ctx, "/runtime.v1.ImageService/RemoveImage", req, resp);
  }
  grpc::ServerUnaryReactor* ImageFsInfo(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                        grpc::ByteBuffer* resp) override {
    return Forward(ctx, "/runtime.v1.ImageService/ImageFsInfo", req, resp);
  }

  grpc::ServerUnaryReactor* PullImage(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                      grpc::ByteBuffer* resp) override {
    std::string bytes;
    std::vector<grpc::Slice> slices;
    if (req->Dump(&slices).ok()) {
      for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    v1::PullImageRequest parsed;
    StatusOr<PullRequest> request = parsed.ParseFromString(bytes)
                                        ? MakePullRequest(parsed, bytes)
                                        : StatusOr<PullRequest>(InvalidArgument("PullImageRequest does not parse"));
    // In proxy mode a request the engine cannot take (no image, a name it does not parse)
    // is the runtime's to judge: the caller gets the runtime's own answer.
    if (!request.ok() && options_.pulls_only) return Forward(ctx, "/runtime.v1.ImageService/PullImage", req, resp);
    SubscribeOptions o;
    o.no_progress_timeout = options_.default_no_progress_timeout;
    return UnaryPullCall::Start(engine_, std::move(request), o, resp);
  }

  grpc::ServerWriteReactor<kep::PullImageWithProgressResponse>* PullImageWithProgress(
      grpc::CallbackServerContext* ctx, const kep::PullImageWithProgressRequest* req) override {
    StatusOr<PullRequest> request = MakePullRequest(req->request(), req->request().SerializeAsString());
    StatusOr<ReportPolicy> policy =
        InvalidArgument("unknown granularity_type " + std::to_string(static_cast<int>(req->granularity_type())));
    std::optional<uint64_t> interval;
    if (req->has_interval()) interval = req->interval().value();
    switch (req->granularity_type()) {
      case kep::TIME: policy = MakeReportPolicy(Granularity::kTime, interval, req->verbosity()); break;
      case kep::SIZE: policy = MakeReportPolicy(Granularity::kSize, interval, req->verbosity()); break;
      case kep::NONE: policy = MakeReportPolicy(Granularity::kNone, interval, req->verbosity()); break;
      default: break;
    }
    SubscribeOptions o;
    o.no_progress_timeout = req->has_no_progress_timeout() ? std::chrono::seconds(req->no_progress_timeout().value())
                                                           : options_.default_no_progress_timeout;
    return StreamCall<KepFormat>::Start(engine_, std::move(request), std::move(policy), o);
  }

  grpc::ServerWriteReactor<kep::PullImageProgressResponse>* PullImageProgress(
      grpc::CallbackServerContext* ctx, const v1::PullImageRequest* req) override {
    // The 2019 KEP has no interval: a state report every second.
    SubscribeOptions o;
    o.no_progress_timeout = options_.default_no_progress_timeout;
    return StreamCall<StateFormat>::Start(engine_, MakePullRequest(*req, req->SerializeAsString()),
                                          MakeReportPolicy(Granularity::kTime, 1, false), o);
  }

 private:
  // One passed-through unary call: the caller's bytes to the runtime and back.
  struct Forwarded {
    std::unique_ptr<grpc::ClientContext> ctx;
    std::unique_ptr<grpc::GenericStub> stub;
  };

  grpc::ServerUnaryReactor* Forward(grpc::CallbackServerContext* ctx, const char* method, const grpc::ByteBuffer* req,
                                    grpc::ByteBuffer* resp) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    if (in_flight_.fetch_add(1) >= options_.max_forwarded_calls) {
      in_flight_.fetch_sub(1);
      reactor->Finish(
          grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       "too many image calls in flight (" + std::to_string(options_.max_forwarded_calls) + ")"));
      return reactor;
    }
    auto channel = runtime_->Get();
    if (!channel.ok()) {
      in_flight_.fetch_sub(1);
      reactor->Finish(
          grpc::Status(grpc::StatusCode::UNAVAILABLE, "no container runtime: " + channel.status().message()));
      return reactor;
    }
    auto call = std::make_shared<Forwarded>();
    // The runtime's call ends when the caller's does (deadline and cancellation propagate).
    call->ctx = grpc::ClientContext::FromCallbackServerContext(*ctx);
    call->ctx->set_deadline(std::min(ctx->deadline(), std::chrono::system_clock::now() + options_.forward_timeout));
    call->stub = std::make_unique<grpc::GenericStub>(*channel);
    call->stub->UnaryCall(call->ctx.get(), method, grpc::StubOptions(), req, resp,
                          [this, reactor, call](grpc::Status s) {
                            in_flight_.fetch_sub(1);
                            reactor->Finish(s);
                          });
    return reactor;
  }

  PullEngine* engine_;
  RuntimeChannel* runtime_;
  ImageServiceOptions options_;
  std::atomic<int> in_flight_{0};
};

}  // namespace

const std::vector<std::string>& PullsOnlyMethods() {
  static const std::vector<std::string> methods = {"/runtime.v1.ImageService/PullImage",
                                                   "/runtime.v1.ImageService/PullImageWithProgress",
                                                   "/runtime.v1.ImageService/PullImageProgress"};
  return methods;
}

std::unique_ptr<grpc::Service> NewImageService(PullEngine* engine, RuntimeChannel* runtime,
                                               ImageServiceOptions options) {
  return std::make_unique<ImageService>(engine, runtime, options);
}

}  // namespace statlet::pulls
