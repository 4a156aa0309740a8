#include "cri/call_metrics.h"

#include <chrono>
#include <string>

namespace statlet::cri {
namespace {

using grpc::experimental::InterceptionHookPoints;

class CallMetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  CallMetricsInterceptor(grpc::experimental::ServerRpcInfo* info, metrics::CallObserver* observer)
      : observer_(observer), method_(MethodName(info->method())), start_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      observer_->ObserveCall(method_, GrpcCodeName(status.error_code()),
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
    methods->Proceed();
  }

 private:
  // "/runtime.v1.RuntimeService/ListContainerStats" -> "RuntimeService/ListContainerStats".
  static std::string MethodName(const char* full) {
    std::string_view m = full ? full : "";
    if (!m.empty() && m.front() == '/') m.remove_prefix(1);
    const size_t slash = m.find('/');
    const size_t dot = m.rfind('.', slash);
    if (dot != std::string_view::npos && dot < slash) m.remove_prefix(dot + 1);
    return std::string(m);
  }

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
