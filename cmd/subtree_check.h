// `--cgroup PATH` of the one-shot and live views: a path that exists in no hierarchy is an
// error that names it, not an empty table.
#pragma once

#include <string>

#include "base/status.h"
#include "collector/collector.h"

namespace statlet {

// InvalidArgument naming the first subtree of `options` that is no cgroup directory (or
// does not start with '/'), with `command` ("statlet stats") in the hint.
Status CheckCgroupSubtrees(const CollectorOptions& options, const std::string& command);

}  // namespace statlet
