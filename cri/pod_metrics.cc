#include "cri/pod_metrics.h"

#include <unistd.h>

#include <mutex>
#include <unordered_map>

#include "cri/metric_table.h"

namespace statlet::cri {
namespace v1 = ::runtime::v1;
namespace {

constexpr uint64_t kNsPerSecond = 1000000000ull;
constexpr size_t kSharedLabels = 6;  // container, id, image, name, namespace, pod

// For each family: where each sorted label key takes its value from, as an index into
// [shared labels..., the family's extra labels...].
const std::vector<std::vector<int>>& LabelOrders() {
  static const std::vector<std::vector<int>> orders = [] {
    static const char* const kShared[kSharedLabels] = {"container", "id", "image", "name", "namespace", "pod"};
    std::vector<std::vector<int>> all;
    for (const auto& f : MetricFamilies()) {
      std::vector<std::string> source(kShared, kShared + kSharedLabels);
      source.insert(source.end(), f.extra_labels.begin(), f.extra_labels.end());
      std::vector<int> order;
      for (const auto& key : LabelKeys(f)) {
        for (size_t i = 0; i < source.size(); ++i) {
          if (source[i] == key) order.push_back(static_cast<int>(i));
        }
      }
      all.push_back(std::move(order));
    }
    return all;
  }();
  return orders;
}

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
  SeriesWriter(google::protobuf::RepeatedPtrField<v1::Metric>* out, int64_t timestamp_ns,
               std::vector<std::string> shared)
      : out_(out), ts_(timestamp_ns), shared_(std::move(shared)) {}

  void Add(FamilyId id, uint64_t value, std::initializer_list<std::string_view> extra = {}) {
    const MetricFamily& f = FamilyOf(id);
    if (f.seconds) {
      Emit(f, f.name, value / kNsPerSecond, extra);
      Emit(f, NanosecondsName(f.name), value, extra);
    } else {
      Emit(f, f.name, value, extra);
    }
  }
  void AddIf(FamilyId id, const Opt<uint64_t>& v, std::initializer_list<std::string_view> extra = {}) {
    if (v) Add(id, *v, extra);
  }
  // Limits: cAdvisor reports "no limit" as 0.
  void AddLimitIf(FamilyId id, const Opt<uint64_t>& v) {
    if (v) Add(id, *v == kUnlimited ? 0 : *v);
  }

 private:
  void Emit(const MetricFamily& f, std::string name, uint64_t value,
            std::initializer_list<std::string_view> extra) {
    v1::Metric* m = out_->Add();
    m->set_name(std::move(name));
    m->set_timestamp(ts_);
    m->set_metric_type(f.counter ? v1::COUNTER : v1::GAUGE);
    for (int src : LabelOrders()[static_cast<size_t>(f.id)]) {
      if (static_cast<size_t>(src) < kSharedLabels) {
        m->add_label_values(shared_[src]);
      } else {
        size_t i = static_cast<size_t>(src) - kSharedLabels;
        m->add_label_values(i < extra.size() ? std::string(*(extra.begin() + i)) : std::string());
      }
    }
    m->mutable_value()->set_value(value);
  }

  google::protobuf::RepeatedPtrField<v1::Metric>* out_;
  int64_t ts_;
  std::vector<std::string> shared_;
};

void AddCgroupSeries(const Snapshot& snap, const CgroupStats& cg, const Opt<uint64_t>& processes,
                     const Opt<uint64_t>& threads, Opt<int64_t> start_ns, SeriesWriter& w) {
  using F = FamilyId;
  const CpuStats& cpu = cg.cpu;
  w.AddIf(F::kCpuCfsPeriods, cpu.nr_periods);
  w.AddIf(F::kCpuCfsThrottledPeriods, cpu.nr_throttled);
  w.AddIf(F::kCpuCfsThrottledSeconds, cpu.throttled_ns);
  w.AddIf(F::kCpuSystemSeconds, cpu.system_ns);
  w.AddIf(F::kCpuUsageSeconds, cpu.usage_ns, {"total"});
  w.AddIf(F::kCpuUserSeconds, cpu.user_ns);
  for (const auto& d : cg.io.devices) {
    std::string dev = BlockDeviceName(d.major, d.minor);
    std::string major = std::to_string(d.major), minor = std::to_string(d.minor);
    w.AddIf(F::kFsReadsBytes, d.read_bytes, {dev});
    w.AddIf(F::kFsReads, d.read_ios, {dev});
    w.AddIf(F::kFsWritesBytes, d.write_bytes, {dev});
    w.AddIf(F::kFsWrites, d.write_ios, {dev});
    w.AddIf(F::kBlkioDeviceUsage, d.read_bytes, {dev, major, minor, "Read"});
    w.AddIf(F::kBlkioDeviceUsage, d.write_bytes, {dev, major, minor, "Write"});
  }
  w.Add(F::kLastSeen, static_cast<uint64_t>(snap.timestamp_ns) / kNsPerSecond);
  const MemoryStats& mem = cg.memory;
  w.AddIf(F::kMemoryCache, mem.cache_bytes);
  // memory.stat counts faults hierarchically; both scopes carry the same value.
  for (const char* scope : {"container", "hierarchy"}) {
    w.AddIf(F::kMemoryFailures, mem.pgfault, {"pgfault", scope});
    w.AddIf(F::kMemoryFailures, mem.pgmajfault, {"pgmajfault", scope});
  }
  w.AddIf(F::kMemoryMappedFile, mem.mapped_file_bytes);
  w.AddIf(F::kMemoryMaxUsage, mem.max_usage_bytes);
  w.AddIf(F::kMemoryRss, mem.rss_bytes);
  w.AddIf(F::kMemorySwap, mem.swap_bytes);
  w.AddIf(F::kMemoryUsage, mem.usage_bytes);
  w.AddIf(F::kMemoryWorkingSet, mem.working_set_bytes);
  w.AddIf(F::kOomEvents, mem.events.oom_kill ? mem.events.oom_kill : cg.bpf.oom_kills);
  w.AddIf(F::kProcesses, processes);
  w.AddIf(F::kSpecCpuPeriod, cpu.period_us);
  w.AddIf(F::kSpecCpuShares, cpu.shares);
  w.AddLimitIf(F::kSpecMemoryLimit, mem.max_bytes);
  w.AddLimitIf(F::kSpecMemorySwapLimit, mem.swap_max_bytes);
  if (start_ns && *start_ns > 0) w.Add(F::kStartTimeSeconds, static_cast<uint64_t>(*start_ns));
  w.AddIf(F::kThreads, threads);
  w.AddLimitIf(F::kThreadsMax, cg.process.pids_max);
  if (cpu.quota_us && *cpu.quota_us != kUnlimited) w.Add(F::kSpecCpuQuota, *cpu.quota_us);
  w.AddLimitIf(F::kSpecMemoryReservationLimit, mem.soft_limit_bytes ? mem.soft_limit_bytes : mem.low_bytes);
  auto psi = [&](const Psi& p, F stalled, F waiting) {
    if (p.full) w.Add(stalled, p.full->total_us * 1000);
    if (p.some) w.Add(waiting, p.some->total_us * 1000);
  };
  psi(cpu.psi, F::kPressureCpuStalled, F::kPressureCpuWaiting);
  psi(mem.psi, F::kPressureMemoryStalled, F::kPressureMemoryWaiting);
  psi(cg.io.psi, F::kPressureIoStalled, F::kPressureIoWaiting);
}

void AddNetworkSeries(const NetNamespaceStats& ns, SeriesWriter& w) {
  using F = FamilyId;
  for (const auto& i : ns.interfaces) {
    if (i.name == "lo") continue;
    w.Add(F::kNetworkReceiveBytes, i.rx_bytes, {i.name});
    w.Add(F::kNetworkReceivePackets, i.rx_packets, {i.name});
    w.Add(F::kNetworkReceiveErrors, i.rx_errors, {i.name});
    w.Add(F::kNetworkReceiveDropped, i.rx_dropped, {i.name});
    w.Add(F::kNetworkTransmitBytes, i.tx_bytes, {i.name});
    w.Add(F::kNetworkTransmitPackets, i.tx_packets, {i.name});
    w.Add(F::kNetworkTransmitErrors, i.tx_errors, {i.name});
    w.Add(F::kNetworkTransmitDropped, i.tx_dropped, {i.name});
  }
}

Opt<int64_t> StartTimeNs(const ContainerMetadata* meta, const CgroupStats& cg) {
  if (meta != nullptr && meta->started_at_ns > 0) return meta->started_at_ns;
  if (meta != nullptr && meta->created_at_ns > 0) return meta->created_at_ns;
  return cg.id.created_ns;
}

}  // namespace

void FillMetricDescriptors(v1::ListMetricDescriptorsResponse* out) {
  for (const auto& f : MetricFamilies()) {
    std::vector<std::string> keys = LabelKeys(f);
    auto add = [&](const std::string& name, const std::string& help) {
      auto* d = out->add_descriptors();
      d->set_name(name);
      d->set_help(help);
      for (const auto& k : keys) d->add_label_keys(k);
    };
    add(f.name, f.help);
    if (f.seconds) add(NanosecondsName(f.name), std::string(f.help) + " Exact, in nanoseconds.");
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
    AddCgroupSeries(snap, *pod.cgroup, pod.processes, pod.threads, StartTimeNs(sandbox, *pod.cgroup), w);
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
    AddCgroupSeries(snap, *c.cgroup, c.cgroup->process.processes, c.cgroup->process.threads,
                    StartTimeNs(m, *c.cgroup), w);
  }
}

}  // namespace statlet::cri
