// ObservedSource: what statlet reads in one containerd namespace to follow the pulls it
// does not carry (the kubelet's straight on containerd, `ctr`, `crictl`). ContainerdObserved
// (containerd_observed.cc) answers from containerd's content, leases and images services;
// ObservedPulls (observed_pulls.cc) sees only these plain types.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "pulls/content_source.h"

namespace statlet::pulls {

// One ingest in flight, as ListStatuses gives it (every kind: index, manifest, config, layer).
struct IngestStatus {
  std::string ref;  // the namespace's key: "layer-sha256:<hex>", "manifest-sha256:<hex>", …
  uint64_t offset = 0;
  uint64_t total = 0;
  int64_t started_unix_ns = 0;
  int64_t updated_unix_ns = 0;
};

struct LeaseInfo {
  std::string id;
  int64_t created_unix_ns = 0;
};

// What a lease holds: "ingests" (id: a ref), "content" (id: a digest) or "snapshots/…".
struct LeaseResource {
  std::string id;
  std::string type;
};

struct ImageRecord {
  std::string name;
  std::string target_digest;
};

class ObservedSource {
 public:
  virtual ~ObservedSource() = default;
  const std::string& namespace_name() const { return namespace_; }
  // Every ingest in flight (one ListStatuses).
  virtual StatusOr<std::vector<IngestStatus>> Ingests() = 0;
  virtual StatusOr<std::vector<LeaseInfo>> Leases() = 0;
  virtual StatusOr<std::vector<LeaseResource>> LeaseResources(const std::string& lease) = 0;
  // Which of `digests` are committed, with their labels.
  virtual StatusOr<std::vector<BlobInfo>> Committed(const std::vector<std::string>& digests) = 0;
  virtual StatusOr<Manifest> ReadManifest(const std::string& digest) = 0;
  // The images whose target is one of `digests`.
  virtual StatusOr<std::vector<ImageRecord>> ImagesWithTarget(const std::vector<std::string>& digests) = 0;

 protected:
  explicit ObservedSource(std::string ns) : namespace_(std::move(ns)) {}

 private:
  std::string namespace_;
};

// The digest an ingest ref names ("layer-sha256:…" or "layer-<name>@sha256:…"), and its
// kind ("layer", "manifest", "index", "config", "unknown"); both empty for another ref.
struct RefParts {
  std::string kind;
  std::string digest;
};
RefParts ParseIngestRef(const std::string& ref);

}  // namespace statlet::pulls
