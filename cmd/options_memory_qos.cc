// --memory-qos.*: the expected memory.high of the kubelet's Memory QoS (KEP-2570,
// MemoryQosPolicy) and the memory.high stall detector (MemoryHighStallOptions).
#include "cmd/daemon_flags.h"

namespace statlet {

void RegisterMemoryQosFlags(FlagSet& flags, DaemonOptions* o) {
  MemoryQosPolicy& qos = o->memory_qos;
  MemoryHighStallOptions& stall = o->memory_high_stall;
  FlagGroup mq = flags.Group("memory-qos");
  mq.Enum("formula", &qos.formula, {{"v1.27", MemoryHighFormula::kV1_27}, {"v1.22", MemoryHighFormula::kV1_22}},
          "Memory QoS (KEP-2570) formula for the expected memory.high: v1.27 (floor[(request + factor x (limit or "
          "node allocatable - request)) / page] x page) or v1.22 (factor x limit, only above the request).");
  mq.Real("throttling-factor", &qos.throttling_factor, {.min = 0, .max = 1, .min_open = true},
          "The kubelet's memoryThrottlingFactor used for the expected memory.high (0 < factor <= 1).");
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
