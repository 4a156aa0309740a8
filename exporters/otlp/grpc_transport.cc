// OTLP/gRPC: opentelemetry.proto.collector.metrics.v1.MetricsService/Export.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "exporters/otlp/otlp_transport.h"
#include "google/rpc/status.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"

namespace statlet::otlp {
namespace {

namespace cm = opentelemetry::proto::collector::metrics::v1;

// The method as the generated service names it (metrics_service.proto).
const std::string kExportMethod = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";

class GrpcTransport final : public Transport {
 public:
  GrpcTransport(std::shared_ptr<grpc::Channel> channel, const OtlpOptions& o) : stub_(channel), options_(o) {}

  SendResult Send(std::string_view request) override {
    grpc::ClientContext ctx;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (aborted_) return {SendResult::kPermanent, std::nullopt, 0, "gRPC: stopping"};
      in_flight_ = &ctx;
    }
    struct Clear {
      GrpcTransport* t;
      ~Clear() {
        std::lock_guard<std::mutex> lock(t->mu_);
        t->in_flight_ = nullptr;
      }
    } clear{this};
    if (options_.timeout.count() > 0) ctx.set_deadline(std::chrono::system_clock::now() + options_.timeout);
    for (const auto& [k, v] : options_.headers) {
      std::string key;
      for (char c : k) key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      ctx.AddMetadata(key, v);
    }
    if (options_.gzip) ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    cm::ExportMetricsServiceResponse response;
    grpc::Status status = Call(&ctx, request, &response);
    SendResult r;
    if (status.ok()) {
      if (response.has_partial_success()) {
        r.rejected_points = response.partial_success().rejected_data_points();
        r.message = response.partial_success().error_message();
      }
      return r;
    }
    r.message = "gRPC " + std::to_string(status.error_code()) + ": " + status.error_message();
    r.retry_after = GrpcRetryDelay(status.error_details());
    switch (status.error_code()) {
      case grpc::StatusCode::CANCELLED:
      case grpc::StatusCode::DEADLINE_EXCEEDED:
      case grpc::StatusCode::ABORTED:
      case grpc::StatusCode::OUT_OF_RANGE:
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::DATA_LOSS: r.kind = SendResult::kRetryable; break;
      // Retryable only when the server says when (RetryInfo).
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
        r.kind = r.retry_after ? SendResult::kRetryable : SendResult::kPermanent;
        break;
      default: r.kind = SendResult::kPermanent; break;
    }
    return r;
  }

  // One unary call with the request's bytes as they are (a generic call: the encoder wrote
  // the message), waited for on a queue of its own.
  grpc::Status Call(grpc::ClientContext* ctx, std::string_view request, cm::ExportMetricsServiceResponse* response) {
    grpc::Slice slice(request.data(), request.size());
    grpc::ByteBuffer body(&slice, 1), answer;
    grpc::CompletionQueue cq;
    grpc::Status status;
    auto call = stub_.PrepareUnaryCall(ctx, kExportMethod, body, &cq);
    call->StartCall();
    call->Finish(&answer, &status, this);
    void* tag = nullptr;
    bool ok = false;
    const bool got = cq.Next(&tag, &ok);
    cq.Shutdown();
    for (void* t; cq.Next(&t, &ok);) {
    }
    if (!got) return grpc::Status(grpc::StatusCode::INTERNAL, "completion queue shut down");
    if (status.ok()) {
      std::vector<grpc::Slice> slices;
      std::string bytes;
      if (answer.Dump(&slices).ok()) {
        for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
      if (!response->ParseFromString(bytes)) {
        return grpc::Status(grpc::StatusCode::INTERNAL, "unparsable ExportMetricsServiceResponse");
      }
    }
    return status;
  }

  void Abort() override {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    if (in_flight_) in_flight_->TryCancel();  // the call ends CANCELLED at once
  }

 private:
  grpc::GenericStub stub_;
  OtlpOptions options_;
  std::mutex mu_;
  bool aborted_ = false;                      // guarded by mu_
  grpc::ClientContext* in_flight_ = nullptr;  // guarded by mu_
};

}  // namespace

std::optional<std::chrono::milliseconds> GrpcRetryDelay(const std::string& error_details) {
  if (error_details.empty()) return std::nullopt;
  google::rpc::Status details;
  if (!details.ParseFromString(error_details)) return std::nullopt;
  for (const google::protobuf::Any& any : details.details()) {
    google::rpc::RetryInfo info;
    if (any.Is<google::rpc::RetryInfo>() && any.UnpackTo(&info)) {
      const auto& d = info.retry_delay();
      if (d.seconds() < 0 || d.nanos() < 0 || d.seconds() > 86400) return std::nullopt;
      return std::chrono::milliseconds(d.seconds() * 1000 + d.nanos() / 1000000);
    }
  }
  return std::nullopt;
}

StatusOr<std::unique_ptr<Transport>> MakeGrpcTransport(const OtlpOptions& o) {
  std::string target = o.endpoint;
  bool tls = !o.insecure;
  if (target.rfind("http://", 0) == 0) {
    target = target.substr(7);
    tls = false;
  } else if (target.rfind("https://", 0) == 0) {
    target = target.substr(8);
    tls = true;
  }
  if (size_t slash = target.find('/'); slash != std::string::npos) target.resize(slash);
  if (target.empty()) return InvalidArgument("otlp.endpoint: no host in \"" + o.endpoint + "\"");
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (tls) {
    grpc::SslCredentialsOptions ssl;
    if (!o.ca_file.empty()) {
      std::ifstream in(o.ca_file);
      if (!in) return InvalidArgument("otlp.ca-file: cannot read " + o.ca_file);
      std::stringstream ss;
      ss << in.rdbuf();
      ssl.pem_root_certs = ss.str();
    }
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(4 << 20);  // the answer: the spec's response cap
  // Reconnect attempts back off from 1 s, at most 10 s apart, while the receiver is down.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 10000);
  return std::unique_ptr<Transport>(new GrpcTransport(grpc::CreateCustomChannel(target, creds, args), o));
}

}  // namespace statlet::otlp
