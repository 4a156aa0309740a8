#include "pulls/containerd_observed.h"

#include <grpcpp/grpcpp.h>

#include "proto/containerd_content.grpc.pb.h"
#include "proto/containerd_images.grpc.pb.h"
#include "proto/containerd_leases.grpc.pb.h"
#include "pulls/containerd_calls.h"

namespace statlet::pulls {
namespace content = ::containerd::services::content::v1;
namespace leases = ::containerd::services::leases::v1;
namespace images = ::containerd::services::images::v1;

namespace {

uint64_t NonNegative(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

}  // namespace

RefParts ParseIngestRef(const std::string& ref) {
  // remotes.MakeRefKey of containerd 1.6: "<kind>-<key>", the key being the digest or
  // "<ref name>@<digest>" when the descriptor carried a ref name annotation.
  static const char* const kKinds[] = {"layer", "manifest", "index", "config", "unknown"};
  for (const char* kind : kKinds) {
    const std::string prefix = std::string(kind) + "-";
    if (ref.compare(0, prefix.size(), prefix) != 0) continue;
    const size_t at = ref.rfind('@');
    std::string digest =
        at != std::string::npos && at >= prefix.size() ? ref.substr(at + 1) : ref.substr(prefix.size());
    if (digest.find(':') == std::string::npos) return {};
    return {kind, std::move(digest)};
  }
  return {};
}

ContainerdObserved::ContainerdObserved(RuntimeChannel* channel, std::string ns, std::chrono::milliseconds call_timeout)
    : ObservedSource(ns),
      channel_(channel),
      call_timeout_(call_timeout),
      content_(channel, ContainerdContentOptions{ns, call_timeout}) {}

namespace {

void Prepare(grpc::ClientContext* ctx, const std::string& ns, std::chrono::milliseconds timeout) {
  ctx->AddMetadata("containerd-namespace", ns);
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
}

}  // namespace

StatusOr<std::vector<IngestStatus>> ContainerdObserved::Ingests() {
  auto ch = channel_->Get();
  if (!ch.ok()) return ch.status();
  grpc::ClientContext ctx;
  Prepare(&ctx, namespace_name(), call_timeout_);
  content::ListStatusesRequest req;  // no filter: every ref
  content::ListStatusesResponse resp;
  grpc::Status s = content::Content::NewStub(*ch)->ListStatuses(&ctx, req, &resp);
  if (!s.ok()) return FromContainerdCall("Content/ListStatuses", s);
  std::vector<IngestStatus> out;
  out.reserve(resp.statuses_size());
  for (const auto& st : resp.statuses()) {
    IngestStatus in;
    in.ref = st.ref();
    in.offset = NonNegative(st.offset());
    in.total = NonNegative(st.total());
    in.started_unix_ns = UnixNanos(st.started_at());
    in.updated_unix_ns = UnixNanos(st.updated_at());
    out.push_back(std::move(in));
  }
  return out;
}

StatusOr<std::vector<LeaseInfo>> ContainerdObserved::Leases() {
  auto ch = channel_->Get();
  if (!ch.ok()) return ch.status();
  grpc::ClientContext ctx;
  Prepare(&ctx, namespace_name(), call_timeout_);
  leases::ListRequest req;
  leases::ListResponse resp;
  grpc::Status s = leases::Leases::NewStub(*ch)->List(&ctx, req, &resp);
  if (!s.ok()) return FromContainerdCall("Leases/List", s);
  std::vector<LeaseInfo> out;
  out.reserve(resp.leases_size());
  for (const auto& l : resp.leases()) out.push_back({l.id(), UnixNanos(l.created_at())});
  return out;
}

StatusOr<std::vector<LeaseResource>> ContainerdObserved::LeaseResources(const std::string& lease) {
  auto ch = channel_->Get();
  if (!ch.ok()) return ch.status();
  grpc::ClientContext ctx;
  Prepare(&ctx, namespace_name(), call_timeout_);
  leases::ListResourcesRequest req;
  req.set_id(lease);
  leases::ListResourcesResponse resp;
  grpc::Status s = leases::Leases::NewStub(*ch)->ListResources(&ctx, req, &resp);
  if (!s.ok()) return FromContainerdCall("Leases/ListResources", s);
  std::vector<LeaseResource> out;
  out.reserve(resp.resources_size());
  for (const auto& r : resp.resources()) out.push_back({r.id(), r.type()});
  return out;
}

StatusOr<std::vector<BlobInfo>> ContainerdObserved::Committed(const std::vector<std::string>& digests) {
  return content_.Committed(digests);
}

StatusOr<Manifest> ContainerdObserved::ReadManifest(const std::string& digest) { return content_.ReadManifest(digest); }

StatusOr<std::vector<ImageRecord>> ContainerdObserved::ImagesWithTarget(const std::vector<std::string>& digests) {
  if (digests.empty()) return std::vector<ImageRecord>();
  auto ch = channel_->Get();
  if (!ch.ok()) return ch.status();
  grpc::ClientContext ctx;
  Prepare(&ctx, namespace_name(), call_timeout_);
  images::ListImagesRequest req;
  for (const auto& d : digests) {
    if (d.find('"') != std::string::npos) return InvalidArgument("bad digest " + d);
    req.add_filters("target.digest==\"" + d + "\"");
  }
  images::ListImagesResponse resp;
  grpc::Status s = images::Images::NewStub(*ch)->List(&ctx, req, &resp);
  if (!s.ok()) return FromContainerdCall("Images/List", s);
  std::vector<ImageRecord> out;
  out.reserve(resp.images_size());
  for (const auto& i : resp.images()) out.push_back({i.name(), i.target().digest()});
  return out;
}

}  // namespace statlet::pulls
