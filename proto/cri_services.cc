#include "proto/cri_services.h"

#include <cstdlib>

#include "proto/api.pb.h"
#include "proto/image_service.pb.h"

namespace statlet::proto {

const google::protobuf::ServiceDescriptor& CriRuntimeService() {
  static const auto* service = ::runtime::v1::VersionRequest::descriptor()->file()->FindServiceByName("RuntimeService");
  return *service;
}

const google::protobuf::ServiceDescriptor& CriImageService() {
  // image_service.pb.cc defines no message, so no other reference links it in: naming its
  // descriptor table does, and with it the file (and the service) joins the generated pool.
  static const void* volatile linked = &descriptor_table_image_5fservice_2eproto;
  if (linked == nullptr) std::abort();
  static const auto* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("runtime.v1.ImageService");
  return *service;
}

}  // namespace statlet::proto
