// --otlp.*: OTLP metrics push (otlp::OtlpOptions). The OTEL_* environment sits under these
// flags and the config file (cmd/daemon_options.cc applies it first).
#include "cmd/daemon_flags.h"

namespace statlet {
namespace {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// "k=v,..." with percent-encoded values; each value replaces the list.
std::function<Status(const Flag&, const std::string&)> SetKeyValues(KeyValues* field) {
  return [field](const Flag& flag, const std::string& v) {
    field->clear();
    if (Status s = otlp::ParseKeyValueList(v, field); !s.ok()) return flag.Error(s.message());
    return Status::Ok();
  };
}

}  // namespace

void RegisterOtlpFlags(FlagSet& flags, DaemonOptions* o) {
  using std::chrono::milliseconds;
  otlp::OtlpOptions& x = o->otlp;
  FlagGroup otlp = flags.Group("otlp");
  otlp.Custom("endpoint", x.endpoint,
              "Push metrics to this OTLP receiver (http://host:port, https://host:port); empty: no OTLP export. "
              "Environment: OTEL_EXPORTER_OTLP_ENDPOINT (base URL; OTLP/HTTP appends v1/metrics), "
              "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (used as it is).",
              [&x](const Flag&, const std::string& v) {
                x.endpoint = v;
                x.endpoint_is_full_url = false;  // a flag's endpoint is a base URL, whatever the environment said
                return Status::Ok();
              });
  otlp.Enum("protocol", &x.protocol,
            {{"grpc", otlp::Protocol::kGrpc}, {"http/protobuf", otlp::Protocol::kHttpProtobuf}},
            "OTLP transport: grpc or http/protobuf (OTEL_EXPORTER_OTLP_PROTOCOL).");
  otlp.Custom("headers", "",
              "Headers (gRPC metadata) of every OTLP request: key=value,... with percent-encoded values "
              "(OTEL_EXPORTER_OTLP_HEADERS).",
              SetKeyValues(&x.headers))
      .Example("authorization=Bearer%20t0ken");
  otlp.Duration("timeout", &x.timeout, {}, "Deadline of one OTLP request (OTEL_EXPORTER_OTLP_TIMEOUT, in ms).");
  otlp.Enum("compression", &x.gzip, {{"gzip", true}, {"none", false}},
            "gzip or none (OTEL_EXPORTER_OTLP_COMPRESSION).");
  otlp.Duration("interval", &x.interval, {.min = milliseconds(100)},
                "Time between two exports, +-10 % jitter (OTEL_METRIC_EXPORT_INTERVAL, in ms).");
  otlp.String("ca-file", &x.ca_file,
              "CA bundle an https receiver's certificate is checked against; empty: the system's "
              "(OTEL_EXPORTER_OTLP_CERTIFICATE).");
  otlp.Bool("insecure", &x.insecure, "Plain text to an endpoint without a scheme (OTEL_EXPORTER_OTLP_INSECURE).");
  otlp.Bytes("max-request-bytes", &x.max_request_bytes, {.min = 4096},
             "An export is split into requests of at most this many serialized bytes (gRPC's default receive cap).");
  otlp.Bytes("max-queue-bytes", &x.max_queue_bytes, {},
             "Batches waiting to be sent at most (serialized bytes); the oldest are dropped and counted in "
             "statlet_otlp_dropped_batches_total.");
  otlp.Custom("resource-attributes", "",
              "Attributes added to every resource: key=value,... (OTEL_RESOURCE_ATTRIBUTES).",
              SetKeyValues(&x.resource_attributes))
      .Example("k8s.cluster.name=prod");
  otlp.String("service-name", &x.service_name, "service.name of every resource (OTEL_SERVICE_NAME).");
  otlp.String("node-name", &x.node_name, "k8s.node.name of every resource; empty: $NODE_NAME.");
}

}  // namespace statlet
