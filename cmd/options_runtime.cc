// --runtime.*: the node runtime's CRI client, a Sampler input for pod and container names
// (runtime/runtime_client.h; the fields live in cri::CriDaemonOptions).
#include "cmd/daemon_flags.h"

namespace statlet {

void RegisterRuntimeFlags(FlagSet& flags, DaemonOptions* o) {
  cri::CriDaemonOptions& c = o->cri;
  FlagGroup runtime = flags.Group("runtime");
  runtime
      .String("endpoint", &c.runtime_endpoint,
              "The node runtime's CRI socket (unix:///...) for pod and container names; empty: auto-detect "
              "containerd and CRI-O; \"none\" disables.",
              UnixEndpoint({"", "none"}))
      .Example("unix:///run/containerd/containerd.sock");
  runtime.Duration("refresh-period", &c.runtime_refresh_period, {.min = std::chrono::milliseconds(10)},
                   "How often the runtime's pod and container list is refreshed (never per scrape).");
  runtime.Duration("stats-period", &c.runtime_stats_period, {},
                   "How often the runtime's ListContainerStats is asked for container writable layers (0: never).");
}

}  // namespace statlet
