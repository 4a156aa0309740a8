#include "pulls/containerd_content.h"

#include <grpcpp/grpcpp.h>

#include "proto/containerd_content.grpc.pb.h"
#include "pulls/containerd_calls.h"

namespace statlet::pulls {
namespace content = ::containerd::services::content::v1;

struct ContainerdContent::Stub {
  std::unique_ptr<content::Content::Stub> content;
};

namespace {

BlobInfo ToBlob(const content::Info& info) {
  BlobInfo b;
  b.digest = info.digest();
  b.size = info.size() > 0 ? static_cast<uint64_t>(info.size()) : 0;
  b.created_unix_ns = UnixNanos(info.created_at());
  b.labels.insert(info.labels().begin(), info.labels().end());
  return b;
}

// A regular expression matching `text` literally: '.' is the only metacharacter a
// repository path can hold, and a class avoids the backslash the filter quoting would eat.
std::string LiteralRegex(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '.') {
      out += "[.]";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string ManifestSourceFilter(const ImageName& image) {
  return std::string("labels.\"") + kSourceLabelPrefix + image.Hostname() + "\"~=\"(^|,)" + LiteralRegex(image.path) +
         "(,|$)\",labels.\"" + kConfigLabel + "\"";
}

ContainerdContent::ContainerdContent(RuntimeChannel* channel, ContainerdContentOptions options)
    : channel_(channel), options_(std::move(options)) {}

ContainerdContent::~ContainerdContent() = default;

StatusOr<std::unique_ptr<ContainerdContent::Stub>> ContainerdContent::Connect() {
  auto ch = channel_->Get();
  if (!ch.ok()) return ch.status();
  auto stub = std::make_unique<Stub>();
  stub->content = content::Content::NewStub(*ch);
  return stub;
}

namespace {

void Prepare(grpc::ClientContext* ctx, const ContainerdContentOptions& o) {
  ctx->AddMetadata("containerd-namespace", o.namespace_);
  ctx->set_deadline(std::chrono::system_clock::now() + o.call_timeout);
}

}  // namespace

StatusOr<std::vector<Ingest>> ContainerdContent::LayerIngests() {
  grpc::ClientContext ctx;
  Prepare(&ctx, options_);
  content::ListStatusesRequest req;
  req.add_filters("ref~=\"^layer-\"");
  content::ListStatusesResponse resp;
  auto stub = Connect();
  if (!stub.ok()) return stub.status();
  grpc::Status s = (*stub)->content->ListStatuses(&ctx, req, &resp);
  if (!s.ok()) return FromContainerdCall("Content/ListStatuses", s);
  std::vector<Ingest> out;
  out.reserve(resp.statuses_size());
  for (const auto& st : resp.statuses()) {
    // The ref is the fetch key: "layer-" + digest (or "layer-<name>@<digest>" when the
    // descriptor carried a ref name annotation).
    const std::string& ref = st.ref();
    size_t at = ref.rfind('@');
    std::string digest = at != std::string::npos ? ref.substr(at + 1) : ref.substr(6);
    Ingest in;
    in.digest = std::move(digest);
    in.offset = st.offset() > 0 ? static_cast<uint64_t>(st.offset()) : 0;
    in.total = st.total() > 0 ? static_cast<uint64_t>(st.total()) : 0;
    out.push_back(std::move(in));
  }
  return out;
}

StatusOr<std::vector<BlobInfo>> ContainerdContent::List(const std::vector<std::string>& filters) {
  grpc::ClientContext ctx;
  Prepare(&ctx, options_);
  content::ListContentRequest req;
  for (const auto& f : filters) req.add_filters(f);
  auto stub = Connect();
  if (!stub.ok()) return stub.status();
  auto reader = (*stub)->content->List(&ctx, req);
  std::vector<BlobInfo> out;
  content::ListContentResponse resp;
  while (reader->Read(&resp)) {
    for (const auto& info : resp.info()) out.push_back(ToBlob(info));
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return FromContainerdCall("Content/List", s);
  return out;
}

StatusOr<std::vector<BlobInfo>> ContainerdContent::ManifestsOf(const ImageName& image) {
  return List({ManifestSourceFilter(image)});
}

StatusOr<std::vector<BlobInfo>> ContainerdContent::ManifestsWithConfig(const std::string& config_digest) {
  if (config_digest.find('"') != std::string::npos) return InvalidArgument("bad digest " + config_digest);
  return List({std::string("labels.\"") + kConfigLabel + "\"==\"" + config_digest + "\""});
}

StatusOr<std::vector<BlobInfo>> ContainerdContent::Committed(const std::vector<std::string>& digests) {
  if (digests.empty()) return std::vector<BlobInfo>();
  std::vector<std::string> filters;
  filters.reserve(digests.size());
  for (const auto& d : digests) {
    if (d.find('"') != std::string::npos) return InvalidArgument("bad digest " + d);
    filters.push_back("digest==\"" + d + "\"");
  }
  return List(filters);
}

StatusOr<Manifest> ContainerdContent::ReadManifest(const std::string& digest) {
  grpc::ClientContext ctx;
  Prepare(&ctx, options_);
  content::ReadContentRequest req;
  req.set_digest(digest);
  auto stub = Connect();
  if (!stub.ok()) return stub.status();
  auto reader = (*stub)->content->Read(&ctx, req);
  std::string body;
  content::ReadContentResponse resp;
  while (reader->Read(&resp)) {
    body += resp.data();
    if (body.size() > options_.max_manifest_bytes) {
      ctx.TryCancel();
      (void)reader->Finish();  // cancelled by us: its status says only that
      return InvalidArgument("manifest " + digest + " is larger than " + std::to_string(options_.max_manifest_bytes) +
                             " bytes");
    }
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return FromContainerdCall("Content/Read", s);
  return ParseManifest(digest, body);
}

}  // namespace statlet::pulls
