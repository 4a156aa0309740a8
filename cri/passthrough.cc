#include "cri/passthrough.h"

#include <time.h>

#include <algorithm>

#include <grpcpp/grpcpp.h>

#include "base/unix_socket.h"
#include "cri/passed_call.h"
#include "proto/cri_services.h"

namespace statlet::cri {
namespace {

constexpr std::string_view kRuntimeService = "/runtime.v1.RuntimeService/";
constexpr std::string_view kImageService = "/runtime.v1.ImageService/";

// How often the watchdog looks at the calls in flight (while there are any).
constexpr std::chrono::seconds kWatchPeriod{1};

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string_view MethodOf(std::string_view path) {
  for (std::string_view service : {kRuntimeService, kImageService}) {
    if (path.substr(0, service.size()) == service) return path.substr(service.size());
  }
  return {};
}

// A path as a status message quotes it: a client's path can be long.
std::string Quoted(std::string_view path) {
  constexpr size_t kShown = 96;
  if (path.size() <= kShown) return "\"" + std::string(path) + "\"";
  return "\"" + std::string(path.substr(0, kShown)) + "...\"";
}

// Answers at once with a status of statlet's own.
class Refusal final : public grpc::ServerGenericBidiReactor {
 public:
  explicit Refusal(grpc::Status s) { Finish(std::move(s)); }
  void OnDone() override { delete this; }
};

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

std::shared_ptr<grpc::Channel> RuntimeChannel(const std::string& path, size_t max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(max_message_bytes, INT32_MAX)));
  // A passed call is sent once, as the caller sent it: the caller decides about retries
  // (and the library's retry buffer would hold a copy of every request).
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  // A restarted runtime is found within a second (the library's default backoff grows to
  // two minutes, during which every passed call would fail).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

PassThroughService::PassThroughService(PassThroughOptions options, std::string path)
    : options_(std::move(options)),
      path_(std::move(path)),
      channel_(RuntimeChannel(path_, options_.max_message_bytes)),
      stub_(channel_) {
  channel_->GetState(/*try_to_connect=*/true);  // the first passed call finds it connected
  watchdog_ = std::thread([this] { Watch(); });
}

PassThroughService::~PassThroughService() {
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    stopping_ = true;
  }
  watch_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

grpc::ServerGenericBidiReactor* PassThroughService::CreateReactor(grpc::GenericCallbackServerContext* ctx) {
  if (!IsPassableMethod(ctx->method())) {
    return new Refusal(grpc::Status(
        grpc::StatusCode::UNIMPLEMENTED,
        "statlet passes runtime.v1 RuntimeService and ImageService calls only, not " + Quoted(ctx->method())));
  }
  if (in_flight_.fetch_add(1, std::memory_order_relaxed) >= options_.max_calls) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return new Refusal(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        "statlet's CRI proxy has " + std::to_string(options_.max_calls) + " calls in flight (--cri.proxy-max-calls)"));
  }
  calls_.fetch_add(1, std::memory_order_relaxed);
  return PassedCall::Start(this, ctx);  // in_flight_ drops when the call is gone
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

void PassThroughService::Register(const std::shared_ptr<PassedCall>& call) {
  std::lock_guard<std::mutex> lock(watch_mu_);
  // Ended calls leave expired entries; the watchdog drops them each period, and so does a
  // burst here before the list outgrows what the limits allow.
  if (watched_.size() >= 2 * static_cast<size_t>(options_.max_calls) + 64) {
    std::erase_if(watched_, [](const std::weak_ptr<PassedCall>& w) { return w.expired(); });
  }
  watched_.push_back(call);
  if (watched_.size() == 1) watch_cv_.notify_one();
}

void PassThroughService::Watch() {
  const int64_t request_ns = std::chrono::nanoseconds(options_.request_timeout).count();
  const int64_t stall_ns = std::chrono::nanoseconds(options_.write_stall_timeout).count();
  std::unique_lock<std::mutex> lock(watch_mu_);
  std::vector<std::shared_ptr<PassedCall>> late;
  while (!stopping_) {
    if (watched_.empty()) {
      watch_cv_.wait(lock, [&] { return stopping_ || !watched_.empty(); });
      continue;
    }
    watch_cv_.wait_for(lock, kWatchPeriod, [&] { return stopping_; });
    if (stopping_) break;
    const int64_t now = NowNs();
    size_t kept = 0;
    for (size_t i = 0; i < watched_.size(); ++i) {
      std::shared_ptr<PassedCall> call = watched_[i].lock();
      if (!call) continue;
      if (kept != i) watched_[kept] = std::move(watched_[i]);
      ++kept;
      const int64_t awaiting = call->awaiting_request_since(), writing = call->writing_since();
      if ((awaiting != 0 && now - awaiting > request_ns) || (writing != 0 && now - writing > stall_ns)) {
        late.push_back(std::move(call));
      }
    }
    watched_.resize(kept);
    if (late.empty()) continue;
    lock.unlock();
    // Cancelling may run the calls' reactions on this thread, and dropping the last
    // reference frees a call: neither under the watchdog's lock.
    for (auto& call : late) {
      timed_out_.fetch_add(1, std::memory_order_relaxed);
      call->Cancel();
    }
    late.clear();
    lock.lock();
  }
}

}  // namespace statlet::cri
