// Kubernetes resource quantities (k8s.io/apimachinery pkg/api/resource): "128Mi", "1G",
// "1.5Gi", "129e6", "500m" … as bytes, rounded up to a whole byte as Quantity.Value() does.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace statlet::kube {

// nullopt for text that is not a quantity, a negative one, or one beyond 2^64 − 1.
std::optional<uint64_t> ParseQuantity(std::string_view text);

}  // namespace statlet::kube
