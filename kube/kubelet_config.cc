#include "kube/kubelet_config.h"

#include <yaml-cpp/yaml.h>

#include <exception>

namespace statlet::kube {

StatusOr<KubeletConfigFacts> ParseKubeletConfig(const std::string& text) {
  KubeletConfigFacts f;
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("not YAML: ") + e.what());
  }
  // An empty file (what a hostPath of type FileOrCreate leaves where there was none) sets
  // nothing.
  if (doc.IsNull()) return f;
  if (!doc.IsMap()) return InvalidArgument("not a KubeletConfiguration: the document is not a mapping");
  try {
    if (const YAML::Node kind = doc["kind"];
        kind && kind.IsScalar() && kind.as<std::string>() != "KubeletConfiguration") {
      f.warnings.push_back("kind is " + kind.as<std::string>() + ", not KubeletConfiguration");
    }
    if (const YAML::Node gates = doc["featureGates"]; gates && !gates.IsNull()) {
      if (!gates.IsMap()) return InvalidArgument("featureGates is not a mapping");
      if (const YAML::Node g = gates["MemoryQoS"]; g && !g.IsNull()) f.memory_qos_gate = g.as<bool>();
    }
    if (const YAML::Node factor = doc["memoryThrottlingFactor"]; factor && !factor.IsNull()) {
      const double v = factor.as<double>();
      f.throttling_factor = v;
      // KubeletConfiguration validation: the factor must be in (0, 1].
      if (!(v > 0 && v <= 1))
        f.warnings.push_back("memoryThrottlingFactor " + factor.as<std::string>() + " is outside (0, 1]");
    }
    if (const YAML::Node policy = doc["memoryReservationPolicy"]; policy && !policy.IsNull()) {
      f.reservation_policy = policy.as<std::string>();
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("a field has the wrong type: ") + e.what());
  }
  return f;
}

}  // namespace statlet::kube
