// What the daemon (cmd/daemon_command.cc) needs from cri/: the runtime metadata client and
// the CRI server, started from its flags (cri/cri_daemon_options.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "cri/cri_daemon_options.h"
#include "cri/cri_server.h"
#include "runtime/runtime_client.h"
#include "snapshot/snapshot_source.h"

namespace statlet::cri {

// A started RuntimeClient, or null when disabled.
std::unique_ptr<RuntimeClient> StartRuntimeClient(const CriDaemonOptions& o);
// A started CriServer over `source`, or null (and Ok) when --cri.listen is "". `rules`: the
// daemon's value rules; `calls` (may be null) is told every call; `image_service` serves
// runtime.v1.ImageService (null: UNIMPLEMENTED, or passed in proxy mode); `runtime` (may
// be null) names the stats calls' cgroups (a call finding a container cgroup it does not
// name yet waits for its next round), and learns of the changes passed in proxy mode and
// makes the stats calls wait for their metadata; `runtime_extra` (may be null) serves more RuntimeService methods
// (CriServerOptions::runtime_extra); `local_methods`: the methods `image_service` and
// `runtime_extra` answer in proxy mode (PassThroughOptions::local_methods).
StatusOr<std::unique_ptr<CriServer>> StartCriServer(SnapshotSource* source, const CriDaemonOptions& o,
                                                    const metrics::SampleRules& rules, metrics::CallObserver* calls,
                                                    grpc::Service* image_service = nullptr,
                                                    RuntimeClient* runtime = nullptr,
                                                    grpc::Service* runtime_extra = nullptr,
                                                    const std::vector<std::string>& local_methods = {});

}  // namespace statlet::cri
