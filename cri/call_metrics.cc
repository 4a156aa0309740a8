#include "cri/call_metrics.h"

#include <chrono>
#include <string>

#include "proto/cri_services.h"

namespace statlet::cri {

std::string CallMethodLabel(std::string_view path) {
  std::string_view m = path;
  if (!m.empty() && m.front() == '/') m.remove_prefix(1);
  const size_t slash = m.find('/');
  if (slash == std::string_view::npos) return "other";
  const std::string_view service = m.substr(0, slash), method = m.substr(slash + 1);
  for (const google::protobuf::ServiceDescriptor* known : {&proto::CriRuntimeService(), &proto::CriImageService()}) {
    if (service != known->full_name()) continue;
    return known->name() + "/" +
           (known->FindMethodByName(std::string(method)) != nullptr ? std::string(method) : "other");
  }
  return "other";
}

namespace {

using grpc::experimental::InterceptionHookPoints;

class CallMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  CallMetricsInterceptor(grpc::experimental::ServerRpcInfo* info, metrics::CallObserver* observer)
      : observer_(observer),
        method_(CallMethodLabel(info->method() ? info->method() : "")),
        start_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      observer_->ObserveCall(method_, GrpcCodeName(status.error_code()),
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
    methods->Proceed();
  }

 private:
  metrics::CallObserver* observer_;
  std::string method_;
  std::chrono::steady_clock::time_point start_;
};

class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(metrics::CallObserver* observer) : observer_(observer) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new CallMetricsInterceptor(info, observer_);
  }

 private:
  metrics::CallObserver* observer_;
};

}  // namespace

std::string_view GrpcCodeName(int code) {
  static constexpr std::string_view kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  return code >= 0 && code < static_cast<int>(std::size(kNames)) ? kNames[code] : std::string_view("UNKNOWN");
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> CallMetricsInterceptorFactory(
    metrics::CallObserver* observer) {
  return std::make_unique<Factory>(observer);
}

}  // namespace statlet::cri
