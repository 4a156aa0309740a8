// The name of the node statlet runs on, as Kubernetes objects and authorization checks
// name it.
#pragma once

#include <string>

#include "base/status.h"

namespace statlet {

// A node name as Kubernetes accepts it (a DNS subdomain: lower case, digits, '-', '.').
Status ValidateNodeName(const std::string& name);

// `configured`, else $NODE_NAME (the DaemonSet sets it from spec.nodeName), else the host
// name in lower case. A configured or $NODE_NAME name must be a valid node name; the host
// name must be too when `strict` (the name is used against an API server).
StatusOr<std::string> ResolveNodeName(const std::string& configured, bool strict = true);

}  // namespace statlet
