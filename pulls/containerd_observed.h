// ContainerdObserved: ObservedSource over containerd's content, leases and images services
// (gRPC on containerd's socket) in one namespace. Per poll with no pull in the namespace it
// costs one ListStatuses; the other calls come only while ingests are in flight or a pull
// is followed (see pulls/observed_pulls.h).
#pragma once

#include <chrono>
#include <string>

#include "pulls/containerd_content.h"
#include "pulls/observed_source.h"

namespace statlet::pulls {

class ContainerdObserved final : public ObservedSource {
 public:
  // `channel` reaches containerd's socket and must outlive this object.
  ContainerdObserved(RuntimeChannel* channel, std::string ns, std::chrono::milliseconds call_timeout);

  StatusOr<std::vector<IngestStatus>> Ingests() override;
  StatusOr<std::vector<LeaseInfo>> Leases() override;
  StatusOr<std::vector<LeaseResource>> LeaseResources(const std::string& lease) override;
  StatusOr<std::vector<BlobInfo>> Committed(const std::vector<std::string>& digests) override;
  StatusOr<Manifest> ReadManifest(const std::string& digest) override;
  StatusOr<std::vector<ImageRecord>> ImagesWithTarget(const std::vector<std::string>& digests) override;

 private:
  RuntimeChannel* channel_;
  std::chrono::milliseconds call_timeout_;
  ContainerdContent content_;  // Committed and ReadManifest, as for the pulls statlet carries
};

}  // namespace statlet::pulls
