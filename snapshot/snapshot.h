// The snapshot model: what statlet knows about every tracked cgroup at one instant.
//
// Plain C++ value types only (no protobuf, no fds). Collectors fill it, servers and
// exporters read it. A value that is unknown on this kernel or could not be read is
// an empty std::optional (or an empty vector), never a zero. Counters are raw, in base
// units: nanoseconds, bytes, counts. Rates that need two samples (usage_nano_cores) are
// filled by the collector, against what its last reading of each cgroup kept.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "snapshot/collect_parts.h"
#include "snapshot/machine_info.h"

namespace statlet {

template <typename T>
using Opt = std::optional<T>;

// "max" in a cgroup limit file (no limit). Kept distinct from absent (file missing).
inline constexpr uint64_t kUnlimited = UINT64_MAX;

// ---------------------------------------------------------------------------- identity
enum class CgroupKind : uint8_t {
  kRoot,       // the hierarchy root "/" (node totals, as cAdvisor's id="/")
  kKubepods,   // kubepods / kubepods.slice (node allocatable)
  kQos,        // burstable / besteffort slices
  kPod,        // pod<uid> cgroup
  kContainer,  // a container of a pod, or a bare runtime container (docker-<id>.scope)
  kOther,      // any other non-empty cgroup (bare host: services, sessions)
};
enum class QosClass : uint8_t { kUnknown, kGuaranteed, kBurstable, kBestEffort };
enum class RuntimeKind : uint8_t { kUnknown, kContainerd, kCrio, kDocker };
enum class CgroupDriver : uint8_t { kUnknown, kSystemd, kCgroupfs };

const char* CgroupKindName(CgroupKind k);
const char* QosClassName(QosClass q);
const char* RuntimeKindName(RuntimeKind r);

// Names from the node's runtime (CRI). Shared and immutable; absent on a bare host.
struct ContainerMetadata {
  std::string container_id;
  std::string container_name;  // CRI ContainerMetadata.name ("POD" never appears here)
  uint32_t attempt = 0;
  std::string pod_sandbox_id;
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  uint32_t pod_attempt = 0;
  std::string image;      // as the user wrote it (ImageSpec.image)
  std::string image_ref;  // resolved digest reference
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> pod_labels;
  std::map<std::string, std::string> pod_annotations;
  int64_t created_at_ns = 0;
  int64_t started_at_ns = 0;
  bool is_sandbox = false;  // the pause container
  // The writable layer as the runtime last reported it (CRI ContainerStats.writable_layer);
  // only the runtime knows where it lives. timestamp 0 = never reported.
  struct WritableLayer {
    int64_t timestamp_ns = 0;
    std::string mountpoint;
    std::string device;  // the filesystem's source as cAdvisor's `device` label ("/dev/sda1")
    Opt<uint64_t> used_bytes, inodes_used;
    Opt<uint64_t> capacity_bytes, inodes_total, inodes_free;  // of the filesystem holding it
  } writable_layer;
  // Memory resources the runtime reports for the container (CRI ContainerStatus
  // resources.linux): the limit, and the unified cgroup v2 knobs the kubelet passed (its
  // Memory QoS writes the request as memory.min, or as memory.low for a Burstable pod under
  // v1.36+ TieredReservation, and its throttle as memory.high).
  // reported = false: the runtime said nothing about resources.
  struct MemoryResources {
    bool reported = false;
    Opt<uint64_t> limit_bytes;         // memory_limit_in_bytes; absent when 0 (no limit)
    Opt<uint64_t> unified_min_bytes;   // unified["memory.min"]
    Opt<uint64_t> unified_low_bytes;   // unified["memory.low"]
    Opt<uint64_t> unified_high_bytes;  // unified["memory.high"]; kUnlimited for "max"
  } memory_resources;
};

struct Identity {
  std::string cgroup_path;  // relative to the hierarchy root, "/" for the root
  uint64_t cgroup_id = 0;   // inode of the cgroup v2 directory; 0 when there is none
  CgroupKind kind = CgroupKind::kOther;
  QosClass qos = QosClass::kUnknown;
  RuntimeKind runtime = RuntimeKind::kUnknown;
  CgroupDriver driver = CgroupDriver::kUnknown;
  std::string container_id;                       // 64-hex id parsed from the path; empty for non-containers
  std::string pod_uid;                            // with dashes, as Kubernetes writes it; empty if unknown
  std::string parent_path;                        // the pod's cgroup path for a container; "" otherwise
  Opt<int64_t> created_ns;                        // cgroup directory change time at discovery (wall clock)
  std::shared_ptr<const ContainerMetadata> meta;  // joined from the runtime, may be null
};

// ---------------------------------------------------------------------------- resources
struct PsiLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;
  uint64_t total_us = 0;  // cumulative stall time, microseconds (the kernel's unit)
};
struct Psi {
  Opt<PsiLine> some;
  Opt<PsiLine> full;
  bool present() const { return some.has_value() || full.has_value(); }
};

struct CpuStats {
  // One field per cpu.stat key (snapshot/cpu_stat.def): CPU time (v1: cpuacct) and the CFS
  // bandwidth counters, in nanoseconds or counts.
#define STATLET_CPU_STAT(field, v2_key, v2_scale, v1_key) Opt<uint64_t> field;
#include "snapshot/cpu_stat.def"
  std::vector<uint64_t> per_cpu_ns;  // index = CPU number; empty when unknown
  bool per_cpu_from_bpf = false;     // filled by the cpu probe (v2 hosts)
  Opt<uint64_t> usage_nano_cores;    // rate over the previous sample (Sampler)
  // limits
  Opt<uint64_t> quota_us;  // kUnlimited for "max" / -1
  Opt<uint64_t> period_us;
  Opt<uint64_t> shares;  // v1 cpu.shares, or v2 weight converted to shares
  Opt<uint64_t> weight;  // v2 cpu.weight, or v1 shares converted to weight
  Psi psi;
};

// memory.events or memory.events.local, one field per key (snapshot/memory_events.def).
struct MemoryEvents {
#define STATLET_MEMORY_EVENT(field, key, kernel_item) Opt<uint64_t> field;
#include "snapshot/memory_events.def"
};

struct MemoryStats {
  Opt<uint64_t> usage_bytes;        // v2 memory.current, v1 memory.usage_in_bytes
  Opt<uint64_t> max_usage_bytes;    // v2 memory.peak, v1 memory.max_usage_in_bytes
  Opt<uint64_t> working_set_bytes;  // usage - inactive_file, floored at 0 (as the kubelet)
  // One field per memory.stat key (snapshot/memory_stat.def: its v2 and v1 keys), in bytes
  // or counts as the file prints them. kernel_bytes: v1 memory.kmem.usage_in_bytes;
  // swap_bytes: v2 memory.swap.current.
#define STATLET_MEMSTAT_KEY(field, v2_key, v1_key) Opt<uint64_t> field;
#include "snapshot/memory_stat.def"
  Opt<uint64_t> failcnt;  // v1 memory.failcnt, v2 memory.events max
  // limits (kUnlimited for "max")
  Opt<uint64_t> min_bytes, low_bytes, high_bytes, max_bytes;
  Opt<uint64_t> swap_max_bytes;
  Opt<uint64_t> soft_limit_bytes;  // v1 memory.soft_limit_in_bytes
  struct Hugetlb {
    std::string page_size;  // as the kernel names it: "2MB", "1GB"
    Opt<uint64_t> usage_bytes, max_usage_bytes, limit_bytes, failcnt;
  };
  std::vector<Hugetlb> hugetlb;  // v2 hugetlb.<size>.*, v1 hugetlb.<size>.*_in_bytes
  MemoryEvents events;           // hierarchical (memory.events)
  MemoryEvents events_local;     // this cgroup only (memory.events.local)
  Psi psi;
};

struct ProcessStats {
  Opt<uint64_t> processes;  // lines of cgroup.procs
  Opt<uint64_t> threads;    // lines of cgroup.threads (v1: tasks)
  Opt<uint64_t> pids_current;
  Opt<uint64_t> pids_max;         // kUnlimited for "max"
  Opt<uint64_t> pids_events_max;  // forks refused at pids.max
  // Per-process scans (/proc/<pid>/fd of every process; optional, costly on big cgroups)
  Opt<uint64_t> file_descriptors;     // open fds over all processes
  Opt<uint64_t> sockets;              // of which sockets
  Opt<uint64_t> max_open_files_soft;  // RLIMIT_NOFILE soft limit of the first process
};

struct IoDeviceStats {
  uint32_t major = 0, minor = 0;
  Opt<uint64_t> read_bytes, write_bytes, read_ios, write_ios, discard_bytes, discard_ios;
  // The iocost controller's account (v2 io.stat cost.*, when io.cost is enabled), in us.
  Opt<uint64_t> cost_usage_us, cost_wait_us, cost_indebt_us, cost_indelay_us;
};
struct IoStats {
  std::vector<IoDeviceStats> devices;  // sorted by (major, minor)
  Psi psi;
};

struct NetInterfaceStats {
  std::string name;
  uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0, rx_dropped = 0;
  uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0, tx_dropped = 0;
};
// One network namespace; shared by all containers of a pod.
struct NetNamespaceStats {
  uint64_t netns_inode = 0;
  std::vector<NetInterfaceStats> interfaces;  // in /proc/net/dev order, "lo" included
};

// Filled by the optional eBPF probes; keyed by cgroup id in the kernel.
struct BpfCgroupStats {
  // The probes' counts, one field each (snapshot/bpf_counters.def).
#define STATLET_BPF_COUNTER(field) Opt<uint64_t> field;
#include "snapshot/bpf_counters.def"
  std::vector<uint64_t> per_cpu_ns;                  // running time per CPU (the cpu probe: rstat)
  std::map<std::string, uint64_t> tcp_drop_reasons;  // tcp_drops by the kernel's drop reason
  // run-queue latency: bucket i counts waits in [2^i, 2^(i+1)) microseconds; the last
  // bucket also holds every longer wait
  std::vector<uint64_t> runq_latency_log2_us;
};

struct OomEvent {
  int64_t timestamp_ns = 0;  // wall clock
  uint32_t pid = 0;
  std::string comm;
  uint64_t cgroup_id = 0;         // the victim's memcg (cgroup v2 id)
  std::string cgroup_path;        // resolved at collection when still known
  bool constraint_memcg = false;  // true: the cgroup's limit; false: global OOM
  // The victim's cgroup as the collection that resolved cgroup_path knew it (kind,
  // container id, runtime names): labels the event after the cgroup is gone. Null when
  // unresolved.
  std::shared_ptr<const Identity> cgroup;
};

// Memory QoS (KEP-2570) as statlet sees it for one cgroup; filled by the Sampler
// (collector/memory_qos.h, collector/memory_protection.h, collector/memory_high_stall.h).
enum class MemoryZone : uint8_t {
  kUnknown,       // no usage or nothing to compare it with
  kBelowRequest,  // usage < the protection that holds for the request: protected from reclaim
  kAboveRequest,  // above it, below memory.high
  kThrottling,    // usage >= memory.high: reclaimed and throttled on every charge
  kAtLimit,       // usage >= memory.max - a margin: the OOM killer is next
};
// Where the request statlet judged a container or pod by came from.
enum class MemoryRequestSource : uint8_t {
  kUnknown,
  kRuntime,    // the unified memory.min / memory.low the kubelet passed to the runtime
  kApiServer,  // the pod from the API server (status.containerStatuses[].resources, else the spec)
  kQosClass,   // implied by the QoS class: Guaranteed request = limit, BestEffort none
};
struct MemoryQosView {
  // The memory request and limit judged by (containers and pods; 0: none set), and where the
  // request came from. Absent when unknown.
  Opt<uint64_t> request_bytes, limit_bytes;
  MemoryRequestSource request_source = MemoryRequestSource::kUnknown;
  // What the kubelet of the judged rules leaves in this cgroup's memory.min, memory.low and
  // memory.high (containers; pods, QoS and kubepods cgroups have min and low only): 0 for a
  // knob it does not set (the kernel's default), kUnlimited for memory.high left at "max".
  // Absent when the node does not apply Memory QoS, the rules or the request are unknown.
  Opt<uint64_t> expected_min_bytes, expected_low_bytes, expected_high_bytes;
  // The cgroup v2 protection rule (cgroup-v2.rst: a cgroup's effective memory.min / memory.low
  // is limited by those of its ancestors): whether the configured value exceeds the smallest
  // value configured on an ancestor below the root. Absent when the cgroup configures none
  // or an ancestor's value is unknown.
  Opt<bool> min_capped, low_capped;
  // Whether every ancestor's memory.min and memory.low were read (a collection that reads
  // container cgroups alone does not): then the zone accounts for what they pass down.
  bool protection_judged = false;
  MemoryZone zone = MemoryZone::kUnknown;  // containers only
  // The memory.high livelock detector: usage pinned at memory.high, memory PSI full high
  // and memory.events high rising, for the dwell time. since: wall clock of entry.
  bool high_stalled = false;
  int64_t high_stalled_since_ns = 0;
  bool high_stall_evaluated = false;  // the detector looked at this cgroup (a container with memory.high)
};

// The kubelet generations whose Memory QoS rules statlet knows (collector/memory_qos_rules.h).
enum class MemoryQosGeneration : uint8_t {
  kUnknown,  // the kubelet's version is not known: nothing is judged
  kNone,     // a kubelet before v1.22: no Memory QoS
  kV1_22,    // v1.22 to v1.26 (alpha)
  kV1_27,    // v1.27 to v1.35 (alpha v2)
  kV1_36,    // v1.36 (alpha v3: memoryReservationPolicy)
  kV1_37,    // v1.37 (beta, on by default) and later
};
enum class MemoryReservationPolicy : uint8_t {
  kMinForEveryRequest,  // before v1.36: memory.min = request wherever there is one
  kNone,                // v1.36+ "None" (the default): no memory.min, no memory.low
  kTieredReservation,   // v1.36+ "TieredReservation": Guaranteed memory.min, Burstable memory.low
};
// Where one of the kubelet's settings came from.
enum class KubeletSettingSource : uint8_t { kUnknown, kDefault, kConfigFile, kFlag, kApiServer };

// The kubelet's Memory QoS settings a snapshot was judged by, and where each came from.
struct MemoryQosRules {
  MemoryQosGeneration generation = MemoryQosGeneration::kUnknown;
  bool enabled = false;           // the MemoryQoS feature gate
  Opt<double> throttling_factor;  // memoryThrottlingFactor; absent: no memory.high (v1.37's nil)
  MemoryReservationPolicy reservation = MemoryReservationPolicy::kMinForEveryRequest;
  uint64_t page_size = 4096;  // the kubelet rounds memory.high down to the host's base page
  // Whether the kubelet of these rules writes Memory QoS knobs at all.
  bool Applies() const {
    return enabled && generation != MemoryQosGeneration::kUnknown && generation != MemoryQosGeneration::kNone;
  }
};
struct MemoryQosBasis {
  MemoryQosRules rules;
  std::string kubelet_version;  // as reported ("v1.36.2"); empty when unknown
  KubeletSettingSource version_source = KubeletSettingSource::kUnknown;
  KubeletSettingSource gate_source = KubeletSettingSource::kUnknown;
  KubeletSettingSource factor_source = KubeletSettingSource::kUnknown;
  KubeletSettingSource reservation_source = KubeletSettingSource::kUnknown;
  bool beyond_known = false;  // a kubelet newer than the newest generation with upstream facts
  std::string config_file;    // the kubelet configuration file read ("" when none is)
  std::string config_state;   // "read", "absent", "error: …", "off"
  std::string note;           // why nothing is judged, or what the kubelet would refuse; "" if nothing
};

// Node-wide Memory QoS facts of one snapshot.
struct NodeMemoryQos {
  // The rules judged by; null when the snapshot was not judged (no Memory QoS inputs).
  std::shared_ptr<const MemoryQosBasis> basis;
  std::string kubepods_path;        // the kubepods cgroup the node facts are of ("" when none)
  Opt<uint64_t> allocatable_bytes;  // the kubepods cgroup's memory.max (limit)
  // Whether the node applies Memory QoS: cgroup v2 memory knobs present and the judged
  // kubelet writes them (known version, feature gate on).
  bool applied = false;
  // The kubelet's own totals (kubelet_memory_qos_node_memory_min_bytes / _low_bytes): the
  // pods' expected memory.min and memory.low, summed. Absent when a pod's is unknown.
  Opt<uint64_t> min_total_bytes, low_total_bytes;
  // The kernel, for the memory.high livelock risk (fixed in 5.9, commit b3ff929).
  std::string kernel_release;
  bool kernel_before_5_9 = false;
  bool memory_high_in_use = false;  // some cgroup under kubepods has memory.high below max
};

// Why a container's cgroup emptied (collector/exit_watcher.h decides).
enum class ExitReason : uint8_t {
  kCompleted,  // its processes exited and the kernel's OOM killer chose none of them
  kOomKilled,  // memory.events oom_kill (v1: memory.oom_control oom_kill) rose above 0
  kKilled,     // ended by a signal from outside (the runtime reported it)
};
inline constexpr size_t kExitReasonCount = 3;
const char* ExitReasonName(ExitReason r);

// A container whose cgroup emptied: the values of its CgroupStats are the final ones,
// read when the kernel reported `populated 0`, before the runtime removed the cgroup.
struct ExitInfo {
  int64_t exit_ns = 0;       // wall clock of the populated-0 notification
  Opt<int64_t> lifetime_ns;  // exit_ns minus the cgroup's creation; absent when unknown
  ExitReason reason = ExitReason::kCompleted;
};

// Everything about one cgroup at snapshot time.
struct CgroupStats {
  Identity id;
  CpuStats cpu;
  MemoryStats memory;
  ProcessStats process;
  IoStats io;
  // Network: the pod's namespace, or none. host_network: in the host's namespace.
  Opt<uint64_t> netns_inode;
  bool host_network = false;
  BpfCgroupStats bpf;
  MemoryQosView memory_qos;  // containers, pods, QoS and kubepods cgroups (capped: any cgroup)
  bool populated = false;    // some process in this cgroup or below
  // Set for a container that exited within the retention (its values final when the
  // collection no longer found the cgroup).
  Opt<ExitInfo> exit;
};

// Self-observation of one collection, for statlet_* self metrics.
struct CollectionStats {
  int64_t duration_ns = 0;
  uint64_t cgroups_tracked = 0;
  uint64_t cgroups_reported = 0;
  uint64_t cgroups_vanished = 0;   // disappeared during this collection (normal)
  uint64_t cgroups_dropped = 0;    // over the cardinality cap (CollectorOptions::max_cgroups)
  uint64_t cgroups_merged = 0;     // further paths of a container or pod, read into its entry
  uint64_t discovery_rescans = 0;  // directories re-read by discovery
  uint64_t fds_kept = 0;           // files kept open across collections
  uint64_t files_read = 0;         // cgroup files read (or rendered by the eBPF iterator)
  uint64_t files_cached = 0;       // limits served from memory, unwritten since read (limit_watch.h)
};

// The state of an optional source, for statlet_bpf_probe_up / statlet_runtime_up.
struct SourceState {
  std::string name;  // probe name ("cpu", "oom"...), or the runtime endpoint
  bool up = false;
  std::string detail;        // why it is down; the runtime's name and version when up
  uint64_t lost_events = 0;  // eBPF: updates the kernel side could not record
};

// A labelled error counter (field/file, reason) kept across collections.
struct ReadErrorCount {
  std::string file;    // e.g. "memory.stat"
  std::string reason;  // "parse", "io", "permission"
  uint64_t count = 0;
};

struct Snapshot {
  int64_t timestamp_ns = 0;                     // wall clock (CLOCK_REALTIME) at collection start
  int64_t monotonic_ns = 0;                     // CLOCK_MONOTONIC, for rates
  uint64_t sequence = 0;                        // increases by one per collection
  std::vector<CgroupStats> cgroups;             // sorted by id.cgroup_path
  std::map<uint64_t, NetNamespaceStats> netns;  // by netns inode
  std::vector<OomEvent> recent_ooms;            // newest last, bounded
  // Cgroups the collector knew that are gone since the collection before: what an event
  // drained now (an OOM kill) knows of a cgroup removed in between. Not reported.
  std::vector<Identity> vanished;
  std::vector<ReadErrorCount> read_errors;  // cumulative since start
  std::vector<SourceState> bpf_probes;      // one per probe when eBPF is configured
  Opt<SourceState> runtime;                 // the node runtime's CRI, when configured
  CollectionStats collection;
  NodeMemoryQos memory_qos;
  uint32_t num_cpus = 0;
  // The machine as last read (read at start and on a slow refresh, not per collection:
  // collector/machine_source.h); null when not read (machine families all left out).
  std::shared_ptr<const MachineInfo> machine;
  // The optional parts this snapshot answers: read, or turned off by the collector's
  // options (then no collection would read them). A part not read leaves its fields absent.
  CollectParts parts = CollectParts::All();

  const CgroupStats* FindByPath(const std::string& path) const;
  const CgroupStats* FindByContainerId(const std::string& id) const;
  const NetNamespaceStats* Netns(const CgroupStats& c) const;
  // For each entry of `cgroups`, the index of its nearest ancestor that is also in the
  // snapshot, or -1. One pass over the sorted paths, no allocation per cgroup.
  std::vector<int32_t> NearestAncestors() const;
};

using SnapshotPtr = std::shared_ptr<const Snapshot>;

}  // namespace statlet
