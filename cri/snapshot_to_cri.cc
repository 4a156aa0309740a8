#include "cri/snapshot_to_cri.h"

#include <optional>

#include "collector/memory_qos.h"
#include "metrics/derived_values.h"

namespace statlet::cri {
namespace {

// Sets a UInt64Value field from an optional; absent stays unset.
template <typename Msg, typename Mutable>
void SetIf(const Opt<uint64_t>& v, Msg* msg, Mutable mutable_field) {
  if (v) (msg->*mutable_field)()->set_value(*v);
}

// Limits: "max" (kUnlimited) leaves the field unset.
template <typename Msg, typename Mutable>
void SetLimitIf(const Opt<uint64_t>& v, Msg* msg, Mutable mutable_field) {
  if (v && *v != kUnlimited) (msg->*mutable_field)()->set_value(*v);
}

void FillPsiData(const PsiLine& line, v1::PsiData* out) {
  out->set_total(line.total_us * 1000);  // the kernel counts µs; CRI wants ns
  out->set_avg10(line.avg10);
  out->set_avg60(line.avg60);
  out->set_avg300(line.avg300);
}

void FillInterface(const NetInterfaceStats& s, v1::NetworkInterfaceUsage* out) {
  out->set_name(s.name);
  out->mutable_rx_bytes()->set_value(s.rx_bytes);
  out->mutable_rx_errors()->set_value(s.rx_errors);
  out->mutable_tx_bytes()->set_value(s.tx_bytes);
  out->mutable_tx_errors()->set_value(s.tx_errors);
  out->mutable_rx_packets()->set_value(s.rx_packets);
  out->mutable_rx_dropped()->set_value(s.rx_dropped);
  out->mutable_tx_packets()->set_value(s.tx_packets);
  out->mutable_tx_dropped()->set_value(s.tx_dropped);
}

void FillMemoryEvents(const MemoryEvents& e, v1::StatletMemoryEvents* out) {
  using M = v1::StatletMemoryEvents;
  SetIf(e.low, out, &M::mutable_low);
  SetIf(e.high, out, &M::mutable_high);
  SetIf(e.max, out, &M::mutable_max);
  SetIf(e.oom, out, &M::mutable_oom);
  SetIf(e.oom_kill, out, &M::mutable_oom_kill);
  SetIf(e.oom_group_kill, out, &M::mutable_oom_group_kill);
}

// The container's Memory QoS view; nothing when the Sampler made none (no zone, no
// detector verdict, no request, no expected knobs).
void FillMemoryQos(const CgroupStats& cg, const NodeMemoryQos& node, v1::MemoryUsage* out) {
  const MemoryQosView& q = cg.memory_qos;
  if (q.zone == MemoryZone::kUnknown && !q.high_stall_evaluated && !q.expected_min_bytes && !q.request_bytes) return;
  using Q = v1::StatletMemoryQos;
  auto* m = out->mutable_memory_qos();
  m->set_zone(MemoryZoneName(q.zone));
  m->set_high_stalled(q.high_stalled);
  m->set_high_stalled_since(q.high_stalled ? q.high_stalled_since_ns : 0);
  m->set_applied(node.applied);
  SetIf(q.expected_min_bytes, m, &Q::mutable_expected_min_bytes);
  SetIf(q.expected_low_bytes, m, &Q::mutable_expected_low_bytes);
  SetLimitIf(q.expected_high_bytes, m, &Q::mutable_expected_high_bytes);
  SetIf(cg.memory.min_bytes, m, &Q::mutable_min_bytes);
  SetIf(cg.memory.low_bytes, m, &Q::mutable_low_bytes);
  SetIf(q.request_bytes, m, &Q::mutable_request_bytes);
  m->set_request_source(MemoryRequestSourceName(q.request_source));
  m->set_min_capped(q.min_capped.value_or(false));
  m->set_low_capped(q.low_capped.value_or(false));
  m->set_protection_judged(q.protection_judged);
  if (node.basis) {
    const MemoryQosBasis& b = *node.basis;
    m->set_rules(MemoryQosRulesLabel(b.rules));
    m->set_kubelet_version(b.kubelet_version);
    if (b.rules.generation != MemoryQosGeneration::kUnknown) {
      m->set_reservation_policy(MemoryReservationPolicyName(b.rules.reservation));
      m->set_throttling_factor(metrics::ThrottlingFactorLabel(b.rules.throttling_factor));
    }
  }
}

bool AnyEvent(const MemoryEvents& e) { return e.low || e.high || e.max || e.oom || e.oom_kill || e.oom_group_kill; }

// The pod's processes as containerd (1.6 to 2.x) and the kubelet's CRI stats provider count
// them: the app containers' only, the sandbox's pause process left out. The collector
// counts a cgroup's whole subtree, so the pod cgroup's own count includes the pause.
ProcessStats PodAppProcesses(const CriView& view, const PodEntry& p) {
  const ProcessStats& pod = p.cgroup->process;
  ProcessStats out;
  out.pids_max = pod.pids_max;
  if (!pod.processes) return out;
  uint64_t processes = 0, threads = 0;
  for (int ci : p.containers) {
    const ProcessStats& c = view.containers[ci].cgroup->process;
    processes += c.processes.value_or(0);
    threads += c.threads.value_or(0);
  }
  out.processes = processes;
  if (pod.threads) out.threads = threads;
  return out;
}

}  // namespace

void FillPsi(const Psi& psi, v1::PsiStats* out) {
  if (psi.full) FillPsiData(*psi.full, out->mutable_full());
  if (psi.some) FillPsiData(*psi.some, out->mutable_some());
}

void FillCpuUsage(const CpuStats& cpu, int64_t ts, v1::CpuUsage* out) {
  using M = v1::CpuUsage;
  out->set_timestamp(ts);
  SetIf(cpu.usage_ns, out, &M::mutable_usage_core_nano_seconds);
  SetIf(cpu.usage_nano_cores, out, &M::mutable_usage_nano_cores);
  if (cpu.psi.present()) FillPsi(cpu.psi, out->mutable_psi());
  SetIf(cpu.system_ns, out, &M::mutable_usage_kernel_nano_seconds);
  SetIf(cpu.user_ns, out, &M::mutable_usage_user_nano_seconds);
  out->mutable_per_cpu_usage_nano_seconds()->Assign(cpu.per_cpu_ns.begin(), cpu.per_cpu_ns.end());
  if (cpu.nr_periods || cpu.nr_throttled || cpu.throttled_ns || cpu.nr_bursts || cpu.burst_ns) {
    using T = v1::StatletCpuThrottling;
    auto* t = out->mutable_throttling();
    SetIf(cpu.nr_periods, t, &T::mutable_periods);
    SetIf(cpu.nr_throttled, t, &T::mutable_throttled_periods);
    SetIf(cpu.throttled_ns, t, &T::mutable_throttled_time_nano_seconds);
    SetIf(cpu.nr_bursts, t, &T::mutable_bursts);
    SetIf(cpu.burst_ns, t, &T::mutable_burst_time_nano_seconds);
  }
  if (cpu.quota_us || cpu.period_us || cpu.shares || cpu.weight) {
    using L = v1::StatletCpuLimits;
    auto* l = out->mutable_limits();
    SetLimitIf(cpu.quota_us, l, &L::mutable_quota_micro_seconds);
    SetIf(cpu.period_us, l, &L::mutable_period_micro_seconds);
    SetIf(cpu.shares, l, &L::mutable_shares);
    SetIf(cpu.weight, l, &L::mutable_weight);
  }
}

void FillMemoryUsage(const MemoryStats& mem, int64_t ts, v1::MemoryUsage* out) {
  using M = v1::MemoryUsage;
  out->set_timestamp(ts);
  SetIf(mem.working_set_bytes, out, &M::mutable_working_set_bytes);
  // As the kubelet defines it: limit - working set, only when there is a limit.
  if (std::optional<uint64_t> available = metrics::MemoryAvailableBytes(mem)) {
    out->mutable_available_bytes()->set_value(*available);
  }
  SetIf(mem.usage_bytes, out, &M::mutable_usage_bytes);
  SetIf(mem.rss_bytes, out, &M::mutable_rss_bytes);
  SetIf(mem.pgfault, out, &M::mutable_page_faults);
  SetIf(mem.pgmajfault, out, &M::mutable_major_page_faults);
  if (mem.psi.present()) FillPsi(mem.psi, out->mutable_psi());
  SetIf(mem.max_usage_bytes, out, &M::mutable_max_usage_bytes);
  SetIf(mem.cache_bytes, out, &M::mutable_cache_bytes);
  SetIf(mem.mapped_file_bytes, out, &M::mutable_mapped_file_bytes);
  SetIf(mem.failcnt, out, &M::mutable_failcnt);
  SetIf(mem.shmem_bytes, out, &M::mutable_shmem_bytes);
  SetIf(mem.kernel_bytes, out, &M::mutable_kernel_bytes);
  SetIf(mem.slab_bytes, out, &M::mutable_slab_bytes);
  SetLimitIf(mem.max_bytes, out, &M::mutable_limit_bytes);
  SetLimitIf(mem.high_bytes, out, &M::mutable_high_bytes);
  if (AnyEvent(mem.events)) FillMemoryEvents(mem.events, out->mutable_events());
  SetIf(mem.active_file, out, &M::mutable_active_file_bytes);
  SetIf(mem.inactive_file, out, &M::mutable_inactive_file_bytes);
  SetIf(mem.active_anon, out, &M::mutable_active_anon_bytes);
  SetIf(mem.inactive_anon, out, &M::mutable_inactive_anon_bytes);
  SetIf(mem.unevictable, out, &M::mutable_unevictable_bytes);
}

bool FillSwapUsage(const MemoryStats& mem, int64_t ts, v1::SwapUsage* out) {
  if (!mem.swap_bytes && !mem.swap_max_bytes) return false;
  out->set_timestamp(ts);
  if (mem.swap_bytes) out->mutable_swap_usage_bytes()->set_value(*mem.swap_bytes);
  if (mem.swap_bytes && mem.swap_max_bytes && *mem.swap_max_bytes != kUnlimited) {
    uint64_t used = *mem.swap_bytes, max = *mem.swap_max_bytes;
    out->mutable_swap_available_bytes()->set_value(max > used ? max - used : 0);
  }
  return true;
}

void FillIoUsage(const IoStats& io, int64_t ts, v1::IoUsage* out) {
  using D = v1::StatletIoDeviceUsage;
  out->set_timestamp(ts);
  if (io.psi.present()) FillPsi(io.psi, out->mutable_psi());
  for (const auto& d : io.devices) {
    auto* o = out->add_devices();
    o->set_major(d.major);
    o->set_minor(d.minor);
    SetIf(d.read_bytes, o, &D::mutable_read_bytes);
    SetIf(d.write_bytes, o, &D::mutable_write_bytes);
    SetIf(d.read_ios, o, &D::mutable_read_ios);
    SetIf(d.write_ios, o, &D::mutable_write_ios);
  }
}

void FillProcessUsage(const ProcessStats& p, int64_t ts, v1::ProcessUsage* out) {
  using M = v1::ProcessUsage;
  out->set_timestamp(ts);
  SetIf(p.processes, out, &M::mutable_process_count);
  SetIf(p.threads, out, &M::mutable_thread_count);
  SetLimitIf(p.pids_max, out, &M::mutable_pids_limit);
}

bool FillNetworkUsage(const NetNamespaceStats& ns, int64_t ts, v1::NetworkUsage* out) {
  // The kubelet reads default_interface of every network it is given, unchecked: a
  // namespace without eth0 names its first other interface instead, and one with only a
  // loopback gives no network at all.
  const NetInterfaceStats* main = nullptr;
  for (const auto& itf : ns.interfaces) {
    if (itf.name == "lo") continue;
    if (itf.name == "eth0") {
      main = &itf;
      break;
    }
    if (main == nullptr) main = &itf;
  }
  if (main == nullptr) return false;
  out->set_timestamp(ts);
  FillInterface(*main, out->mutable_default_interface());
  for (const auto& itf : ns.interfaces) {
    if (itf.name != "lo" && &itf != main) FillInterface(itf, out->add_interfaces());
  }
  return true;
}

namespace {

// The network of a pod or container, set only when FillNetworkUsage finds one.
template <typename Msg>
void SetNetwork(const NetNamespaceStats& ns, int64_t ts, Msg* msg) {
  v1::NetworkUsage net;
  if (FillNetworkUsage(ns, ts, &net)) msg->mutable_network()->Swap(&net);
}

}  // namespace

void FillContainerStats(const CriView& view, const ContainerEntry& c, v1::ContainerStats* out) {
  const Snapshot& snap = *view.snapshot;
  const CgroupStats& cg = *c.cgroup;
  const int64_t ts = snap.timestamp_ns;
  auto* attrs = out->mutable_attributes();
  attrs->set_id(c.id);
  if (c.meta != nullptr) {
    attrs->mutable_metadata()->set_name(c.meta->container_name);
    attrs->mutable_metadata()->set_attempt(c.meta->attempt);
    attrs->mutable_labels()->insert(c.meta->labels.begin(), c.meta->labels.end());
    attrs->mutable_annotations()->insert(c.meta->annotations.begin(), c.meta->annotations.end());
  }
  FillCpuUsage(cg.cpu, ts, out->mutable_cpu());
  FillMemoryUsage(cg.memory, ts, out->mutable_memory());
  FillMemoryQos(cg, snap.memory_qos, out->mutable_memory());
  // No swap{} at all without swap data: the kubelet turns an empty one into a 1970 time.
  v1::SwapUsage swap;
  if (FillSwapUsage(cg.memory, ts, &swap)) out->mutable_swap()->Swap(&swap);
  FillIoUsage(cg.io, ts, out->mutable_io());
  FillProcessUsage(cg.process, ts, out->mutable_process());
  if (c.meta != nullptr && c.meta->writable_layer.timestamp_ns != 0) {
    // Passed on as the runtime reported it (with its own timestamp): the kubelet's
    // ephemeral-storage accounting reads it from here.
    const auto& layer = c.meta->writable_layer;
    auto* wl = out->mutable_writable_layer();
    wl->set_timestamp(layer.timestamp_ns);
    wl->mutable_fs_id()->set_mountpoint(layer.mountpoint);
    SetIf(layer.used_bytes, wl, &v1::FilesystemUsage::mutable_used_bytes);
    SetIf(layer.inodes_used, wl, &v1::FilesystemUsage::mutable_inodes_used);
  }
  if (!cg.host_network) {
    const NetNamespaceStats* ns = snap.Netns(cg);
    if (ns == nullptr && c.pod_index >= 0) ns = view.pods[c.pod_index].netns;
    if (ns != nullptr) SetNetwork(*ns, ts, out);
  }
  out->set_cgroup_path(cg.id.cgroup_path);
  out->set_pod_sandbox_id(c.pod_sandbox_id);
}

void FillPodSandboxStats(const CriView& view, const PodEntry& p, v1::PodSandboxStats* out) {
  const CgroupStats& cg = *p.cgroup;
  const int64_t ts = view.snapshot->timestamp_ns;
  auto* attrs = out->mutable_attributes();
  attrs->set_id(p.id);
  PodInfo info = PodInfoOf(view, p);
  auto* md = attrs->mutable_metadata();
  md->set_name(info.name);
  md->set_uid(info.uid);
  md->set_namespace_(info.namespace_);
  md->set_attempt(info.attempt);
  if (info.labels != nullptr) attrs->mutable_labels()->insert(info.labels->begin(), info.labels->end());
  if (info.annotations != nullptr) {
    attrs->mutable_annotations()->insert(info.annotations->begin(), info.annotations->end());
  }
  auto* linux = out->mutable_linux();
  FillCpuUsage(cg.cpu, ts, linux->mutable_cpu());
  FillMemoryUsage(cg.memory, ts, linux->mutable_memory());
  if (p.netns != nullptr) SetNetwork(*p.netns, ts, linux);
  FillProcessUsage(PodAppProcesses(view, p), ts, linux->mutable_process());
  FillIoUsage(cg.io, ts, linux->mutable_io());
  for (int ci : p.containers) FillContainerStats(view, view.containers[ci], linux->add_containers());
  out->set_statlet_cgroup_path(cg.id.cgroup_path);
}

}  // namespace statlet::cri
