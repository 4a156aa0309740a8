#include "cri/passthrough.h"

#include <time.h>

#include <algorithm>

#include <grpc/support/time.h>
#include <grpcpp/grpcpp.h>

#include "base/monotonic_clock.h"
#include "base/unix_socket.h"
#include "cri/passed_call.h"
#include "proto/cri_services.h"

namespace statlet::cri {
namespace {

constexpr std::string_view kRuntimeService = "/runtime.v1.RuntimeService/";
constexpr std::string_view kImageService = "/runtime.v1.ImageService/";

// How often the thread looks at the calls in flight (while there are any).
constexpr std::chrono::seconds kWatchPeriod{1};
// Calls asked of the server ahead of their arrival.
constexpr int kRequestsAhead = 4;
// After an event while a unary call that changes no workload waits on the runtime, the
// thread looks at the queue without blocking for this long before it sleeps: the runtime's
// answer then usually finds the thread awake on its CPU instead of waking it
// (bench/RESULTS.md has the trade-off).
constexpr std::chrono::microseconds kSpinForRuntime{150};

std::string_view MethodOf(std::string_view path) {
  for (std::string_view service : {kRuntimeService, kImageService}) {
    if (path.substr(0, service.size()) == service) return path.substr(service.size());
  }
  return {};
}

}  // namespace

bool IsPassableMethod(std::string_view path) {
  std::string_view m = MethodOf(path);
  return !m.empty() && m.find('/') == std::string_view::npos;
}

bool ChangesWorkloads(std::string_view path) {
  static constexpr std::string_view kChanging[] = {
      "RunPodSandbox", "StopPodSandbox",  "RemovePodSandbox",         "CreateContainer",           "StartContainer",
      "StopContainer", "RemoveContainer", "UpdateContainerResources", "UpdatePodSandboxResources", "RestorePod",
  };
  if (path.substr(0, kRuntimeService.size()) != kRuntimeService) return false;
  const std::string_view m = path.substr(kRuntimeService.size());
  return std::find(std::begin(kChanging), std::end(kChanging), m) != std::end(kChanging);
}

bool IsUnaryMethod(std::string_view path) {
  const std::string_view method = MethodOf(path);
  if (method.empty()) return false;
  const bool runtime = path.substr(0, kRuntimeService.size()) == kRuntimeService;
  const google::protobuf::MethodDescriptor* m =
      (runtime ? proto::CriRuntimeService() : proto::CriImageService()).FindMethodByName(std::string(method));
  return m != nullptr && !m->client_streaming() && !m->server_streaming();
}

StatusOr<std::unique_ptr<PassThroughService>> PassThroughService::Create(PassThroughOptions options) {
  if (options.runtime_endpoint.empty() || options.runtime_endpoint == "none") {
    return InvalidArgument("the CRI proxy needs the runtime's endpoint (--runtime.endpoint unix:///…)");
  }
  auto path = ParseUnixEndpoint(options.runtime_endpoint);
  if (!path.ok()) return path.status();
  if (options.max_calls < 1) return InvalidArgument("the CRI proxy needs max_calls >= 1");
  return std::unique_ptr<PassThroughService>(new PassThroughService(std::move(options), *path));
}

namespace {

// How long one connection attempt to the runtime may take. A runtime that is down refuses
// at once (no socket, or no listener on it); this bounds one that accepts and stays silent.
constexpr int kRuntimeConnectTimeoutMs = 5000;

std::shared_ptr<grpc::Channel> RuntimeChannel(const std::string& path, size_t max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(max_message_bytes, INT32_MAX)));
  // A passed call is sent once, as the caller sent it: the caller decides about retries
  // (and the library's retry buffer would hold a copy of every request).
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  // A restarted runtime is found within a second (the library's default backoff grows to
  // two minutes, during which every passed call would fail).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // The "minimum backoff" is the library's time limit on one connection attempt (the
  // runtime's HTTP/2 SETTINGS must arrive within it), not a wait between attempts: at
  // 100 ms a runtime busy for a moment failed every call that was to open the connection.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kRuntimeConnectTimeoutMs);
  return grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

PassThroughService::PassThroughService(PassThroughOptions options, std::string path)
    : options_(std::move(options)),
      path_(std::move(path)),
      channel_(RuntimeChannel(path_, options_.max_message_bytes)),
      stub_(channel_) {
  channel_->GetState(/*try_to_connect=*/true);  // the first passed call finds it connected
  if (options_.local_channel != nullptr) local_stub_ = std::make_unique<grpc::GenericStub>(options_.local_channel);
}

grpc::GenericStub& PassThroughService::StubFor(std::string_view method, bool* local) {
  *local = local_stub_ != nullptr && std::find(options_.local_methods.begin(), options_.local_methods.end(), method) !=
                                         options_.local_methods.end();
  return *local ? *local_stub_ : stub_;
}

PassThroughService::~PassThroughService() { Stop(); }

void PassThroughService::AddTo(grpc::ServerBuilder* builder) {
  builder->RegisterAsyncGenericService(&generic_);
  cq_ = builder->AddCompletionQueue();
}

void PassThroughService::Start() {
  if (cq_ == nullptr || thread_.joinable()) return;
  // A few calls asked for ahead: a burst of callers finds a waiting call object at once
  // (each taken one is replaced as it arrives).
  for (int i = 0; i < kRequestsAhead; ++i) PassedCall::Request(this);
  thread_ = std::thread([this] { Run(); });
}

void PassThroughService::Stop() {
  if (cq_ == nullptr) return;
  if (!thread_.joinable()) {  // never started: nothing asked of the queue
    if (!cq_shut_) {
      cq_shut_ = true;
      cq_->Shutdown();
      void* tag;
      bool ok;
      while (cq_->Next(&tag, &ok)) {
      }
    }
    return;
  }
  if (!stopping_.exchange(true)) {
    wake_ = std::make_unique<grpc::Alarm>();
    wake_->Set(cq_.get(), gpr_now(GPR_CLOCK_MONOTONIC), &wake_tag_);
  }
  thread_.join();
}

void PassThroughService::Run() {
  const auto period = std::chrono::duration_cast<std::chrono::nanoseconds>(kWatchPeriod).count();
  const int64_t spin_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(kSpinForRuntime).count();
  int64_t next_check = 0;
  int64_t spin_until = 0;
  for (;;) {
    void* tag = nullptr;
    bool ok = false;
    grpc::CompletionQueue::NextStatus next;
    if (spin_until != 0 && MonotonicNowNs() < spin_until) {  // spinning: a zero deadline polls once
      next = cq_->AsyncNext(&tag, &ok, gpr_time_0(GPR_CLOCK_MONOTONIC));
      if (next == grpc::CompletionQueue::TIMEOUT) continue;
    } else {
      spin_until = 0;
      // While calls are in flight the queue is left once a period for their time bounds.
      const gpr_timespec deadline =
          live_ != nullptr ? gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_nanos(period, GPR_TIMESPAN))
                           : gpr_inf_future(GPR_CLOCK_MONOTONIC);
      next = cq_->AsyncNext(&tag, &ok, deadline);
    }
    if (next == grpc::CompletionQueue::SHUTDOWN) break;
    if (next == grpc::CompletionQueue::GOT_EVENT) {
      if (tag == &wake_tag_) {
        stopping_seen_ = true;
        for (PassedCall* c = live_; c != nullptr; c = c->next) c->Cancel();
      } else {
        const auto bits = reinterpret_cast<uintptr_t>(tag);
        auto* call = reinterpret_cast<PassedCall*>(bits & ~PassedCall::kOpMask);
        if (!call->OnEvent(static_cast<PassedCall::Op>(bits & PassedCall::kOpMask), ok)) delete call;
      }
      if (awaiting_runtime_ > 0) spin_until = MonotonicNowNs() + spin_ns;
    }
    if (live_ != nullptr) {
      const int64_t now = MonotonicNowNs();
      if (next_check == 0) next_check = now + period;
      if (now >= next_check) {
        CheckTimes();
        next_check = now + period;
      }
    } else {
      next_check = 0;
    }
    // Stopping: the server is shut down (no call arrives, the asked ones came back); once
    // the last call is over nothing more is asked of the queue.
    if (stopping_seen_ && !cq_shut_ && live_ == nullptr && requests_ == 0) {
      cq_shut_ = true;
      cq_->Shutdown();
    }
  }
}

void PassThroughService::CheckTimes() {
  const int64_t now = MonotonicNowNs();
  const int64_t request_ns = std::chrono::nanoseconds(options_.request_timeout).count();
  const int64_t stall_ns = std::chrono::nanoseconds(options_.write_stall_timeout).count();
  for (PassedCall* c = live_; c != nullptr; c = c->next) {
    if (c->TimedOut(now, request_ns, stall_ns)) timed_out_.fetch_add(1, std::memory_order_relaxed);
  }
}

void PassThroughService::Link(PassedCall* call) {
  call->prev = nullptr;
  call->next = live_;
  if (live_ != nullptr) live_->prev = call;
  live_ = call;
}

void PassThroughService::Unlink(PassedCall* call) {
  if (call->prev != nullptr) call->prev->next = call->next;
  if (call->next != nullptr) call->next->prev = call->prev;
  if (live_ == call) live_ = call->next;
  call->prev = call->next = nullptr;
}

PassThroughStats PassThroughService::stats() const {
  PassThroughStats s;
  s.in_flight = in_flight_.load(std::memory_order_relaxed);
  s.held_bytes = held_bytes_.load(std::memory_order_relaxed);
  s.calls = calls_.load(std::memory_order_relaxed);
  s.refused = refused_.load(std::memory_order_relaxed);
  s.timed_out = timed_out_.load(std::memory_order_relaxed);
  return s;
}

bool PassThroughService::Hold(size_t bytes) {
  const auto n = static_cast<int64_t>(bytes);
  if (held_bytes_.fetch_add(n, std::memory_order_relaxed) + n > static_cast<int64_t>(options_.max_held_bytes)) {
    held_bytes_.fetch_sub(n, std::memory_order_relaxed);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

}  // namespace statlet::cri
