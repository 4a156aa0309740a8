// OtlpEncoder: a snapshot as OTLP ExportMetricsServiceRequests in protobuf wire format, one
// ResourceMetrics per container and per pod, split into requests whose serialized size
// stays under a limit. The samples come from the value path (metrics/snapshot_samples.h);
// the names, units and attributes from the mapping table (otlp_mapping.h). The extra
// families of the sources added (image pulls) go on one more ResourceMetrics: the node's.
//
// One pass, written straight into one reused buffer (proto_wire.h): each metric's name,
// description and unit fields are encoded once, each cgroup's Resource once per cgroup
// lifetime (otlp_resources.h), points as they come from the value path, with no message
// objects. Requests are consecutive ranges of that buffer: a request ends where the next
// resource would take it over the limit. Only a resource larger than the limit is copied,
// into pieces of whole metrics, each piece a request of its own that repeats the resource.
//
// Cumulative points start at the container's start (metrics::StartTimeNs), else at the
// first snapshot the encoder saw the cgroup in; the node's at the first export. Not
// thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exporters/otlp/otlp_mapping.h"
#include "exporters/otlp/otlp_resources.h"
#include "metrics/extra_families.h"
#include "metrics/snapshot_samples.h"
#include "snapshot/snapshot.h"

namespace statlet::otlp {

namespace wire {
class Buffer;
}

// One export: serialized ExportMetricsServiceRequests back to back in `bytes`.
struct EncodedExport {
  std::shared_ptr<const std::string> bytes;
  std::vector<std::string_view> requests;  // views into *bytes, in order
};

class OtlpEncoder {
 public:
  // `max_request_bytes`: a request's serialized size at most (a single resource with more
  // metrics than fit is split by metric; one metric larger than the limit goes alone).
  // `namer`: block device names (tests give fixed ones).
  OtlpEncoder(NodeResource node, metrics::SampleRules rules, size_t max_request_bytes, std::string scope_version = "",
              metrics::DeviceNames::Namer namer = metrics::BlockDeviceName);
  ~OtlpEncoder();

  // Before the first Encode: a source of node metrics, collected at every Encode
  // (`source` outlives the encoder).
  void AddFamilies(const metrics::ExtraSource* source) { extras_.push_back(source); }

  // Replaces *out with the requests of `snapshot` (and of the node's metrics). The buffer is reused by the next Encode
  // unless something still holds out->bytes then.
  void Encode(const Snapshot& snapshot, EncodedExport* out);

  uint64_t last_points() const { return points_; }
  // Resource messages encoded since construction (once per cgroup lifetime).
  uint64_t resources_encoded() const { return resources_.encoded(); }

 private:
  class PointWriter;
  // A metric's fixed bytes: its name, description and unit fields, the tag of its data
  // field, the data's fields after the points (temporality, monotonic).
  struct MetricCode {
    std::string head;
    uint8_t data_tag = 0;
    std::string tail;
    // Length bytes expected for the data and the metric (the last ones seen).
    size_t data_len_guess = 1;
    size_t metric_len_guess = 2;
  };

  // Writes cgroup entry `e`'s ResourceMetrics; returns false when it had no points (nothing
  // written).
  bool EncodeResource(const ResourceCache::Entry& e, wire::Buffer& buf);
  bool EncodeMetric(size_t index, const OtlpMetric& m, const CgroupStats& c, size_t cgroup, int64_t start_ns,
                    wire::Buffer& buf);
  // The resource just written at [start, end) is larger than the limit: rewritten as pieces
  // of whole metrics, each one request, appended to *requests as offsets.
  void SplitResource(const ResourceCache::Entry& e, size_t start, wire::Buffer& buf,
                     std::vector<std::pair<size_t, size_t>>* requests);
  void WritePiece(const ResourceCache::Entry& e, std::string_view metrics, wire::Buffer& buf);
  // The extra families on the node's resource, stamped `time_ns`, as a serialized
  // ResourceMetrics; "" without points. Once per export and small: built as messages.
  std::string EncodeNode(int64_t time_ns);

  metrics::SnapshotSamples samples_;
  ResourceCache resources_;
  size_t max_request_bytes_;
  std::vector<MetricCode> codes_;  // parallel to OtlpMetrics()
  std::string scope_field_;        // ScopeMetrics.scope
  std::string scope_schema_;       // ScopeMetrics.schema_url
  std::string resource_schema_;    // ResourceMetrics.schema_url
  size_t rm_len_guess_ = 2, sm_len_guess_ = 2;

  std::shared_ptr<std::string> buffer_;
  std::vector<std::pair<size_t, size_t>> request_spans_;
  std::vector<std::pair<size_t, size_t>> metric_spans_;  // the metrics of the resource being written
  std::string piece_scratch_;
  NodeResource node_;
  std::string scope_version_;
  std::vector<const metrics::ExtraSource*> extras_;
  int64_t node_start_ns_ = 0;  // the first export of the node's metrics
  uint64_t points_ = 0;
};

}  // namespace statlet::otlp
