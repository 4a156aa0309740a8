// Values derived from more than one snapshot field, for the edges whose formats name them
// (CRI MemoryUsage.available_bytes, OTLP container.memory.available, container.uptime,
// limits in CPUs). One rule each, shared by every edge that reports the quantity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "snapshot/snapshot.h"

namespace statlet::metrics {

// Memory limit minus working set, floored at 0, as the kubelet defines it; none without a
// limit or a working set.
std::optional<uint64_t> MemoryAvailableBytes(const MemoryStats& mem);
// The memory limit in bytes; none when unlimited or unknown.
std::optional<uint64_t> MemoryLimitBytes(const MemoryStats& mem);
// The CFS quota in CPUs (quota / period); none when unlimited or unknown.
std::optional<double> CpuLimitCores(const CpuStats& cpu);
// CPU used over the previous collection, in CPUs; none on a cgroup's first collection.
std::optional<double> CpuUsageCores(const CpuStats& cpu);
// When the container started (the runtime's start, else its creation, else the cgroup's
// creation), ns since the epoch; none when unknown. container_start_time_seconds' value.
std::optional<int64_t> StartTimeNs(const CgroupStats& c);

// The OOM kills of one cgroup (container_oom_events_total; summed over a container's
// restarts by metrics/container_oom_kills.h): its own memory.events.local oom_kill, else
// memory.events oom_kill (v1: memory.oom_control oom_kill), else the eBPF oom probe's count.
// None when no source has it.
// Inline: the /metrics encoder calls it for every cgroup.
inline std::optional<uint64_t> OomKillsOf(const CgroupStats& c) {
  if (c.memory.events_local.oom_kill) return c.memory.events_local.oom_kill;
  if (c.memory.events.oom_kill) return c.memory.events.oom_kill;
  return c.bpf.oom_kills;
}

// Page faults split as the semantic conventions count them: the kernel's pgfault counts
// every fault, pgmajfault the major ones among them.
struct PagingFaults {
  uint64_t minor = 0, major = 0;
};
std::optional<PagingFaults> PagingFaultsOf(const MemoryStats& mem);

// The kubelet's memoryThrottlingFactor as a label or field value: "0.9"; "none" when it sets
// no memory.high.
std::string ThrottlingFactorLabel(const std::optional<double>& factor);

}  // namespace statlet::metrics
