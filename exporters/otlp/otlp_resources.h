// The resources of an OTLP export: which cgroups are one (containers but the pause sandbox,
// the other cgroups of a bare host, pods), each one's Resource message encoded once per
// cgroup lifetime, and when its cumulative streams start.
//
// Entries are kept in path order and merged with each path-sorted snapshot, like the
// Prometheus encoder's label blocks: no hashing, vanished cgroups dropped in the same pass.
// An entry's encoding is kept while the cgroup's identity and the metadata it is labelled
// from stay the same; its first-seen time while its path stays in the snapshots.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exporters/otlp/otlp_mapping.h"
#include "metrics/metric_selection.h"
#include "snapshot/snapshot.h"

namespace statlet::otlp {

// Attributes every resource carries (host.name, k8s.node.name, service.name, and the
// OTEL_RESOURCE_ATTRIBUTES pairs), in order; the cgroup's own attributes win over them.
struct NodeResource {
  std::vector<std::pair<std::string, std::string>> attributes;
};

// Which resource a cgroup is, if any.
std::optional<ResourceKind> ResourceOf(const CgroupStats& c);

class ResourceCache {
 public:
  struct Entry {
    std::string path;
    uint64_t cgroup_id = 0;
    int64_t created_ns = 0;
    CgroupKind kind = CgroupKind::kOther;
    std::shared_ptr<const ContainerMetadata> meta;  // held so that comparing it stays valid
    int64_t first_seen_ns = 0;
    size_t cgroup = 0;      // index in the snapshot last synced
    ResourceKind resource;  // which metrics it carries
    // ResourceMetrics.resource as a whole field (tag, length, Resource message).
    std::string encoded;
  };

  // `selection`: the labels left out (`image`: the image attributes, `id`: the cgroup path).
  explicit ResourceCache(NodeResource node, metrics::MetricSelection selection = {});

  // Brings the entries in step with the first `count` cgroups of `s`: one per resource
  // cgroup, in path order.
  void Sync(const Snapshot& s, size_t count);
  const std::vector<Entry>& entries() const { return entries_; }
  // Resources encoded since construction (once per cgroup lifetime).
  uint64_t encoded() const { return encoded_; }

 private:
  void Encode(const CgroupStats& c, Entry* e);

  metrics::MetricSelection selection_;

  // The node's attributes, each an encoded Resource.attributes field, with its key.
  std::vector<std::pair<std::string, std::string>> node_;
  std::vector<Entry> entries_;
  std::vector<Entry> scratch_;  // the previous entries while syncing (buffers reused)
  std::string content_;         // a Resource message being built
  uint64_t encoded_ = 0;
};

}  // namespace statlet::otlp
