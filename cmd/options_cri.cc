// --cri.*: the CRI runtime.v1 stats server (cri::CriDaemonOptions).
#include "cmd/daemon_flags.h"

namespace statlet {

void RegisterCriFlags(FlagSet& flags, DaemonOptions* o) {
  cri::CriDaemonOptions& c = o->cri;
  FlagGroup cri = flags.Group("cri");
  cri.String("listen", &c.listen, "Serve CRI runtime.v1 stats on this unix socket (mode 0660); \"\" disables.",
             UnixEndpoint({""}));
  cri.Duration("max-age", &c.max_age, {},
               "CRI calls are answered from a snapshot younger than this (concurrent calls share one collection).");
  cri.Bytes("max-message-bytes", &c.max_unary_metrics_bytes, {.min = 1},
            "A unary ListPodSandboxMetrics answer larger than this is refused with RESOURCE_EXHAUSTED (the kubelet "
            "accepts 16 MiB); StreamPodSandboxMetrics has no such limit.");
}

}  // namespace statlet
