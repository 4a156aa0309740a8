// ContainerdContent: ContentSource over containerd's content service (gRPC on containerd's
// own socket, the one its CRI plugin serves too), in the CRI plugin's namespace.
//
// Per engine tick it costs one ListStatuses (a bolt read transaction and a stat per ingest
// directory in containerd), one List over the layers not yet done, and, until a pull's
// manifest is known, one List by label and one Read of a small manifest.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "pulls/content_source.h"
#include "pulls/runtime_puller.h"

namespace statlet::pulls {

struct ContainerdContentOptions {
  std::string namespace_ = "k8s.io";  // the CRI plugin's namespace
  std::chrono::milliseconds call_timeout{5000};
  size_t max_manifest_bytes = 4 << 20;
};

class ContainerdContent final : public ContentSource {
 public:
  // `channel` reaches containerd's socket and must outlive this object.
  ContainerdContent(RuntimeChannel* channel, ContainerdContentOptions options);
  ~ContainerdContent() override;

  StatusOr<std::vector<Ingest>> LayerIngests() override;
  StatusOr<std::vector<BlobInfo>> ManifestsOf(const ImageName& image) override;
  StatusOr<std::vector<BlobInfo>> ManifestsWithConfig(const std::string& config_digest) override;
  StatusOr<Manifest> ReadManifest(const std::string& digest) override;
  StatusOr<std::vector<BlobInfo>> Committed(const std::vector<std::string>& digests) override;

 private:
  StatusOr<std::vector<BlobInfo>> List(const std::vector<std::string>& filters);
  struct Stub;
  StatusOr<std::unique_ptr<Stub>> Connect();

  RuntimeChannel* channel_;
  ContainerdContentOptions options_;
};

// The containerd filter that selects manifests fetched from `image`'s repository.
std::string ManifestSourceFilter(const ImageName& image);

}  // namespace statlet::pulls
