// OtlpEncoder: a snapshot as OTLP ExportMetricsServiceRequests, one ResourceMetrics per
// container and per pod, split into requests whose serialized size stays under a limit.
// The samples come from the value path (metrics/snapshot_samples.h); the names, units and
// attributes from the mapping table (otlp_mapping.h). The extra families of the sources
// added (image pulls) go on one more ResourceMetrics: the node's.
//
// Cumulative points start at the container's start (metrics::StartTimeNs), else at the
// first snapshot the encoder saw the cgroup in; the node's at the first export. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "metrics/extra_families.h"
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

  // Before the first Encode: a source of node metrics, collected at every Encode
  // (`source` outlives the encoder).
  void AddFamilies(const metrics::ExtraSource* source) { extras_.push_back(source); }

  // Appends the requests of `snapshot` (and of the node's metrics) to *out.
  void Encode(const Snapshot& snapshot, std::vector<ExportRequest>* out);

  uint64_t last_points() const { return points_; }

 private:
  class PointSink;
  void EncodeCgroup(size_t i, int64_t start_ns, opentelemetry::proto::metrics::v1::ResourceMetrics* rm);
  void SetResource(const CgroupStats& c, opentelemetry::proto::resource::v1::Resource* r);
  void SetScope(opentelemetry::proto::metrics::v1::ResourceMetrics* rm);
  // The extra families on the node's resource, stamped `time_ns`; null without points.
  std::unique_ptr<opentelemetry::proto::metrics::v1::ResourceMetrics> EncodeNode(int64_t time_ns);
  void Pack(std::vector<std::unique_ptr<opentelemetry::proto::metrics::v1::ResourceMetrics>>* rms,
            std::vector<ExportRequest>* out);

  NodeResource node_;
  metrics::SnapshotSamples samples_;
  size_t max_request_bytes_;
  std::string scope_version_;
  std::map<std::string, int64_t> first_seen_;  // cgroup path -> first snapshot time seen
  std::vector<const metrics::ExtraSource*> extras_;
  int64_t node_start_ns_ = 0;  // the first export of the node's metrics
  uint64_t points_ = 0;
};

}  // namespace statlet::otlp
