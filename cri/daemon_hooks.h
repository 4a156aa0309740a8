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
};

// A started RuntimeClient, or null when disabled.
std::unique_ptr<RuntimeClient> StartRuntimeClient(const CriDaemonOptions& o);
// A started CriServer over `source`, or null (and Ok) when --cri.listen is "". `rules`: the
// daemon's value rules; `self` (may be null) records the calls; `image_service` serves
// runtime.v1.ImageService (null: UNIMPLEMENTED).
StatusOr<std::unique_ptr<CriServer>> StartCriServer(SnapshotSource* source, const CriDaemonOptions& o,
                                                    const metrics::SampleRules& rules, SelfMetrics* self,
                                                    grpc::Service* image_service = nullptr);

}  // namespace statlet::cri
