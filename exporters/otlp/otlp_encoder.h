// OtlpEncoder: a snapshot as OTLP ExportMetricsServiceRequests, one ResourceMetrics per
// container and per pod, split into requests whose serialized size stays under a limit.
// The samples come from the value path (metrics/snapshot_samples.h); the names, units and
// attributes from the mapping table (otlp_mapping.h).
//
// Cumulative points start at the container's start (metrics::StartTimeNs), else at the
// first snapshot the encoder saw the cgroup in. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "metrics/snapshot_samples.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "snapshot/snapshot.h"

namespace statlet::otlp {

using ExportRequest = opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;

// Attributes every resource carries (host.name, k8s.node.name, service.name, and the
// OTEL_RESOURCE_ATTRIBUTES pairs), in order; the cgroup's own attributes win over them.
struct NodeResource {
  std::vector<std::pair<std::string, std::string>> attributes;
};

class OtlpEncoder {
 public:
  // `max_request_bytes`: a request's serialized size at most (a single resource with more
  // metrics than fit is split by metric; one metric larger than the limit goes alone).
  // `namer`: block device names (tests give fixed ones).
  OtlpEncoder(NodeResource node, metrics::SampleRules rules, size_t max_request_bytes, std::string scope_version = "",
              metrics::DeviceNames::Namer namer = metrics::BlockDeviceName);

  // Appends the requests of `snapshot` to *out.
  void Encode(const Snapshot& snapshot, std::vector<ExportRequest>* out);

  uint64_t last_points() const { return points_; }

 private:
  class PointSink;
  void EncodeCgroup(size_t i, int64_t start_ns, opentelemetry::proto::metrics::v1::ResourceMetrics* rm);
  void SetResource(const CgroupStats& c, opentelemetry::proto::resource::v1::Resource* r);
  void Pack(std::vector<std::unique_ptr<opentelemetry::proto::metrics::v1::ResourceMetrics>>* rms,
            std::vector<ExportRequest>* out);

  NodeResource node_;
  metrics::SnapshotSamples samples_;
  size_t max_request_bytes_;
  std::string scope_version_;
  std::map<std::string, int64_t> first_seen_;  // cgroup path -> first snapshot time seen
  uint64_t points_ = 0;
};

}  // namespace statlet::otlp
