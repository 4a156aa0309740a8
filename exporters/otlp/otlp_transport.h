// One OTLP request on the wire and what its answer means for the retry loop: OTLP/gRPC
// (grpc++) and OTLP/HTTP with a protobuf body (libcurl). Both bound each request by a
// deadline and read RetryInfo / Retry-After.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "exporters/otlp/otlp_encoder.h"
#include "exporters/otlp/otlp_options.h"

namespace statlet::otlp {

struct SendResult {
  enum Kind { kOk, kRetryable, kPermanent };
  Kind kind = kOk;
  // The server's wait (gRPC RetryInfo, HTTP Retry-After), when it named one.
  std::optional<std::chrono::milliseconds> retry_after;
  int64_t rejected_points = 0;  // partial success
  std::string message;          // error, or the partial-success message
};

class Transport {
 public:
  virtual ~Transport() = default;
  // `request`: a serialized ExportMetricsServiceRequest (OtlpEncoder's), sent as it is.
  virtual SendResult Send(std::string_view request) = 0;
  // Ends the Send in flight at once (and makes every later one fail at once): Stop must not
  // wait for a receiver that holds a request until its deadline. Any thread.
  virtual void Abort() = 0;
};

StatusOr<std::unique_ptr<Transport>> MakeGrpcTransport(const OtlpOptions& o);
StatusOr<std::unique_ptr<Transport>> MakeHttpTransport(const OtlpOptions& o);

// RetryInfo.retry_delay in a gRPC status's details (a serialized google.rpc.Status), if any.
std::optional<std::chrono::milliseconds> GrpcRetryDelay(const std::string& error_details);

// Retry-After as delta-seconds or an HTTP-date; none when unparsable.
std::optional<std::chrono::milliseconds> ParseRetryAfter(const std::string& value,
                                                         std::chrono::system_clock::time_point now);

}  // namespace statlet::otlp
