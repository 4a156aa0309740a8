#include "pulls/pull_progress_service.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/method_handler.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/codegen/rpc_service_method.h>

#include "base/grpc_status.h"
#include "collector/enrichment.h"
#include "proto/kep5334_image_pull_progress.pb.h"
#include "pulls/progress_target.h"
#include "pulls/progress_urls.h"
#include "runtime/runtime_client.h"

namespace statlet::pulls {
namespace {

namespace v1 = ::runtime::v1;

class PullProgressService final : public grpc::Service {
 public:
  PullProgressService(ProgressUrls* urls, RuntimeClient* runtime, std::chrono::milliseconds relist_wait)
      : urls_(urls), runtime_(runtime), relist_wait_(relist_wait) {
    // What protoc's gRPC plugin writes for a unary method, with the KEP's path.
    AddMethod(new grpc::internal::RpcServiceMethod(
        kImagePullProgressMethod, grpc::internal::RpcMethod::NORMAL_RPC,
        new grpc::internal::RpcMethodHandler<PullProgressService, v1::ImagePullProgressRequest,
                                             v1::ImagePullProgressResponse, google::protobuf::MessageLite,
                                             google::protobuf::MessageLite>(
            [](PullProgressService* s, grpc::ServerContext*, const v1::ImagePullProgressRequest* req,
               v1::ImagePullProgressResponse* resp) { return s->Call(*req, resp); },
            this)));
  }

 private:
  grpc::Status Call(const v1::ImagePullProgressRequest& req, v1::ImagePullProgressResponse* resp) {
    if (req.pod_sandbox_id().empty() && req.container_id().empty()) {
      return ToGrpc(ResolveTarget(MetadataMap{}, "", "").status());
    }
    if (runtime_ == nullptr) {
      return {grpc::StatusCode::UNAVAILABLE, "ImagePullProgress: statlet has no runtime to list pods from"};
    }
    auto target = ResolveTarget(*runtime_->Current(), req.pod_sandbox_id(), req.container_id());
    if (!target.ok() && target.status().code() == StatusCode::kNotFound) {
      // Created since the last list (the kubelet asks right after RunPodSandbox): list again.
      if (runtime_->WaitCovering(runtime_->NoteChange(), relist_wait_)) {
        target = ResolveTarget(*runtime_->Current(), req.pod_sandbox_id(), req.container_id());
      }
    }
    if (!target.ok()) return ToGrpc(target.status());
    auto url = urls_->Issue(std::move(*target));
    if (!url.ok()) return ToGrpc(url.status());
    resp->set_url(*url);
    return grpc::Status::OK;
  }

  ProgressUrls* urls_;
  RuntimeClient* runtime_;
  std::chrono::milliseconds relist_wait_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewPullProgressService(ProgressUrls* urls, RuntimeClient* runtime,
                                                      std::chrono::milliseconds relist_wait) {
  return std::make_unique<PullProgressService>(urls, runtime, relist_wait);
}

}  // namespace statlet::pulls
