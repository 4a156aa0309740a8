// What the daemon (cmd/daemon_command.cc) needs from cri/: its flags, the runtime
// metadata client and the CRI server.
//
// The flags that set CriDaemonOptions are declared in cmd/options_cri.cc (--cri.*) and
// cmd/options_runtime.cc (--runtime.*).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "cri/cri_server.h"
#include "runtime/runtime_client.h"
#include "snapshot/snapshot_source.h"

namespace statlet::cri {

struct CriDaemonOptions {
  std::string listen = kDefaultCriListenPath;
  std::string runtime_endpoint;  // empty: auto-detect; "none": no runtime client
  std::chrono::milliseconds runtime_stats_period{10000};
  std::chrono::milliseconds runtime_refresh_period{2000};
  std::chrono::nanoseconds max_age = std::chrono::seconds(1);  // snapshot reuse for CRI calls
  size_t max_unary_metrics_bytes = size_t{16} << 20;           // see CriServiceOptions
  // Proxy mode (cri/passthrough.h): the socket passes every call statlet does not answer
  // to runtime_endpoint.
  bool proxy = false;
  int proxy_max_calls = 4096;
};

// A started RuntimeClient, or null when disabled.
std::unique_ptr<RuntimeClient> StartRuntimeClient(const CriDaemonOptions& o);
// A started CriServer over `source`, or null (and Ok) when --cri.listen is "". `rules`: the
// daemon's value rules; `calls` (may be null) is told every call; `image_service` serves
// runtime.v1.ImageService (null: UNIMPLEMENTED, or passed in proxy mode); `runtime` (may
// be null) names the stats calls' cgroups (a call finding a container cgroup it does not
// name yet waits for its next round), and learns of the changes passed in proxy mode and
// makes the stats calls wait for their metadata; `runtime_extra` (may be null) serves more RuntimeService methods
// (CriServerOptions::runtime_extra); `image_methods`: the methods `image_service`
// registers in proxy mode (CriServerOptions::image_methods).
StatusOr<std::unique_ptr<CriServer>> StartCriServer(SnapshotSource* source, const CriDaemonOptions& o,
                                                    const metrics::SampleRules& rules, metrics::CallObserver* calls,
                                                    grpc::Service* image_service = nullptr,
                                                    RuntimeClient* runtime = nullptr,
                                                    grpc::Service* runtime_extra = nullptr,
                                                    const std::vector<std::string>& image_methods = {});

}  // namespace statlet::cri
