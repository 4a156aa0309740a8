// --cri.*: the CRI runtime.v1 stats server (cri::CriDaemonOptions), and its proxy mode.
#include "cmd/daemon_flags.h"

namespace statlet {

Status CheckCriFlags(const cri::CriDaemonOptions& c) {
  if (!c.proxy) return Status::Ok();
  if (c.listen.empty()) return InvalidArgument("--cri.proxy needs a CRI socket (--cri.listen)");
  if (c.runtime_endpoint.empty() || c.runtime_endpoint == "none") {
    return InvalidArgument("--cri.proxy needs the runtime's socket (--runtime.endpoint unix:///...)");
  }
  return Status::Ok();
}

void RegisterCriFlags(FlagSet& flags, DaemonOptions* o) {
  cri::CriDaemonOptions& c = o->cri;
  FlagGroup cri = flags.Group("cri");
  cri.String("listen", &c.listen, "Serve CRI runtime.v1 stats on this unix socket (mode 0660); \"\" disables.",
             UnixEndpoint({""}));
  cri.Duration("max-age", &c.max_age, {},
               "CRI calls are answered from a snapshot younger than this (concurrent calls share one collection).");
  cri.Bytes("max-message-bytes", &c.max_unary_metrics_bytes, {.min = 1},
            "A unary ListPodSandboxMetrics answer larger than this is refused with RESOURCE_EXHAUSTED (the kubelet "
            "accepts 16 MiB); StreamPodSandboxMetrics has no such limit. In proxy mode also the largest message "
            "passed either way.");
  cri.Bool("proxy", &c.proxy,
           "Proxy mode: the CRI socket is the node's container runtime endpoint for the kubelet. Stats calls and "
           "PullImage are answered by statlet; every other runtime.v1 call passes to --runtime.endpoint (which must "
           "be set) unchanged (docs/cri.md).");
  cri.Integer("proxy-max-calls", &c.proxy_max_calls, {.min = 1, .max = 65536},
              "Proxy mode: calls passed to the runtime in flight at once; more are answered RESOURCE_EXHAUSTED.");
}

}  // namespace statlet
