// Options of the OTLP exporter: the --otlp.* flags and YAML keys, with the standard
// OTEL_* environment variables applied under them (flags and the file win over the
// environment, as for every other statlet option).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace statlet::otlp {

enum class Protocol { kGrpc, kHttpProtobuf };

struct OtlpOptions {
  // Where to send. Empty: no export. A base URL ("http://collector:4318"): OTLP/HTTP
  // posts to <base>/v1/metrics; with `endpoint_is_full_url` (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)
  // it is used as it is. gRPC: http:// plain, https:// TLS, no scheme: TLS unless `insecure`.
  std::string endpoint;
  bool endpoint_is_full_url = false;
  Protocol protocol = Protocol::kHttpProtobuf;
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout{10000};  // per request
  bool gzip = false;
  std::chrono::milliseconds interval{60000};
  std::string ca_file;  // trusted CAs for https; empty: the system's
  bool insecure = false;
  size_t max_request_bytes = 4 << 20;  // gRPC's default receive cap
  size_t max_queue_bytes = 64 << 20;
  std::chrono::milliseconds max_retry_time{60000};  // a batch is given up after retrying this long
  std::vector<std::pair<std::string, std::string>> resource_attributes;
  std::string service_name = "statlet";
  std::string node_name;  // k8s.node.name; empty: $NODE_NAME
};

// Parses "k1=v1,k2=v2" with percent-encoded values (W3C baggage, OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_RESOURCE_ATTRIBUTES); an error for any malformed pair.
Status ParseKeyValueList(const std::string& text, std::vector<std::pair<std::string, std::string>>* out);
Status ParseProtocol(const std::string& text, Protocol* out);

// Applies the OTEL_* variables `getenv` returns (signal-specific over generic, empty = unset).
Status ApplyEnvironment(const std::function<const char*(const char*)>& getenv, OtlpOptions* out);

// The URL OTLP/HTTP posts to.
std::string HttpUrl(const OtlpOptions& o);

}  // namespace statlet::otlp
