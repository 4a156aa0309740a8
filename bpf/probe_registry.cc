#include "bpf/probe_registry.h"

namespace statlet::bpf {
namespace {

using S = BpfCgroupStats;
constexpr bool kDefault = true;     // loaded when --bpf.probes is not given
constexpr bool kWhenNamed = false;  // loaded only when --bpf.probes names it

// One row per probe:  X(name, kDefault or kWhenNamed, loader, help, BpfCgroupStats members it fills...)
// The loader is the factory its loader .cc defines (declared below from this table).
#define STATLET_BPF_PROBES(X)                                                                                    \
  X(cpu, kDefault, NewCgroupCpuProbe, "per-CPU running time of each cgroup (a cgroup walk at each collection)",  \
    &S::per_cpu_ns)                                                                                              \
  X(runqlat, kWhenNamed, NewSchedSwitchProbe,                                                                    \
    "run-queue latency, a log2 microsecond histogram (runs on every context switch)", &S::runq_latency_log2_us,  \
    &S::runq_latency_sum_ns)                                                                                     \
  X(faults, kWhenNamed, NewSchedSwitchProbe, "minor and major page faults (runs on every context switch)",       \
    &S::minor_faults, &S::major_faults)                                                                          \
  X(oom, kDefault, NewOomKillProbe, "OOM kills: events (pid, comm, cgroup, constraint) and a count per cgroup",  \
    &S::oom_kills)                                                                                               \
  X(tcp, kDefault, NewTcpEventsProbe, "TCP retransmits and drops by kernel drop reason", &S::tcp_retransmits,    \
    &S::tcp_drops, &S::tcp_drop_reasons)                                                                         \
  X(net, kWhenNamed, NewCgroupSkbProbe,                                                                          \
    "bytes and packets each cgroup's sockets send and receive, in any network namespace (runs on every packet)", \
    &S::net_rx_bytes, &S::net_rx_packets, &S::net_tx_bytes, &S::net_tx_packets)                                  \
  X(cgroup_stats, kDefault, NewCgroupStatsProbe,                                                                 \
    "the collector's cgroup files, rendered from one cgroup walk at the start of each collection")

}  // namespace

#define STATLET_DECLARE_LOADER(name, on, loader, ...) std::unique_ptr<Probe> loader(const ProbeSelection& selected);
STATLET_BPF_PROBES(STATLET_DECLARE_LOADER)
#undef STATLET_DECLARE_LOADER

const std::vector<ProbeInfo>& ProbeRegistry() {
#define STATLET_PROBE_ROW(name, on, loader, help, ...) ProbeInfo{#name, on, loader, help, {__VA_ARGS__}},
  static const std::vector<ProbeInfo> rows = {STATLET_BPF_PROBES(STATLET_PROBE_ROW)};
#undef STATLET_PROBE_ROW
  return rows;
}

}  // namespace statlet::bpf
