// What the pull engine's two clients of containerd's own API (content, and the observed
// pulls' content, leases and images) read the same way: a containerd timestamp, and a failed
// call's gRPC status as a statlet Status.
#pragma once

#include <google/protobuf/timestamp.pb.h>
#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace statlet::pulls {

inline int64_t UnixNanos(const google::protobuf::Timestamp& t) { return t.seconds() * 1000000000 + t.nanos(); }

// `call` names the service and method ("Content/Read"). NOT_FOUND and INVALID_ARGUMENT keep
// their meaning; anything else is containerd unavailable to the pull, with its code.
inline Status FromContainerdCall(const char* call, const grpc::Status& s) {
  std::string m = std::string("containerd ") + call + ": " + s.error_message();
  if (s.error_code() == grpc::StatusCode::NOT_FOUND) return NotFound(m);
  if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) return InvalidArgument(m);
  return Unavailable(m + " (code " + std::to_string(static_cast<int>(s.error_code())) + ")");
}

}  // namespace statlet::pulls
