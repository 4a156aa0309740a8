// The descriptors of the CRI services statlet's proto declares (runtime.v1 RuntimeService
// and ImageService): their methods, in the order the generated services number them.
#pragma once

#include <google/protobuf/descriptor.h>

namespace statlet::proto {

const google::protobuf::ServiceDescriptor& CriRuntimeService();
const google::protobuf::ServiceDescriptor& CriImageService();

}  // namespace statlet::proto
