// What the daemon (cmd/daemon_command.cc) needs from cri/: its flags, the runtime
// metadata client and the CRI server.
//
//   --cri.listen PATH         serve runtime.v1 stats on this unix socket
//                             (default /run/statlet/cri.sock; "" disables)
//   --runtime.endpoint URL    the node runtime's CRI socket, unix:///…
//                             (default: auto-detect containerd / CRI-O; "none" disables)
//   --runtime.stats-period D  how often the runtime's ListContainerStats is asked for
//                             writable layers (default 10s; 0 never)
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "collector/snapshot_source.h"
#include "cri/cri_server.h"
#include "cri/runtime_client.h"

namespace statlet::cri {

struct CriDaemonOptions {
  std::string listen = kDefaultCriListenPath;
  std::string runtime_endpoint;  // empty: auto-detect; "none": no runtime client
  std::chrono::milliseconds runtime_stats_period{10000};
};

// Takes the flags above out of `args` (both "--flag value" and "--flag=value"), leaving
// the rest for the daemon's own parser.
Status ExtractCriDaemonOptions(std::vector<std::string>* args, CriDaemonOptions* out);
std::string CriDaemonUsage();

// A started RuntimeClient, or null when disabled.
std::unique_ptr<RuntimeClient> StartRuntimeClient(const CriDaemonOptions& o);
// A started CriServer over `source`, or null (and Ok) when --cri.listen is "".
StatusOr<std::unique_ptr<CriServer>> StartCriServer(SnapshotSource* source, const CriDaemonOptions& o);

}  // namespace statlet::cri
