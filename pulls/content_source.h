// ContentSource: what the pull engine asks the runtime's content store while pulls run.
// ContainerdContent (containerd_content.cc) answers from containerd's content service;
// the engine sees only these plain types.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "pulls/image_name.h"

namespace statlet::pulls {

// One layer blob being written ("layer-sha256:<hex>" ingests).
struct Ingest {
  std::string digest;
  uint64_t offset = 0;
  uint64_t total = 0;
};

// A committed blob.
struct BlobInfo {
  std::string digest;
  uint64_t size = 0;
  int64_t created_unix_ns = 0;  // when it was committed
  std::map<std::string, std::string> labels;
};

struct ManifestLayer {
  std::string digest;
  uint64_t size = 0;
};

struct Manifest {
  std::string digest;
  std::string config_digest;  // the image id the CRI answers with
  std::vector<ManifestLayer> layers;
};

class ContentSource {
 public:
  virtual ~ContentSource() = default;
  // Every layer ingest in flight.
  virtual StatusOr<std::vector<Ingest>> LayerIngests() = 0;
  // Committed image manifests that name `image`'s repository among their sources, with the
  // garbage-collection labels that list their config and layers.
  virtual StatusOr<std::vector<BlobInfo>> ManifestsOf(const ImageName& image) = 0;
  // Committed image manifests whose config is `config_digest`.
  virtual StatusOr<std::vector<BlobInfo>> ManifestsWithConfig(const std::string& config_digest) = 0;
  virtual StatusOr<Manifest> ReadManifest(const std::string& digest) = 0;
  // Which of `digests` are committed.
  virtual StatusOr<std::vector<BlobInfo>> Committed(const std::vector<std::string>& digests) = 0;
};

// containerd's label names (images/labels and remotes/docker of containerd 1.6).
inline constexpr char kConfigLabel[] = "containerd.io/gc.ref.content.config";
inline constexpr char kLayerLabelPrefix[] = "containerd.io/gc.ref.content.l.";
inline constexpr char kSourceLabelPrefix[] = "containerd.io/distribution.source.";

// Parses an OCI or Docker schema 2 image manifest (not an index) into its config and layers.
StatusOr<Manifest> ParseManifest(const std::string& digest, const std::string& json);

}  // namespace statlet::pulls
