#include "cri/passthrough.h"

#include <algorithm>

namespace statlet::cri {
namespace {

constexpr std::string_view kRuntimeService = "/runtime.v1.RuntimeService/";
constexpr std::string_view kImageService = "/runtime.v1.ImageService/";

std::string_view MethodOf(std::string_view path) {
  for (std::string_view service : {kRuntimeService, kImageService}) {
    if (path.substr(0, service.size()) == service) return path.substr(service.size());
  }
  return {};
}

}  // namespace

bool IsPassableMethod(std::string_view path) {
  std::string_view m = MethodOf(path);
  return !m.empty() && m.find('/') == std::string_view::npos;
}

bool ChangesWorkloads(std::string_view path) {
  static constexpr std::string_view kChanging[] = {
      "RunPodSandbox", "StopPodSandbox",  "RemovePodSandbox",         "CreateContainer",           "StartContainer",
      "StopContainer", "RemoveContainer", "UpdateContainerResources", "UpdatePodSandboxResources", "RestorePod",
  };
  if (path.substr(0, kRuntimeService.size()) != kRuntimeService) return false;
  const std::string_view m = path.substr(kRuntimeService.size());
  return std::find(std::begin(kChanging), std::end(kChanging), m) != std::end(kChanging);
}

}  // namespace statlet::cri
