// Tells every call on statlet's CRI socket (method, gRPC status code, duration) to a
// CallObserver (the self metrics, in the daemon), as a gRPC server interceptor: one place
// for every service and method, including the calls that answer UNIMPLEMENTED.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <grpcpp/support/server_interceptor.h>

#include "metrics/call_observer.h"

namespace statlet::cri {

// "/runtime.v1.RuntimeService/ListContainerStats" -> "RuntimeService/ListContainerStats".
// A method statlet's proto does not declare counts as "<Service>/other", and any other
// path as "other": in proxy mode callers choose the paths, and the label stays bounded.
std::string CallMethodLabel(std::string_view path);

// The canonical name of a gRPC status code ("OK", "NOT_FOUND"...).
std::string_view GrpcCodeName(int code);

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> CallMetricsInterceptorFactory(
    metrics::CallObserver* observer);

}  // namespace statlet::cri
