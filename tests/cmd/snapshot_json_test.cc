// `statlet stats -o json` holds every snapshot field: a snapshot whose every value differs
// from every other, and each value looked up where the view puts it. A field added to the
// snapshot fails here until the view and this test know it: each struct's field count is
// pinned to the fields filled below (the keys declared in snapshot/*.def count themselves).
#include "cmd/snapshot_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace statlet {
namespace {

using Json = nlohmann::json;

// The number of fields of aggregate T: the most initializers T{...} takes.
struct AnyField {
  template <class T>
  operator T() const;  // only in unevaluated operands
};
template <class T, class... A>
constexpr size_t FieldCount() {
  if constexpr (requires { T{A{}..., AnyField{}}; }) return FieldCount<T, A..., AnyField>();
  else return sizeof...(A);
}

constexpr size_t kCpuStatKeys = 0
#define STATLET_CPU_STAT(field, v2_key, v2_scale, v1_key) +1
#include "snapshot/cpu_stat.def"
    ;
constexpr size_t kBpfCounters = 0
#define STATLET_BPF_COUNTER(field) +1
#include "snapshot/bpf_counters.def"
    ;
constexpr size_t kMemoryStatKeys = 0
#define STATLET_MEMSTAT_KEY(field, v2_key, v1_key) +1
#include "snapshot/memory_stat.def"
    ;

// Distinct values, and where the view must show each.
class Filler {
 public:
  uint64_t U(const std::string& path) {
    const uint64_t v = next_++;
    numbers_.push_back({path, v});
    return v;
  }
  Opt<uint64_t> O(const std::string& path) { return U(path); }
  std::string S(const std::string& path) {
    std::string v = "s" + std::to_string(next_++);
    strings_.push_back({path, v});
    return v;
  }
  // A value the view writes in a form of its own (a name, a flag): checked by the caller.
  void Expect(const std::string& path, Json v) { others_.push_back({path, std::move(v)}); }

  void Check(const Json& j) const {
    auto check = [&j](const std::string& path, const Json& want) {
      const Json::json_pointer p(path);
      if (!j.contains(p)) {
        ADD_FAILURE() << path << " is missing";
        return;
      }
      EXPECT_EQ(j.at(p), want) << path;
    };
    for (const auto& [path, v] : numbers_) check(path, v);
    for (const auto& [path, v] : strings_) check(path, v);
    for (const auto& [path, v] : others_) check(path, v);
  }

 private:
  uint64_t next_ = 1000001;
  std::vector<std::pair<std::string, uint64_t>> numbers_;
  std::vector<std::pair<std::string, std::string>> strings_;
  std::vector<std::pair<std::string, Json>> others_;
};

PsiLine Line(Filler& f, const std::string& at) {
  PsiLine l;
  l.avg10 = 1.5;
  l.avg60 = 2.5;
  l.avg300 = 3.5;
  l.total_us = f.U(at + "/total_us");
  f.Expect(at + "/avg10", 1.5);
  f.Expect(at + "/avg60", 2.5);
  f.Expect(at + "/avg300", 3.5);
  return l;
}
Psi FullPsi(Filler& f, const std::string& at) {
  static_assert(FieldCount<Psi>() == 2 && FieldCount<PsiLine>() == 4);
  return Psi{Line(f, at + "/some"), Line(f, at + "/full")};
}

CgroupStats Cgroup(Filler& f, const std::string& at) {
  CgroupStats c;
  Identity& id = c.id;
  id.cgroup_path = f.S(at + "/identity/cgroup_path");
  id.cgroup_id = f.U(at + "/identity/cgroup_id");
  id.kind = CgroupKind::kContainer;
  f.Expect(at + "/identity/kind", "container");
  id.qos = QosClass::kBurstable;
  f.Expect(at + "/identity/qos", "burstable");
  id.runtime = RuntimeKind::kContainerd;
  f.Expect(at + "/identity/runtime", "containerd");
  id.driver = CgroupDriver::kSystemd;
  f.Expect(at + "/identity/driver", "systemd");
  id.container_id = f.S(at + "/identity/container_id");
  id.pod_uid = f.S(at + "/identity/pod_uid");
  id.parent_path = f.S(at + "/identity/pod_cgroup_path");
  id.created_ns = static_cast<int64_t>(f.U(at + "/identity/created_ns"));
  auto meta = std::make_shared<ContainerMetadata>();
  const std::string m = at + "/identity/metadata";
  meta->container_id = f.S(m + "/container_id");
  meta->container_name = f.S(m + "/container_name");
  meta->attempt = static_cast<uint32_t>(f.U(m + "/attempt"));
  meta->pod_sandbox_id = f.S(m + "/pod_sandbox_id");
  meta->pod_name = f.S(m + "/pod_name");
  meta->pod_namespace = f.S(m + "/pod_namespace");
  meta->pod_uid = f.S(m + "/pod_uid");
  meta->pod_attempt = static_cast<uint32_t>(f.U(m + "/pod_attempt"));
  meta->image = f.S(m + "/image");
  meta->image_ref = f.S(m + "/image_ref");
  meta->labels["l"] = f.S(m + "/labels/l");
  meta->annotations["a"] = f.S(m + "/annotations/a");
  meta->pod_labels["pl"] = f.S(m + "/pod_labels/pl");
  meta->pod_annotations["pa"] = f.S(m + "/pod_annotations/pa");
  meta->created_at_ns = static_cast<int64_t>(f.U(m + "/created_at_ns"));
  meta->started_at_ns = static_cast<int64_t>(f.U(m + "/started_at_ns"));
  meta->is_sandbox = true;
  f.Expect(m + "/is_sandbox", true);
  auto& w = meta->writable_layer;
  w.timestamp_ns = static_cast<int64_t>(f.U(m + "/writable_layer/timestamp_ns"));
  w.mountpoint = f.S(m + "/writable_layer/mountpoint");
  w.device = f.S(m + "/writable_layer/device");
  w.used_bytes = f.O(m + "/writable_layer/used_bytes");
  w.inodes_used = f.O(m + "/writable_layer/inodes_used");
  w.capacity_bytes = f.O(m + "/writable_layer/capacity_bytes");
  w.inodes_total = f.O(m + "/writable_layer/inodes_total");
  w.inodes_free = f.O(m + "/writable_layer/inodes_free");
  auto& r = meta->memory_resources;
  r.reported = true;
  r.limit_bytes = f.O(m + "/memory_resources/limit_bytes");
  r.unified_min_bytes = f.O(m + "/memory_resources/unified_min_bytes");
  r.unified_low_bytes = f.O(m + "/memory_resources/unified_low_bytes");
  r.unified_high_bytes = f.O(m + "/memory_resources/unified_high_bytes");
  id.meta = meta;
  EXPECT_EQ(FieldCount<Identity>(), 11u);
  EXPECT_EQ(FieldCount<ContainerMetadata>(), 19u);
  EXPECT_EQ(FieldCount<ContainerMetadata::WritableLayer>(), 8u);
  EXPECT_EQ(FieldCount<ContainerMetadata::MemoryResources>(), 5u);

  CpuStats& cpu = c.cpu;
#define STATLET_CPU_STAT(field, v2_key, v2_scale, v1_key) cpu.field = f.O(at + "/cpu/" #field);
#include "snapshot/cpu_stat.def"
  cpu.per_cpu_ns = {f.U(at + "/cpu/per_cpu_ns/0"), f.U(at + "/cpu/per_cpu_ns/1")};
  cpu.per_cpu_from_bpf = true;
  f.Expect(at + "/cpu/per_cpu_source", "bpf");
  cpu.usage_nano_cores = f.O(at + "/cpu/usage_nano_cores");
  cpu.quota_us = f.O(at + "/cpu/quota_us");
  cpu.period_us = f.O(at + "/cpu/period_us");
  cpu.shares = f.O(at + "/cpu/shares");
  cpu.weight = f.O(at + "/cpu/weight");
  cpu.psi = FullPsi(f, at + "/cpu/psi");
  EXPECT_EQ(FieldCount<CpuStats>(), kCpuStatKeys + 8);

  MemoryStats& mem = c.memory;
  const std::string jm = at + "/memory";
  mem.usage_bytes = f.O(jm + "/usage_bytes");
  mem.max_usage_bytes = f.O(jm + "/max_usage_bytes");
  mem.working_set_bytes = f.O(jm + "/working_set_bytes");
#define STATLET_MEMSTAT_KEY(field, v2_key, v1_key) mem.field = f.O(jm + "/" #field);
#include "snapshot/memory_stat.def"
  mem.failcnt = f.O(jm + "/failcnt");
  mem.min_bytes = f.O(jm + "/min_bytes");
  mem.low_bytes = f.O(jm + "/low_bytes");
  mem.high_bytes = f.O(jm + "/high_bytes");
  mem.max_bytes = f.O(jm + "/max_bytes");
  mem.swap_max_bytes = f.O(jm + "/swap_max_bytes");
  mem.soft_limit_bytes = f.O(jm + "/soft_limit_bytes");
  MemoryStats::Hugetlb& h = mem.hugetlb.emplace_back();
  h.page_size = f.S(jm + "/hugetlb/0/page_size");
  h.usage_bytes = f.O(jm + "/hugetlb/0/usage_bytes");
  h.max_usage_bytes = f.O(jm + "/hugetlb/0/max_usage_bytes");
  h.limit_bytes = f.O(jm + "/hugetlb/0/limit_bytes");
  h.failcnt = f.O(jm + "/hugetlb/0/failcnt");
#define STATLET_MEMORY_EVENT(field, key, kernel_item) \
  mem.events.field = f.O(jm + "/events/" #field);     \
  mem.events_local.field = f.O(jm + "/events_local/" #field);
#include "snapshot/memory_events.def"
  mem.psi = FullPsi(f, jm + "/psi");
  EXPECT_EQ(FieldCount<MemoryStats>(), kMemoryStatKeys + 14);
  EXPECT_EQ(FieldCount<MemoryStats::Hugetlb>(), 5u);

  ProcessStats& p = c.process;
  p.processes = f.O(at + "/process/processes");
  p.threads = f.O(at + "/process/threads");
  p.pids_current = f.O(at + "/process/pids_current");
  p.pids_max = f.O(at + "/process/pids_max");
  p.pids_events_max = f.O(at + "/process/pids_events_max");
  p.file_descriptors = f.O(at + "/process/file_descriptors");
  p.sockets = f.O(at + "/process/sockets");
  p.max_open_files_soft = f.O(at + "/process/max_open_files_soft");
  EXPECT_EQ(FieldCount<ProcessStats>(), 8u);

  IoDeviceStats& d = c.io.devices.emplace_back();
  const std::string jd = at + "/io/devices/0";
  d.major = 8;
  d.minor = 16;
  f.Expect(jd + "/device", "8:16");
  d.read_bytes = f.O(jd + "/read_bytes");
  d.write_bytes = f.O(jd + "/write_bytes");
  d.read_ios = f.O(jd + "/read_ios");
  d.write_ios = f.O(jd + "/write_ios");
  d.discard_bytes = f.O(jd + "/discard_bytes");
  d.discard_ios = f.O(jd + "/discard_ios");
  d.cost_usage_us = f.O(jd + "/cost_usage_us");
  d.cost_wait_us = f.O(jd + "/cost_wait_us");
  d.cost_indebt_us = f.O(jd + "/cost_indebt_us");
  d.cost_indelay_us = f.O(jd + "/cost_indelay_us");
  c.io.psi = FullPsi(f, at + "/io/psi");
  EXPECT_EQ(FieldCount<IoDeviceStats>(), 12u);
  EXPECT_EQ(FieldCount<IoStats>(), 2u);

  c.netns_inode = f.O(at + "/network/netns_inode");
  c.host_network = true;
  f.Expect(at + "/network/host_network", true);

  BpfCgroupStats& b = c.bpf;
#define STATLET_BPF_COUNTER(field) b.field = f.O(at + "/bpf/" #field);
#include "snapshot/bpf_counters.def"
  b.per_cpu_ns = {f.U(at + "/bpf/per_cpu_ns/0")};
  b.tcp_drop_reasons["NO_SOCKET"] = f.U(at + "/bpf/tcp_drop_reasons/NO_SOCKET");
  b.runq_latency_log2_us = {f.U(at + "/bpf/runq_latency_log2_us/0")};
  EXPECT_EQ(FieldCount<BpfCgroupStats>(), kBpfCounters + 3);

  MemoryQosView& q = c.memory_qos;
  q.request_bytes = f.O(at + "/memory_qos/request_bytes");
  q.request_source = MemoryRequestSource::kApiServer;
  f.Expect(at + "/memory_qos/request_source", "apiserver");
  q.limit_bytes = f.O(at + "/memory_qos/limit_bytes");
  q.expected_low_bytes = f.O(at + "/memory_qos/expected_low_bytes");
  q.min_capped = true;
  f.Expect(at + "/memory_qos/min_capped", true);
  q.low_capped = false;
  f.Expect(at + "/memory_qos/low_capped", false);
  q.protection_judged = true;
  f.Expect(at + "/memory_qos/protection_judged", true);
  q.expected_min_bytes = f.O(at + "/memory_qos/expected_min_bytes");
  q.expected_high_bytes = f.O(at + "/memory_qos/expected_high_bytes");
  q.zone = MemoryZone::kThrottling;
  f.Expect(at + "/memory_qos/zone", "throttling");
  q.high_stalled = true;
  f.Expect(at + "/memory_qos/high_stalled", true);
  q.high_stalled_since_ns = static_cast<int64_t>(f.U(at + "/memory_qos/high_stalled_since_ns"));
  q.high_stall_evaluated = true;
  EXPECT_EQ(FieldCount<MemoryQosView>(), 13u);

  c.populated = true;
  f.Expect(at + "/populated", true);
  ExitInfo& e = c.exit.emplace();
  e.exit_ns = static_cast<int64_t>(f.U(at + "/exit/exit_ns"));
  e.lifetime_ns = static_cast<int64_t>(f.U(at + "/exit/lifetime_ns"));
  e.reason = ExitReason::kOomKilled;
  f.Expect(at + "/exit/reason", "oom_killed");
  EXPECT_EQ(FieldCount<ExitInfo>(), 3u);
  EXPECT_EQ(FieldCount<CgroupStats>(), 11u);
  return c;
}

TEST(SnapshotJson, HoldsEveryField) {
  Filler f;
  Snapshot s;
  s.timestamp_ns = static_cast<int64_t>(f.U("/timestamp_ns"));
  s.monotonic_ns = static_cast<int64_t>(f.U("/monotonic_ns"));
  s.sequence = f.U("/sequence");
  s.num_cpus = static_cast<uint32_t>(f.U("/num_cpus"));
  s.cgroups.push_back(Cgroup(f, "/cgroups/0"));

  NetNamespaceStats& ns = s.netns[4026532000];
  ns.netns_inode = 4026532000;
  f.Expect("/netns/0/netns_inode", 4026532000);
  NetInterfaceStats& i = ns.interfaces.emplace_back();
  i.name = f.S("/netns/0/interfaces/0/name");
  for (auto [member, name] : {std::pair{&NetInterfaceStats::rx_bytes, "rx_bytes"},
                              {&NetInterfaceStats::rx_packets, "rx_packets"},
                              {&NetInterfaceStats::rx_errors, "rx_errors"},
                              {&NetInterfaceStats::rx_dropped, "rx_dropped"},
                              {&NetInterfaceStats::tx_bytes, "tx_bytes"},
                              {&NetInterfaceStats::tx_packets, "tx_packets"},
                              {&NetInterfaceStats::tx_errors, "tx_errors"},
                              {&NetInterfaceStats::tx_dropped, "tx_dropped"}}) {
    i.*member = f.U(std::string("/netns/0/interfaces/0/") + name);
  }
  EXPECT_EQ(FieldCount<NetInterfaceStats>(), 9u);
  EXPECT_EQ(FieldCount<NetNamespaceStats>(), 2u);

  // OomEvent::cgroup repeats the victim's identity for labels; the view names the cgroup.
  OomEvent& e = s.recent_ooms.emplace_back();
  e.timestamp_ns = static_cast<int64_t>(f.U("/recent_ooms/0/timestamp_ns"));
  e.pid = static_cast<uint32_t>(f.U("/recent_ooms/0/pid"));
  e.comm = f.S("/recent_ooms/0/comm");
  e.cgroup_id = f.U("/recent_ooms/0/cgroup_id");
  e.cgroup_path = f.S("/recent_ooms/0/cgroup_path");
  e.constraint_memcg = true;
  f.Expect("/recent_ooms/0/constraint", "memcg");
  EXPECT_EQ(FieldCount<OomEvent>(), 7u);

  s.read_errors.push_back({f.S("/read_errors/0/file"), f.S("/read_errors/0/reason"), f.U("/read_errors/0/count")});
  EXPECT_EQ(FieldCount<ReadErrorCount>(), 3u);
  s.bpf_probes.push_back(
      {f.S("/bpf_probes/0/name"), true, f.S("/bpf_probes/0/detail"), f.U("/bpf_probes/0/lost_events")});
  f.Expect("/bpf_probes/0/up", true);
  s.runtime = SourceState{f.S("/runtime/name"), true, f.S("/runtime/detail"), f.U("/runtime/lost_events")};
  f.Expect("/runtime/up", true);
  EXPECT_EQ(FieldCount<SourceState>(), 4u);

  CollectionStats& cs = s.collection;
  cs.duration_ns = static_cast<int64_t>(f.U("/collection/duration_ns"));
  cs.cgroups_tracked = f.U("/collection/cgroups_tracked");
  cs.cgroups_reported = f.U("/collection/cgroups_reported");
  cs.cgroups_vanished = f.U("/collection/cgroups_vanished");
  cs.cgroups_dropped = f.U("/collection/cgroups_dropped");
  cs.cgroups_merged = f.U("/collection/cgroups_merged");
  cs.discovery_rescans = f.U("/collection/discovery_rescans");
  cs.fds_kept = f.U("/collection/fds_kept");
  cs.files_read = f.U("/collection/files_read");
  cs.files_cached = f.U("/collection/files_cached");
  EXPECT_EQ(FieldCount<CollectionStats>(), 10u);

  s.memory_qos.allocatable_bytes = f.O("/memory_qos/allocatable_bytes");
  s.memory_qos.applied = true;
  f.Expect("/memory_qos/applied", true);
  s.memory_qos.kubepods_path = f.S("/memory_qos/kubepods");
  s.memory_qos.min_total_bytes = f.O("/memory_qos/min_total_bytes");
  s.memory_qos.low_total_bytes = f.O("/memory_qos/low_total_bytes");
  s.memory_qos.kernel_release = f.S("/memory_qos/kernel_release");
  s.memory_qos.kernel_before_5_9 = true;
  s.memory_qos.memory_high_in_use = true;
  f.Expect("/memory_qos/livelock_risk", true);
  auto basis = std::make_shared<MemoryQosBasis>();
  basis->rules.generation = MemoryQosGeneration::kV1_36;
  basis->rules.enabled = true;
  basis->rules.throttling_factor = 0.8;
  basis->rules.reservation = MemoryReservationPolicy::kTieredReservation;
  basis->rules.page_size = f.U("/memory_qos/judged_by/page_size");
  EXPECT_EQ(FieldCount<MemoryQosRules>(), 5u);
  f.Expect("/memory_qos/judged_by/generation", "v1.36");
  f.Expect("/memory_qos/judged_by/feature_gate", true);
  f.Expect("/memory_qos/judged_by/throttling_factor", "0.8");
  f.Expect("/memory_qos/judged_by/reservation_policy", "TieredReservation");
  basis->kubelet_version = f.S("/memory_qos/judged_by/kubelet_version");
  basis->version_source = KubeletSettingSource::kApiServer;
  f.Expect("/memory_qos/judged_by/kubelet_version_source", "apiserver");
  basis->gate_source = KubeletSettingSource::kConfigFile;
  f.Expect("/memory_qos/judged_by/feature_gate_source", "config");
  basis->factor_source = KubeletSettingSource::kFlag;
  f.Expect("/memory_qos/judged_by/throttling_factor_source", "flag");
  basis->reservation_source = KubeletSettingSource::kDefault;
  f.Expect("/memory_qos/judged_by/reservation_policy_source", "default");
  basis->beyond_known = true;
  f.Expect("/memory_qos/judged_by/beyond_known", true);
  basis->config_file = f.S("/memory_qos/judged_by/kubelet_config");
  basis->config_state = "read";  // shown only when no file was read
  basis->note = f.S("/memory_qos/judged_by/note");
  EXPECT_EQ(FieldCount<MemoryQosBasis>(), 10u);
  s.memory_qos.basis = basis;
  EXPECT_EQ(FieldCount<NodeMemoryQos>(), 9u);
  s.parts = CollectParts(CollectParts::kCgroupDetail);
  f.Expect("/parts/process_fds", false);
  f.Expect("/parts/cgroup_detail", true);
  f.Expect("/parts/non_container_files", false);
  // Snapshot::vanished (identities of removed cgroups, for events drained later) is not
  // reported; nor is Snapshot::machine, which the daemon's snapshots alone carry (the
  // machine families of /metrics and OTLP).
  EXPECT_EQ(FieldCount<Snapshot>(), 15u);

  const Json j = Json::parse(SnapshotToJson(s, 0));
  f.Check(j);
}

}  // namespace
}  // namespace statlet
