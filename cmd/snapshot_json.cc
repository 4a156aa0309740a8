#include "cmd/snapshot_json.h"

#include <nlohmann/json.hpp>

#include "collector/memory_qos.h"
#include "metrics/derived_values.h"

namespace statlet {
namespace {

using Json = nlohmann::ordered_json;

// An absent value is left out (unknown); a limit the kernel reports as "max" (kUnlimited) is
// null, not 18446744073709551615, which neither jq nor JavaScript holds exactly.
void Put(Json& j, const char* key, const Opt<uint64_t>& v) {
  if (!v) return;
  if (*v == kUnlimited) {
    j[key] = nullptr;
  } else {
    j[key] = *v;
  }
}

Json PsiJson(const Psi& p) {
  Json j = Json::object();
  auto line = [](const PsiLine& l) {
    return Json{{"avg10", l.avg10}, {"avg60", l.avg60}, {"avg300", l.avg300}, {"total_us", l.total_us}};
  };
  if (p.some) j["some"] = line(*p.some);
  if (p.full) j["full"] = line(*p.full);
  return j;
}

Json EventsJson(const MemoryEvents& e) {
  Json j = Json::object();
#define STATLET_MEMORY_EVENT(field, key, kernel_item) Put(j, #field, e.field);
#include "snapshot/memory_events.def"
  return j;
}

Json SourceJson(const SourceState& s) {
  Json j{{"name", s.name}, {"up", s.up}, {"detail", s.detail}};
  if (s.lost_events != 0) j["lost_events"] = s.lost_events;
  return j;
}

Json MetaJson(const ContainerMetadata& m) {
  Json j;
  j["container_id"] = m.container_id;
  j["container_name"] = m.container_name;
  j["attempt"] = m.attempt;
  j["pod_sandbox_id"] = m.pod_sandbox_id;
  j["pod_name"] = m.pod_name;
  j["pod_namespace"] = m.pod_namespace;
  j["pod_uid"] = m.pod_uid;
  j["pod_attempt"] = m.pod_attempt;
  j["image"] = m.image;
  j["image_ref"] = m.image_ref;
  j["labels"] = m.labels;
  j["annotations"] = m.annotations;
  j["pod_labels"] = m.pod_labels;
  j["pod_annotations"] = m.pod_annotations;
  j["created_at_ns"] = m.created_at_ns;
  j["started_at_ns"] = m.started_at_ns;
  j["is_sandbox"] = m.is_sandbox;
  if (const auto& w = m.writable_layer; w.timestamp_ns != 0) {
    Json jw{{"timestamp_ns", w.timestamp_ns}, {"mountpoint", w.mountpoint}, {"device", w.device}};
    Put(jw, "used_bytes", w.used_bytes);
    Put(jw, "inodes_used", w.inodes_used);
    Put(jw, "capacity_bytes", w.capacity_bytes);
    Put(jw, "inodes_total", w.inodes_total);
    Put(jw, "inodes_free", w.inodes_free);
    j["writable_layer"] = jw;
  }
  if (m.memory_resources.reported) {
    Json r = Json::object();
    Put(r, "limit_bytes", m.memory_resources.limit_bytes);
    Put(r, "unified_min_bytes", m.memory_resources.unified_min_bytes);
    Put(r, "unified_low_bytes", m.memory_resources.unified_low_bytes);
    Put(r, "unified_high_bytes", m.memory_resources.unified_high_bytes);
    j["memory_resources"] = r;
  }
  return j;
}

Json CgroupJson(const CgroupStats& c) {
  Json j;
  Json id;
  id["cgroup_path"] = c.id.cgroup_path;
  id["cgroup_id"] = c.id.cgroup_id;
  id["kind"] = CgroupKindName(c.id.kind);
  if (c.id.qos != QosClass::kUnknown) id["qos"] = QosClassName(c.id.qos);
  if (c.id.runtime != RuntimeKind::kUnknown) id["runtime"] = RuntimeKindName(c.id.runtime);
  if (c.id.driver != CgroupDriver::kUnknown)
    id["driver"] = c.id.driver == CgroupDriver::kSystemd ? "systemd" : "cgroupfs";
  if (!c.id.container_id.empty()) id["container_id"] = c.id.container_id;
  if (!c.id.pod_uid.empty()) id["pod_uid"] = c.id.pod_uid;
  if (!c.id.parent_path.empty()) id["pod_cgroup_path"] = c.id.parent_path;
  if (c.id.created_ns) id["created_ns"] = *c.id.created_ns;
  if (c.id.meta) id["metadata"] = MetaJson(*c.id.meta);
  j["identity"] = id;
  j["populated"] = c.populated;
  if (c.exit) {
    Json e;
    e["exit_ns"] = c.exit->exit_ns;
    if (c.exit->lifetime_ns) e["lifetime_ns"] = *c.exit->lifetime_ns;
    e["reason"] = ExitReasonName(c.exit->reason);
    j["exit"] = e;
  }

  const CpuStats& cpu = c.cpu;
  Json jc = Json::object();
#define STATLET_CPU_STAT(field, v2_key, v2_scale, v1_key) Put(jc, #field, cpu.field);
#include "snapshot/cpu_stat.def"
  if (!cpu.per_cpu_ns.empty()) {
    jc["per_cpu_ns"] = cpu.per_cpu_ns;
    jc["per_cpu_source"] = cpu.per_cpu_from_bpf ? "bpf" : "cgroupfs";
  }
  Put(jc, "usage_nano_cores", cpu.usage_nano_cores);
  Put(jc, "quota_us", cpu.quota_us);
  Put(jc, "period_us", cpu.period_us);
  Put(jc, "shares", cpu.shares);
  Put(jc, "weight", cpu.weight);
  if (cpu.psi.present()) jc["psi"] = PsiJson(cpu.psi);
  j["cpu"] = jc;

  const MemoryStats& m = c.memory;
  Json jm = Json::object();
  Put(jm, "usage_bytes", m.usage_bytes);
  Put(jm, "max_usage_bytes", m.max_usage_bytes);
  Put(jm, "working_set_bytes", m.working_set_bytes);
#define STATLET_MEMSTAT_KEY(field, v2_key, v1_key) Put(jm, #field, m.field);
#include "snapshot/memory_stat.def"
  Put(jm, "failcnt", m.failcnt);
  Put(jm, "min_bytes", m.min_bytes);
  Put(jm, "low_bytes", m.low_bytes);
  Put(jm, "high_bytes", m.high_bytes);
  Put(jm, "max_bytes", m.max_bytes);
  Put(jm, "swap_max_bytes", m.swap_max_bytes);
  Put(jm, "soft_limit_bytes", m.soft_limit_bytes);
  if (!m.hugetlb.empty()) {
    Json jh = Json::array();
    for (const MemoryStats::Hugetlb& h : m.hugetlb) {
      Json e{{"page_size", h.page_size}};
      Put(e, "usage_bytes", h.usage_bytes);
      Put(e, "max_usage_bytes", h.max_usage_bytes);
      Put(e, "limit_bytes", h.limit_bytes);
      Put(e, "failcnt", h.failcnt);
      jh.push_back(std::move(e));
    }
    jm["hugetlb"] = std::move(jh);
  }
  Json ev = EventsJson(m.events);
  if (!ev.empty()) jm["events"] = ev;
  Json evl = EventsJson(m.events_local);
  if (!evl.empty()) jm["events_local"] = evl;
  if (m.psi.present()) jm["psi"] = PsiJson(m.psi);
  j["memory"] = jm;
  const MemoryQosView& q = c.memory_qos;
  if (q.zone != MemoryZone::kUnknown || q.high_stall_evaluated || q.expected_min_bytes || q.expected_low_bytes ||
      q.request_bytes || q.min_capped || q.low_capped) {
    Json jq = Json::object();
    jq["zone"] = MemoryZoneName(q.zone);
    if (q.request_bytes) {
      jq["request_bytes"] = *q.request_bytes;
      jq["request_source"] = MemoryRequestSourceName(q.request_source);
    }
    Put(jq, "limit_bytes", q.limit_bytes);
    Put(jq, "expected_min_bytes", q.expected_min_bytes);
    Put(jq, "expected_low_bytes", q.expected_low_bytes);
    Put(jq, "expected_high_bytes", q.expected_high_bytes);
    if (q.min_capped) jq["min_capped"] = *q.min_capped;
    if (q.low_capped) jq["low_capped"] = *q.low_capped;
    if (c.id.kind == CgroupKind::kContainer) jq["protection_judged"] = q.protection_judged;
    if (q.high_stall_evaluated) jq["high_stalled"] = q.high_stalled;
    if (q.high_stalled) jq["high_stalled_since_ns"] = q.high_stalled_since_ns;
    j["memory_qos"] = jq;
  }

  Json jp = Json::object();
  Put(jp, "processes", c.process.processes);
  Put(jp, "threads", c.process.threads);
  Put(jp, "pids_current", c.process.pids_current);
  Put(jp, "pids_max", c.process.pids_max);
  Put(jp, "pids_events_max", c.process.pids_events_max);
  Put(jp, "file_descriptors", c.process.file_descriptors);
  Put(jp, "sockets", c.process.sockets);
  Put(jp, "max_open_files_soft", c.process.max_open_files_soft);
  j["process"] = jp;

  Json ji = Json::object();
  Json devs = Json::array();
  for (const auto& d : c.io.devices) {
    Json jd;
    jd["device"] = std::to_string(d.major) + ":" + std::to_string(d.minor);
    Put(jd, "read_bytes", d.read_bytes);
    Put(jd, "write_bytes", d.write_bytes);
    Put(jd, "read_ios", d.read_ios);
    Put(jd, "write_ios", d.write_ios);
    Put(jd, "discard_bytes", d.discard_bytes);
    Put(jd, "discard_ios", d.discard_ios);
    Put(jd, "cost_usage_us", d.cost_usage_us);
    Put(jd, "cost_wait_us", d.cost_wait_us);
    Put(jd, "cost_indebt_us", d.cost_indebt_us);
    Put(jd, "cost_indelay_us", d.cost_indelay_us);
    devs.push_back(jd);
  }
  ji["devices"] = devs;
  if (c.io.psi.present()) ji["psi"] = PsiJson(c.io.psi);
  j["io"] = ji;

  Json jn = Json::object();
  jn["host_network"] = c.host_network;
  if (c.netns_inode) jn["netns_inode"] = *c.netns_inode;
  j["network"] = jn;

  const BpfCgroupStats& b = c.bpf;
  Json jb = Json::object();
#define STATLET_BPF_COUNTER(field) Put(jb, #field, b.field);
#include "snapshot/bpf_counters.def"
  if (!b.per_cpu_ns.empty()) jb["per_cpu_ns"] = b.per_cpu_ns;
  if (!b.tcp_drop_reasons.empty()) jb["tcp_drop_reasons"] = b.tcp_drop_reasons;
  if (!b.runq_latency_log2_us.empty()) jb["runq_latency_log2_us"] = b.runq_latency_log2_us;
  if (!jb.empty()) j["bpf"] = jb;
  return j;
}

}  // namespace

std::string SnapshotToJson(const Snapshot& snap, int indent) {
  Json j;
  j["timestamp_ns"] = snap.timestamp_ns;
  j["monotonic_ns"] = snap.monotonic_ns;
  j["sequence"] = snap.sequence;
  j["num_cpus"] = snap.num_cpus;
  j["parts"] = Json{{"process_fds", snap.parts.Has(CollectParts::kProcessFds)},
                    {"cgroup_detail", snap.parts.Has(CollectParts::kCgroupDetail)},
                    {"non_container_files", snap.parts.Has(CollectParts::kNonContainerFiles)}};
  {
    const NodeMemoryQos& n = snap.memory_qos;
    Json q = Json::object();
    q["applied"] = n.applied;
    if (n.basis) {
      // Which rules everything below was judged by, and where each setting came from.
      const MemoryQosBasis& b = *n.basis;
      Json jb = Json::object();
      jb["rules"] = MemoryQosRulesLabel(b.rules);
      jb["generation"] = MemoryQosGenerationName(b.rules.generation);
      jb["kubelet_version"] = b.kubelet_version;
      jb["kubelet_version_source"] = KubeletSettingSourceName(b.version_source);
      if (b.rules.generation != MemoryQosGeneration::kUnknown) {
        jb["feature_gate"] = b.rules.enabled;
        jb["feature_gate_source"] = KubeletSettingSourceName(b.gate_source);
        jb["throttling_factor"] = metrics::ThrottlingFactorLabel(b.rules.throttling_factor);
        jb["throttling_factor_source"] = KubeletSettingSourceName(b.factor_source);
        jb["reservation_policy"] = MemoryReservationPolicyName(b.rules.reservation);
        jb["reservation_policy_source"] = KubeletSettingSourceName(b.reservation_source);
        jb["page_size"] = b.rules.page_size;
      }
      jb["beyond_known"] = b.beyond_known;
      jb["kubelet_config"] = b.config_file.empty() ? b.config_state : b.config_file;
      if (!b.note.empty()) jb["note"] = b.note;
      q["judged_by"] = jb;
    }
    if (!n.kubepods_path.empty()) q["kubepods"] = n.kubepods_path;
    Put(q, "allocatable_bytes", n.allocatable_bytes);
    Put(q, "min_total_bytes", n.min_total_bytes);
    Put(q, "low_total_bytes", n.low_total_bytes);
    if (!n.kernel_release.empty()) {
      q["kernel_release"] = n.kernel_release;
      q["livelock_risk"] = n.kernel_before_5_9 && n.memory_high_in_use;
    }
    j["memory_qos"] = q;
  }
  Json cgroups = Json::array();
  for (const auto& c : snap.cgroups) cgroups.push_back(CgroupJson(c));
  j["cgroups"] = std::move(cgroups);
  Json netns = Json::array();
  for (const auto& [ino, ns] : snap.netns) {
    Json jn;
    jn["netns_inode"] = ino;
    Json ifs = Json::array();
    for (const auto& i : ns.interfaces) {
      ifs.push_back(Json{{"name", i.name},
                         {"rx_bytes", i.rx_bytes},
                         {"rx_packets", i.rx_packets},
                         {"rx_errors", i.rx_errors},
                         {"rx_dropped", i.rx_dropped},
                         {"tx_bytes", i.tx_bytes},
                         {"tx_packets", i.tx_packets},
                         {"tx_errors", i.tx_errors},
                         {"tx_dropped", i.tx_dropped}});
    }
    jn["interfaces"] = std::move(ifs);
    netns.push_back(std::move(jn));
  }
  j["netns"] = std::move(netns);
  Json ooms = Json::array();
  for (const auto& e : snap.recent_ooms) {
    ooms.push_back(Json{{"timestamp_ns", e.timestamp_ns},
                        {"pid", e.pid},
                        {"comm", e.comm},
                        {"cgroup_id", e.cgroup_id},
                        {"cgroup_path", e.cgroup_path},
                        {"constraint", e.constraint_memcg ? "memcg" : "global"}});
  }
  j["recent_ooms"] = std::move(ooms);
  Json errs = Json::array();
  for (const auto& e : snap.read_errors)
    errs.push_back(Json{{"file", e.file}, {"reason", e.reason}, {"count", e.count}});
  j["read_errors"] = std::move(errs);
  Json probes = Json::array();
  for (const SourceState& p : snap.bpf_probes) probes.push_back(SourceJson(p));
  j["bpf_probes"] = std::move(probes);
  if (snap.runtime) j["runtime"] = SourceJson(*snap.runtime);
  const CollectionStats& cs = snap.collection;
  j["collection"] = Json{{"duration_ns", cs.duration_ns},
                         {"cgroups_tracked", cs.cgroups_tracked},
                         {"cgroups_reported", cs.cgroups_reported},
                         {"cgroups_vanished", cs.cgroups_vanished},
                         {"cgroups_dropped", cs.cgroups_dropped},
                         {"cgroups_merged", cs.cgroups_merged},
                         {"discovery_rescans", cs.discovery_rescans},
                         {"fds_kept", cs.fds_kept},
                         {"files_read", cs.files_read},
                         {"files_cached", cs.files_cached}};
  // Invalid UTF-8 in a path or comm must not abort the dump.
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace statlet
