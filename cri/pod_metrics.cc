#include "cri/pod_metrics.h"

#include <unistd.h>

#include <mutex>
#include <unordered_map>

#include "cri/metric_table.h"

namespace statlet::cri {
namespace v1 = ::runtime::v1;
namespace {

constexpr uint64_t kNsPerSecond = 1000000000ull;

// "/dev/<name>" of a block device, as cAdvisor labels it; "" when sysfs does not know it.
std::string BlockDeviceName(uint32_t major, uint32_t minor) {
  static std::mutex mu;
  static std::unordered_map<uint64_t, std::string> cache;
  uint64_t key = (uint64_t{major} << 32) | minor;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::string link = "/sys/dev/block/" + std::to_string(major) + ":" + std::to_string(minor);
  char buf[512];
  ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  std::string name;
  if (n > 0) {
    std::string target(buf, static_cast<size_t>(n));
    name = "/dev/" + target.substr(target.rfind('/') + 1);
  }
  cache.emplace(key, name);
  return name;
}

// Appends the series of one cgroup (a container, or the pod with container="POD").
class SeriesWriter {
 public:
  using Extra = std::initializer_list<std::string_view>;
  SeriesWriter(google::protobuf::RepeatedPtrField<v1::Metric>* out, int64_t timestamp_ns,
               std::vector<std::string> shared)
      : out_(out), ts_(timestamp_ns), shared_(std::move(shared)) {}

  void Add(FamilyId id, uint64_t value, Extra extra = {}) {
    if (const CriMetricFamily* f = CriFamily(id)) Add(*f, value, extra);
  }
  template <typename Id>
  void AddIf(Id id, const Opt<uint64_t>& v, Extra extra = {}) {
    if (v) Add(id, *v, extra);
  }
  // Limits: cAdvisor reports "no limit" as 0.
  void AddLimitIf(FamilyId id, const Opt<uint64_t>& v) {
    if (v) Add(id, *v == kUnlimited ? 0 : *v);
  }

 private:
  // Seconds families get the value in ns: whole seconds under the cAdvisor name, exact
  // nanoseconds under the sibling.
  void Add(const CriMetricFamily& f, uint64_t value, Extra extra) {
    if (f.seconds) {
      Emit(f, f.name, value / kNsPerSecond, extra);
      Emit(f, NanosecondsName(f.name), value, extra);
    } else {
      Emit(f, f.name, value, extra);
    }
  }

  void Emit(const CriMetricFamily& f, const std::string& name, uint64_t value, Extra extra) {
    v1::Metric* m = out_->Add();
    m->set_name(name);
    m->set_timestamp(ts_);
    m->set_metric_type(f.counter ? v1::COUNTER : v1::GAUGE);
    for (int src : f.label_source) {
      if (static_cast<size_t>(src) < kSharedLabelCount) {
        m->add_label_values(shared_[src]);
      } else {
        size_t i = static_cast<size_t>(src) - kSharedLabelCount;
        m->add_label_values(i < extra.size() ? std::string(*(extra.begin() + i)) : std::string());
      }
    }
    m->mutable_value()->set_value(value);
  }

  google::protobuf::RepeatedPtrField<v1::Metric>* out_;
  int64_t ts_;
  std::vector<std::string> shared_;
};

// Values taken as the Prometheus encoder takes them, so both edges agree.
// `meta` (containers only) carries the writable layer the runtime reported.
void AddCgroupSeries(const Snapshot& snap, const CgroupStats& cg, const ContainerMetadata* meta,
                     const Opt<uint64_t>& processes, const Opt<uint64_t>& threads, Opt<int64_t> start_ns,
                     SeriesWriter& w) {
  using F = FamilyId;
  const CpuStats& cpu = cg.cpu;
  const MemoryStats& mem = cg.memory;
  w.Add(F::kContainerLastSeen, static_cast<uint64_t>(snap.timestamp_ns) / kNsPerSecond);
  if (start_ns && *start_ns > 0) w.Add(F::kContainerStartTimeSeconds, static_cast<uint64_t>(*start_ns));
  w.AddIf(F::kContainerCpuUsageSecondsTotal, cpu.usage_ns, {"total"});
  w.AddIf(F::kContainerCpuUserSecondsTotal, cpu.user_ns);
  w.AddIf(F::kContainerCpuSystemSecondsTotal, cpu.system_ns);
  if (cpu.quota_us && *cpu.quota_us != kUnlimited) {  // CFS counters mean something only with a quota
    w.AddIf(F::kContainerCpuCfsPeriodsTotal, cpu.nr_periods);
    w.AddIf(F::kContainerCpuCfsThrottledPeriodsTotal, cpu.nr_throttled);
    w.AddIf(F::kContainerCpuCfsThrottledSecondsTotal, cpu.throttled_ns);
    w.Add(F::kContainerSpecCpuQuota, *cpu.quota_us);
  }
  w.AddIf(F::kContainerSpecCpuPeriod, cpu.period_us);
  w.AddIf(F::kContainerSpecCpuShares, cpu.shares);
  w.AddLimitIf(F::kContainerSpecMemoryLimitBytes, mem.max_bytes);
  w.AddLimitIf(F::kContainerSpecMemorySwapLimitBytes, mem.swap_max_bytes);
  w.AddLimitIf(F::kContainerSpecMemoryReservationLimitBytes,
               mem.soft_limit_bytes ? mem.soft_limit_bytes : mem.min_bytes);
  w.AddIf(F::kContainerMemoryUsageBytes, mem.usage_bytes);
  w.AddIf(F::kContainerMemoryMaxUsageBytes, mem.max_usage_bytes);
  w.AddIf(F::kContainerMemoryWorkingSetBytes, mem.working_set_bytes);
  w.AddIf(F::kContainerMemoryRss, mem.rss_bytes);
  w.AddIf(F::kContainerMemoryCache, mem.cache_bytes);
  w.AddIf(F::kContainerMemoryMappedFile, mem.mapped_file_bytes);
  w.AddIf(F::kContainerMemorySwap, mem.swap_bytes);
  w.AddIf(F::kContainerMemoryFailcnt, mem.failcnt);
  // memory.stat counts faults hierarchically; both scopes carry the same value.
  for (const char* scope : {"container", "hierarchy"}) {
    w.AddIf(F::kContainerMemoryFailuresTotal, mem.pgfault, {"pgfault", scope});
    w.AddIf(F::kContainerMemoryFailuresTotal, mem.pgmajfault, {"pgmajfault", scope});
  }
  w.AddIf(F::kContainerOomEventsTotal, mem.events_local.oom_kill ? mem.events_local.oom_kill
                                       : mem.events.oom_kill     ? mem.events.oom_kill
                                                                 : cg.bpf.oom_kills);
  w.AddIf(F::kContainerProcesses, processes);
  w.AddIf(F::kContainerThreads, threads ? threads : cg.process.pids_current);
  w.AddLimitIf(F::kContainerThreadsMax, cg.process.pids_max);
  for (const auto& d : cg.io.devices) {
    std::string dev = BlockDeviceName(d.major, d.minor);
    std::string major = std::to_string(d.major), minor = std::to_string(d.minor);
    w.AddIf(F::kContainerFsReadsBytesTotal, d.read_bytes, {dev});
    w.AddIf(F::kContainerFsWritesBytesTotal, d.write_bytes, {dev});
    w.AddIf(F::kContainerFsReadsTotal, d.read_ios, {dev});
    w.AddIf(F::kContainerFsWritesTotal, d.write_ios, {dev});
    w.AddIf(F::kContainerBlkioDeviceUsageTotal, d.read_bytes, {dev, major, minor, "Read"});
    w.AddIf(F::kContainerBlkioDeviceUsageTotal, d.write_bytes, {dev, major, minor, "Write"});
  }
  if (meta != nullptr && meta->writable_layer.timestamp_ns != 0) {
    const auto& layer = meta->writable_layer;
    const std::string& dev = layer.device.empty() ? layer.mountpoint : layer.device;
    w.AddIf(F::kContainerFsUsageBytes, layer.used_bytes, {dev});
    w.AddIf(F::kContainerFsLimitBytes, layer.capacity_bytes, {dev});
    w.AddIf(F::kContainerFsInodesFree, layer.inodes_free, {dev});
    w.AddIf(F::kContainerFsInodesTotal, layer.inodes_total, {dev});
  }
  w.AddIf(F::kContainerFileDescriptors, cg.process.file_descriptors);
  w.AddIf(F::kContainerSockets, cg.process.sockets);
  // Metric.value is unsigned: an unlimited soft limit (cAdvisor's -1) has no series.
  if (cg.process.max_open_files_soft && *cg.process.max_open_files_soft != kUnlimited) {
    w.Add(F::kContainerUlimitsSoft, *cg.process.max_open_files_soft, {"max_open_files"});
  }
  for (const auto& h : mem.hugetlb) {
    w.AddIf(F::kContainerHugetlbUsageBytes, h.usage_bytes, {h.page_size});
    w.AddIf(F::kContainerHugetlbMaxUsageBytes, h.max_usage_bytes, {h.page_size});
  }
  auto psi = [&](const Psi& p, F waiting, F stalled) {
    if (p.some) w.Add(waiting, p.some->total_us * 1000);
    if (p.full) w.Add(stalled, p.full->total_us * 1000);
  };
  psi(cpu.psi, F::kContainerPressureCpuWaitingSecondsTotal, F::kContainerPressureCpuStalledSecondsTotal);
  psi(mem.psi, F::kContainerPressureMemoryWaitingSecondsTotal, F::kContainerPressureMemoryStalledSecondsTotal);
  psi(cg.io.psi, F::kContainerPressureIoWaitingSecondsTotal, F::kContainerPressureIoStalledSecondsTotal);
}

void AddNetworkSeries(const NetNamespaceStats& ns, SeriesWriter& w) {
  using F = FamilyId;
  for (const auto& i : ns.interfaces) {
    if (i.name == "lo") continue;
    w.Add(F::kContainerNetworkReceiveBytesTotal, i.rx_bytes, {i.name});
    w.Add(F::kContainerNetworkReceivePacketsTotal, i.rx_packets, {i.name});
    w.Add(F::kContainerNetworkReceiveErrorsTotal, i.rx_errors, {i.name});
    w.Add(F::kContainerNetworkReceivePacketsDroppedTotal, i.rx_dropped, {i.name});
    w.Add(F::kContainerNetworkTransmitBytesTotal, i.tx_bytes, {i.name});
    w.Add(F::kContainerNetworkTransmitPacketsTotal, i.tx_packets, {i.name});
    w.Add(F::kContainerNetworkTransmitErrorsTotal, i.tx_errors, {i.name});
    w.Add(F::kContainerNetworkTransmitPacketsDroppedTotal, i.tx_dropped, {i.name});
  }
}

Opt<int64_t> StartTimeNs(const ContainerMetadata* meta, const CgroupStats& cg) {
  if (meta != nullptr && meta->started_at_ns > 0) return meta->started_at_ns;
  if (meta != nullptr && meta->created_at_ns > 0) return meta->created_at_ns;
  return cg.id.created_ns;
}

}  // namespace

void FillMetricDescriptors(v1::ListMetricDescriptorsResponse* out) {
  for (const CriMetricFamily& f : CriMetricFamilies()) {
    auto add = [&](const std::string& name, const std::string& help) {
      auto* d = out->add_descriptors();
      d->set_name(name);
      d->set_help(help);
      for (const auto& k : f.label_keys) d->add_label_keys(k);
    };
    add(f.name, f.help);
    if (f.seconds) add(NanosecondsName(f.name), f.help + " Exact, in nanoseconds.");
  }
}

void FillPodSandboxMetrics(const CriView& view, const PodEntry& pod, v1::PodSandboxMetrics* out) {
  const Snapshot& snap = *view.snapshot;
  PodInfo info = PodInfoOf(view, pod);
  out->set_pod_sandbox_id(pod.id);
  {
    std::string image = pod.meta != nullptr && pod.meta->is_sandbox ? pod.meta->image : "";
    SeriesWriter w(out->mutable_metrics(), snap.timestamp_ns,
                   {"POD", pod.cgroup->id.cgroup_path, image, pod.id, info.namespace_, info.name});
    const ContainerMetadata* sandbox = pod.meta != nullptr && pod.meta->is_sandbox ? pod.meta : nullptr;
    AddCgroupSeries(snap, *pod.cgroup, nullptr, pod.cgroup->process.processes, pod.cgroup->process.threads,
                    StartTimeNs(sandbox, *pod.cgroup), w);
    if (pod.netns != nullptr) AddNetworkSeries(*pod.netns, w);
  }
  for (int ci : pod.containers) {
    const ContainerEntry& c = view.containers[ci];
    auto* cm = out->add_container_metrics();
    cm->set_container_id(c.id);
    const ContainerMetadata* m = c.meta;
    SeriesWriter w(cm->mutable_metrics(), snap.timestamp_ns,
                   {m != nullptr ? m->container_name : "", c.cgroup->id.cgroup_path,
                    m != nullptr ? m->image : "", c.id, info.namespace_, info.name});
    AddCgroupSeries(snap, *c.cgroup, m, c.cgroup->process.processes, c.cgroup->process.threads,
                    StartTimeNs(m, *c.cgroup), w);
  }
}

}  // namespace statlet::cri
