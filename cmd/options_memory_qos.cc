// --memory-qos.*: which kubelet the Memory QoS view (KEP-2570) is judged as — its
// configuration file and version, overrides of its settings (kube::MemoryQosFlags) — this
// node's pods from the API server, and the memory.high stall detector
// (MemoryHighStallOptions).
#include "cmd/daemon_flags.h"
#include "collector/memory_qos_rules.h"

namespace statlet {
namespace {

StringRule KubeletVersion() {
  return [](const std::string& v) {
    if (v.empty() || KubeletMinorVersion(v)) return Status::Ok();
    return ExpectedValue("a kubelet version v1.N[.P]", v);
  };
}

}  // namespace

void RegisterMemoryQosFlags(FlagSet& flags, DaemonOptions* o) {
  kube::MemoryQosFlags& qos = o->memory_qos;
  DaemonOptions::MemoryQosApiServer& api = o->memory_qos_api;
  MemoryHighStallOptions& stall = o->memory_high_stall;
  FlagGroup mq = flags.Group("memory-qos");
  mq.String("kubelet-config", &qos.kubelet_config,
            "The kubelet's configuration file (KubeletConfiguration): its MemoryQoS feature gate, "
            "memoryThrottlingFactor and memoryReservationPolicy decide the expected knobs; read again when it "
            "changes. Empty: not read (the kubelet version's defaults).");
  mq.String("kubelet-version", &qos.kubelet_version,
            "The kubelet's version, whose Memory QoS rules and defaults apply, when no API server "
            "(--memory-qos.apiserver) reports the Node's. Unknown: no expected knobs.",
            KubeletVersion())
      .Example("v1.36.2");
  mq.Custom("feature-gate", "",
            "Overrides the kubelet's MemoryQoS feature gate (true or false; for a gate set on the kubelet's "
            "command line). Empty: the configuration file's, else the version's default (on from v1.37).",
            [&qos](const Flag& f, const std::string& v) {
              if (v.empty()) {
                qos.feature_gate.reset();
              } else if (v == "true" || v == "false") {
                qos.feature_gate = v == "true";
              } else {
                return f.Expected("true or false", v);
              }
              return Status::Ok();
            })
      .Example("true");
  mq.Custom("throttling-factor", "",
            "Overrides the kubelet's memoryThrottlingFactor (0 < factor <= 1, or \"none\": no memory.high). Empty: "
            "the configuration file's, else the version's default (0.8 for v1.22, 0.9 for v1.27 to v1.36, none from "
            "v1.37).",
            [&qos](const Flag& f, const std::string& v) {
              qos.throttling_factor_set = !v.empty();
              qos.throttling_factor.reset();
              if (v.empty() || v == "none") return Status::Ok();
              char* end = nullptr;
              const double x = std::strtod(v.c_str(), &end);
              if (*end != '\0' || !(x > 0 && x <= 1)) return f.Expected("a number in (0, 1] or \"none\"", v);
              qos.throttling_factor = x;
              return Status::Ok();
            })
      .Example("0.9");
  mq.Custom("reservation-policy", "",
            "Overrides the kubelet's memoryReservationPolicy (None or TieredReservation; v1.36 and later). Empty: "
            "the configuration file's, else None.",
            [&qos](const Flag& f, const std::string& v) {
              qos.reservation.reset();
              if (v.empty()) return Status::Ok();
              MemoryReservationPolicy p;
              if (!ParseMemoryReservationPolicy(v, &p)) return f.Expected("None or TieredReservation", v);
              qos.reservation = p;
              return Status::Ok();
            })
      .Example("TieredReservation");
  mq.String("apiserver", &api.url,
            "Take this node's pods (their memory requests, where the runtime does not carry them) and the "
            "kubelet's version from the Kubernetes API server: one node-scoped list and watch of pods and a read of "
            "the Node object. \"in-cluster\" (the service account's host, token and CA) or https://host:port; "
            "empty: off.",
            ApiServerUrl(/*empty_ok=*/true, /*plain_http_ok=*/true))
      .Example("in-cluster");
  mq.String("apiserver-token-file", &api.token_file,
            "Bearer token for --memory-qos.apiserver, read before each request; empty: the service account's.");
  mq.String("apiserver-ca-file", &api.ca_file,
            "CA bundle the API server's certificate is checked against; empty: the service account's.");
  mq.String("node-name", &api.node_name,
            "This node's name, for the pods' field selector and the Node object; empty: $NODE_NAME, else the host "
            "name.");
  mq.Bool("stall-detector", &stall.enabled,
          "Flag containers livelocked at memory.high (statlet_container_memory_high_stalled, a log line on entry and "
          "exit).");
  mq.Real("stall-psi-full", &stall.psi_full_avg10_percent, {.min = 0, .max = 100},
          "memory.pressure full avg10 (percent) at or above which a container at memory.high counts as stalled.");
  mq.Real("stall-usage-margin", &stall.usage_margin_ratio, {.min = 0, .max = 1},
          "Usage counts as at memory.high from memory.high x (1 - margin) up.");
  mq.Duration("stall-dwell", &stall.dwell, {},
              "How long a container must stay stalled at memory.high before it is flagged (judged at each "
              "collection).");
}

}  // namespace statlet
