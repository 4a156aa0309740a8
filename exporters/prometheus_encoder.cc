#include "exporters/prometheus_encoder.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

namespace statlet {
namespace {

// cAdvisor reports limits above 2^62 (the kernel's rounded "max") as 0.
constexpr uint64_t kCadvisorUnlimited = uint64_t{1} << 62;

uint64_t CadvisorLimit(uint64_t v) { return v > kCadvisorUnlimited ? 0 : v; }
double StatletLimit(uint64_t v) {
  return v == kUnlimited || v > kCadvisorUnlimited ? __builtin_inf() : static_cast<double>(v);
}

bool Limited(const Opt<uint64_t>& v) { return v.has_value() && *v != kUnlimited; }

void BuildHeader(const MetricFamily& f, ExpositionFormat format, std::string* out) {
  if (format == ExpositionFormat::kText004) {
    out->append("# HELP ").append(f.name).push_back(' ');
    AppendEscapedHelp(out, f.help, format);
    out->append("\n# TYPE ").append(f.name).push_back(' ');
    out->append(TextType(f)).push_back('\n');
    return;
  }
  std::string_view name = OpenMetricsFamilyName(f);
  if (OpenMetricsType(f) == "unknown") name = f.name;  // keep the sample name unchanged
  out->append("# TYPE ").append(name).push_back(' ');
  out->append(OpenMetricsType(f)).push_back('\n');
  if (std::string_view unit = OpenMetricsUnit(f); !unit.empty() && OpenMetricsType(f) != "unknown") {
    out->append("# UNIT ").append(name).push_back(' ');
    out->append(unit).push_back('\n');
  }
  out->append("# HELP ").append(name).push_back(' ');
  AppendEscapedHelp(out, f.help, format);
  out->push_back('\n');
}

void AppendLabel(std::string* out, bool* first, std::string_view name, std::string_view value) {
  if (value.empty()) return;
  out->push_back(*first ? '{' : ',');
  *first = false;
  out->append(name).append("=\"");
  AppendEscapedLabelValue(out, value);
  out->push_back('"');
}

// Which cgroups carry the cAdvisor network families. cAdvisor reports a pod's namespace
// once, on the sandbox (pause) container, so that sums over a pod's containers do not
// multiply it; the root cgroup reports the host's interfaces.
bool CarriesContainerNetwork(const CgroupStats& c) {
  if (c.host_network) return c.id.kind == CgroupKind::kRoot;
  switch (c.id.kind) {
    case CgroupKind::kRoot: return true;
    case CgroupKind::kContainer:
      if (c.id.meta) return c.id.meta->is_sandbox;
      return c.id.pod_uid.empty();  // a bare runtime container owns its namespace
    default: return false;
  }
}

// Whether two metadata objects render the same label block. The runtime client republishes
// metadata when only stats in it changed (the writable layer, every few seconds); those
// must not cost a re-render of every block.
bool SameLabels(const ContainerMetadata* a, const ContainerMetadata* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  return a->container_id == b->container_id && a->container_name == b->container_name &&
         a->is_sandbox == b->is_sandbox && a->image == b->image && a->image_ref == b->image_ref &&
         a->pod_name == b->pod_name && a->pod_namespace == b->pod_namespace;
}

const NetNamespaceStats* PodNetns(const Snapshot& s, size_t index) {
  const CgroupStats& pod = s.cgroups[index];
  if (pod.host_network) return nullptr;
  if (const NetNamespaceStats* ns = s.Netns(pod)) return ns;
  // The namespace belongs to the pod's containers; they follow the pod in path order.
  for (size_t i = index + 1; i < s.cgroups.size(); ++i) {
    const CgroupStats& c = s.cgroups[i];
    if (c.id.parent_path != pod.id.cgroup_path) {
      if (c.id.cgroup_path.compare(0, pod.id.cgroup_path.size(), pod.id.cgroup_path) != 0) break;
      continue;
    }
    if (c.host_network) return nullptr;
    if (const NetNamespaceStats* ns = s.Netns(c)) return ns;
  }
  return nullptr;
}

// ",resource=…,kind=…,window=…" for statlet_pressure_stall_ratio, built once.
std::string_view PsiSuffix(int resource, int full, int window) {
  static const auto* table = [] {
    auto* t = new std::array<std::string, 18>();
    static constexpr const char* kRes[3] = {"cpu", "memory", "io"};
    static constexpr const char* kWin[3] = {"10s", "60s", "300s"};
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 2; ++k)
        for (int w = 0; w < 3; ++w)
          (*t)[r * 6 + k * 3 + w] = std::string(",resource=\"") + kRes[r] + "\",kind=\"" + (k ? "full" : "some") +
                                    "\",window=\"" + kWin[w] + "\"";
    return t;
  }();
  return (*table)[resource * 6 + full * 3 + window];
}

constexpr std::string_view kMemoryEventNames[] = {"low", "high", "max", "oom", "oom_kill", "oom_group_kill"};
const Opt<uint64_t>& MemoryEvent(const MemoryEvents& e, size_t i) {
  switch (i) {
    case 0: return e.low;
    case 1: return e.high;
    case 2: return e.max;
    case 3: return e.oom;
    case 4: return e.oom_kill;
    default: return e.oom_group_kill;
  }
}

// The cgroup labels of a cgroup, sorted: `{container="…",id="…",image=…,name=…,namespace=…,pod=…`
// (no closing brace; unknown values left out; `*first` says whether "{" is still to come).
void AppendCgroupLabels(std::string* out, const Identity& id, bool* first) {
  const ContainerMetadata* m = id.meta.get();
  std::string_view container, image, name, ns, pod;
  if (id.kind == CgroupKind::kContainer) {
    // cAdvisor (containerd) aliases a container by its id: that is its `name`.
    name = !id.container_id.empty() ? std::string_view(id.container_id)
                                    : (m ? std::string_view(m->container_id) : std::string_view());
    if (m) {
      if (!m->is_sandbox) container = m->container_name;
      image = !m->image.empty() ? std::string_view(m->image) : std::string_view(m->image_ref);
      pod = m->pod_name;
      ns = m->pod_namespace;
    }
  } else if (id.kind == CgroupKind::kPod && m) {
    pod = m->pod_name;
    ns = m->pod_namespace;
  }
  AppendLabel(out, first, "container", container);
  AppendLabel(out, first, "id", id.cgroup_path.empty() ? std::string_view("/") : id.cgroup_path);
  AppendLabel(out, first, "image", image);
  AppendLabel(out, first, "name", name);
  AppendLabel(out, first, "namespace", ns);
  AppendLabel(out, first, "pod", pod);
}

// Whether two OOM events would carry the same labels (same victim cgroup, pid, comm and
// constraint); the older one is then left out, so that no two series share a label set.
bool SameOomSeries(const OomEvent& a, const OomEvent& b) {
  return a.cgroup_id == b.cgroup_id && a.pid == b.pid && a.constraint_memcg == b.constraint_memcg &&
         a.comm == b.comm && a.cgroup_path == b.cgroup_path;
}

}  // namespace

std::string SysfsDeviceName(uint32_t major, uint32_t minor) {
  char path[64];
  std::snprintf(path, sizeof path, "/sys/dev/block/%u:%u/uevent", major, minor);
  std::string fallback = std::to_string(major) + ":" + std::to_string(minor);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fallback;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return fallback;
  std::string_view text(buf, static_cast<size_t>(n));
  size_t pos = text.find("DEVNAME=");
  if (pos == std::string_view::npos) return fallback;
  std::string_view name = text.substr(pos + 8);
  name = name.substr(0, name.find('\n'));
  if (name.empty()) return fallback;
  return "/dev/" + std::string(name);
}

PrometheusEncoder::PrometheusEncoder(EncoderOptions options, DeviceNamer namer)
    : options_(std::move(options)), namer_(std::move(namer)) {
  for (const MetricFamily& f : AllMetricFamilies()) {
    BuildHeader(f, ExpositionFormat::kText004, &text_headers_[static_cast<size_t>(f.id)]);
    BuildHeader(f, ExpositionFormat::kOpenMetrics100, &om_headers_[static_cast<size_t>(f.id)]);
  }
}

void PrometheusEncoder::RenderBlock(const CgroupStats& c, CgroupLabels* e) {
  e->path = c.id.cgroup_path;
  e->cgroup_id = c.id.cgroup_id;
  e->created_ns = c.id.created_ns.value_or(0);
  e->meta = c.id.meta;
  e->block.clear();
  bool first = true;
  AppendCgroupLabels(&e->block, c.id, &first);
  ++blocks_rendered_;
}

void PrometheusEncoder::SyncLabelCache(const Snapshot& s, size_t count) {
  // Both the snapshot and the cache are sorted by path: merge them, moving entries that are
  // still valid (moves keep their buffers) and rendering only new or changed cgroups.
  scratch_.swap(cache_);
  size_t old = 0;
  size_t kept = 0;
  for (size_t i = 0; i < count; ++i) {
    const CgroupStats& c = s.cgroups[i];
    while (old < scratch_.size() && scratch_[old].path < c.id.cgroup_path) ++old;
    if (kept == cache_.size()) cache_.emplace_back();
    CgroupLabels& slot = cache_[kept++];
    if (old < scratch_.size() && scratch_[old].path == c.id.cgroup_path &&
        scratch_[old].cgroup_id == c.id.cgroup_id && scratch_[old].created_ns == c.id.created_ns.value_or(0) &&
        SameLabels(scratch_[old].meta.get(), c.id.meta.get())) {
      std::swap(slot, scratch_[old]);
      slot.meta = c.id.meta;
      ++old;
    } else {
      RenderBlock(c, &slot);
    }
  }
  cache_.resize(kept);
  // scratch_ keeps the evicted entries' buffers for reuse by later renders; drop their
  // metadata references now so that runtime metadata of dead containers is freed.
  for (auto& e : scratch_) e.meta.reset();
}

const std::string& PrometheusEncoder::CpuSuffix(size_t cpu) {
  while (cpu_suffixes_.size() <= cpu) {
    char buf[32];
    std::snprintf(buf, sizeof buf, ",cpu=\"cpu%02zu\"", cpu_suffixes_.size());
    cpu_suffixes_.emplace_back(buf);
  }
  return cpu_suffixes_[cpu];
}

const std::string& PrometheusEncoder::LeSuffix(size_t bucket) {
  while (le_suffixes_.size() <= bucket) {
    // Bucket i of the probe counts waits in [2^i, 2^(i+1)) microseconds: its upper bound in
    // seconds, rounded once from the exact quotient.
    const double le = static_cast<double>(uint64_t{2} << le_suffixes_.size()) / 1e6;
    std::string suffix = ",le=\"";
    AppendCanonicalFloat(&suffix, le);
    suffix.push_back('"');
    le_suffixes_.push_back(std::move(suffix));
  }
  return le_suffixes_[bucket];
}

const std::string& PrometheusEncoder::DeviceSuffix(uint32_t major, uint32_t minor) {
  uint64_t key = (uint64_t{major} << 32) | minor;
  auto it = device_suffixes_.find(key);
  if (it != device_suffixes_.end()) return it->second;
  std::string s = ",device=\"";
  AppendEscapedLabelValue(&s, namer_(major, minor));
  s.push_back('"');
  return device_suffixes_.emplace(key, std::move(s)).first->second;
}

const std::string& PrometheusEncoder::InterfaceSuffix(std::string_view name) {
  auto it = interface_suffixes_.find(name);
  if (it != interface_suffixes_.end()) return it->second;
  std::string s = ",interface=\"";
  AppendEscapedLabelValue(&s, name);
  s.push_back('"');
  return interface_suffixes_.emplace(std::string(name), std::move(s)).first->second;
}

const std::string& PrometheusEncoder::BlkioSuffix(uint32_t major, uint32_t minor) {
  uint64_t key = (uint64_t{major} << 32) | minor;
  auto it = blkio_suffixes_.find(key);
  if (it != blkio_suffixes_.end()) return it->second;
  std::string s = DeviceSuffix(major, minor);
  s.append(",major=\"").append(std::to_string(major)).append("\",minor=\"").append(std::to_string(minor));
  s.push_back('"');
  return blkio_suffixes_.emplace(key, std::move(s)).first->second;
}

const std::string& PrometheusEncoder::CachedSuffix(SuffixMap* map, std::string_view label, std::string_view value) {
  auto it = map->find(value);
  if (it != map->end()) return it->second;
  std::string s = ",";
  s.append(label).append("=\"");
  AppendEscapedLabelValue(&s, value);
  s.push_back('"');
  return map->emplace(std::string(value), std::move(s)).first->second;
}

void PrometheusEncoder::Begin(const MetricFamily& f, size_t cgroup, std::string_view extra,
                              std::string_view extra2) {
  // A block is never empty (id is always set), so extras can start with ','.
  std::string& o = *out_;
  o.append(f.name);
  o.append(cache_[cgroup].block);
  o.append(extra);
  o.append(extra2);
  o.append("} ", 2);
  ++series_;
}

void PrometheusEncoder::BeginSuffixed(const MetricFamily& f, std::string_view sample_suffix, size_t cgroup,
                                      std::string_view extra) {
  std::string& o = *out_;
  o.append(f.name);
  o.append(sample_suffix);
  o.append(cache_[cgroup].block);
  o.append(extra);
  o.append("} ", 2);
  ++series_;
}

void PrometheusEncoder::EncodeHistogram(const MetricFamily& f, size_t cgroup, const std::vector<uint64_t>& buckets,
                                        const Opt<uint64_t>& sum_ns) {
  if (buckets.empty()) return;
  // Cumulative `le` buckets at 2^(i+1) us. The probe's last bucket is open-ended (it holds
  // every wait from its lower bound up), so it only counts towards +Inf.
  uint64_t cumulative = 0;
  for (size_t i = 0; i + 1 < buckets.size(); ++i) {
    cumulative += buckets[i];
    BeginSuffixed(f, "_bucket", cgroup, LeSuffix(i));
    AppendUint(out_, cumulative);
    out_->push_back('\n');
  }
  cumulative += buckets.back();
  BeginSuffixed(f, "_bucket", cgroup, ",le=\"+Inf\"");
  AppendUint(out_, cumulative);
  out_->push_back('\n');
  // OpenMetrics: _count if and only if _sum.
  if (!sum_ns) return;
  BeginSuffixed(f, "_count", cgroup, {});
  AppendUint(out_, cumulative);
  out_->push_back('\n');
  BeginSuffixed(f, "_sum", cgroup, {});
  AppendScaledUint(out_, *sum_ns, 9);
  out_->push_back('\n');
}

void PrometheusEncoder::SampleU(const MetricFamily& f, size_t cgroup, std::string_view extra, uint64_t v) {
  Begin(f, cgroup, extra);
  AppendUint(out_, v);
  out_->push_back('\n');
}

void PrometheusEncoder::SampleScaled(const MetricFamily& f, size_t cgroup, std::string_view extra, uint64_t v,
                                     int decimals) {
  Begin(f, cgroup, extra);
  AppendScaledUint(out_, v, decimals);
  out_->push_back('\n');
}

void PrometheusEncoder::SampleD(const MetricFamily& f, size_t cgroup, std::string_view extra, double v) {
  Begin(f, cgroup, extra);
  AppendDouble(out_, v);
  out_->push_back('\n');
}

void PrometheusEncoder::EncodeCgroupFamily(const MetricFamily& f, const Snapshot& s, size_t count) {
  const size_t if_cap = options_.max_interfaces;
  auto one = [&](size_t i, const Opt<uint64_t>& v) {
    if (v) SampleU(f, i, {}, *v);
  };
  auto seconds_ns = [&](size_t i, const Opt<uint64_t>& v) {
    if (v) SampleScaled(f, i, {}, *v, 9);
  };
  auto psi_total = [&](size_t i, const Psi& p, bool full) {
    const Opt<PsiLine>& line = full ? p.full : p.some;
    if (line) SampleScaled(f, i, {}, line->total_us, 6);
  };
  auto network = [&](size_t i, const NetNamespaceStats* ns, auto field) {
    if (!ns) return;
    size_t n = 0;
    for (const NetInterfaceStats& itf : ns->interfaces) {
      if (if_cap && n++ >= if_cap) break;
      SampleU(f, i, InterfaceSuffix(itf.name), itf.*field);
    }
  };
  auto pod_network = [&](size_t i, auto rx, auto tx) {
    if (s.cgroups[i].id.kind != CgroupKind::kPod) return;
    const NetNamespaceStats* ns = PodNetns(s, i);
    if (!ns) return;
    size_t n = 0;
    for (const NetInterfaceStats& itf : ns->interfaces) {
      if (if_cap && n++ >= if_cap) break;
      const std::string& suffix = InterfaceSuffix(itf.name);
      for (int d = 0; d < 2; ++d) {
        Begin(f, i, d == 0 ? std::string_view(",direction=\"receive\"") : std::string_view(",direction=\"transmit\""),
              suffix);
        AppendUint(out_, d == 0 ? itf.*rx : itf.*tx);
        out_->push_back('\n');
      }
    }
  };

  for (size_t i = 0; i < count; ++i) {
    const CgroupStats& c = s.cgroups[i];
    const CpuStats& cpu = c.cpu;
    const MemoryStats& mem = c.memory;
    const bool cfs = Limited(cpu.quota_us);
    switch (f.id) {
      case FamilyId::kContainerLastSeen:
        SampleU(f, i, {}, static_cast<uint64_t>(s.timestamp_ns / 1000000000));
        break;
      case FamilyId::kContainerStartTimeSeconds: {
        int64_t start = 0;
        if (c.id.meta && c.id.kind == CgroupKind::kContainer) {
          start = c.id.meta->started_at_ns > 0 ? c.id.meta->started_at_ns : c.id.meta->created_at_ns;
        }
        if (start <= 0) start = c.id.created_ns.value_or(0);
        if (start > 0) SampleU(f, i, {}, static_cast<uint64_t>(start / 1000000000));
        break;
      }
      case FamilyId::kContainerCpuUsageSecondsTotal:
        if (options_.per_cpu && !cpu.per_cpu_ns.empty()) {
          for (size_t k = 0; k < cpu.per_cpu_ns.size(); ++k) {
            if (cpu.per_cpu_ns[k] > 0) SampleScaled(f, i, CpuSuffix(k), cpu.per_cpu_ns[k], 9);
          }
        } else if (cpu.usage_ns) {
          SampleScaled(f, i, ",cpu=\"total\"", *cpu.usage_ns, 9);
        }
        break;
      case FamilyId::kContainerCpuUserSecondsTotal: seconds_ns(i, cpu.user_ns); break;
      case FamilyId::kContainerCpuSystemSecondsTotal: seconds_ns(i, cpu.system_ns); break;
      case FamilyId::kContainerCpuCfsPeriodsTotal: if (cfs) one(i, cpu.nr_periods); break;
      case FamilyId::kContainerCpuCfsThrottledPeriodsTotal: if (cfs) one(i, cpu.nr_throttled); break;
      case FamilyId::kContainerCpuCfsThrottledSecondsTotal: if (cfs) seconds_ns(i, cpu.throttled_ns); break;
      case FamilyId::kContainerSpecCpuPeriod: one(i, cpu.period_us); break;
      case FamilyId::kContainerSpecCpuQuota: if (cfs) one(i, cpu.quota_us); break;
      case FamilyId::kContainerSpecCpuShares: one(i, cpu.shares); break;
      case FamilyId::kContainerSpecMemoryLimitBytes:
        if (mem.max_bytes) SampleU(f, i, {}, CadvisorLimit(*mem.max_bytes));
        break;
      case FamilyId::kContainerSpecMemorySwapLimitBytes:
        if (mem.swap_max_bytes) SampleU(f, i, {}, CadvisorLimit(*mem.swap_max_bytes));
        break;
      case FamilyId::kContainerSpecMemoryReservationLimitBytes: {
        const Opt<uint64_t>& r = mem.soft_limit_bytes ? mem.soft_limit_bytes : mem.min_bytes;
        if (r) SampleU(f, i, {}, CadvisorLimit(*r));
        break;
      }
      case FamilyId::kContainerMemoryUsageBytes: one(i, mem.usage_bytes); break;
      case FamilyId::kContainerMemoryMaxUsageBytes: one(i, mem.max_usage_bytes); break;
      case FamilyId::kContainerMemoryWorkingSetBytes: one(i, mem.working_set_bytes); break;
      case FamilyId::kContainerMemoryRss: one(i, mem.rss_bytes); break;
      case FamilyId::kContainerMemoryCache: one(i, mem.cache_bytes); break;
      case FamilyId::kContainerMemoryMappedFile: one(i, mem.mapped_file_bytes); break;
      case FamilyId::kContainerMemorySwap: one(i, mem.swap_bytes); break;
      case FamilyId::kContainerMemoryFailcnt: one(i, mem.failcnt); break;
      case FamilyId::kContainerMemoryFailuresTotal:
        // statlet reads one (hierarchical) fault count; like cAdvisor on cgroup v2 it is
        // reported for both scopes.
        if (mem.pgfault) {
          SampleU(f, i, ",failure_type=\"pgfault\",scope=\"container\"", *mem.pgfault);
          SampleU(f, i, ",failure_type=\"pgfault\",scope=\"hierarchy\"", *mem.pgfault);
        }
        if (mem.pgmajfault) {
          SampleU(f, i, ",failure_type=\"pgmajfault\",scope=\"container\"", *mem.pgmajfault);
          SampleU(f, i, ",failure_type=\"pgmajfault\",scope=\"hierarchy\"", *mem.pgmajfault);
        }
        break;
      case FamilyId::kContainerOomEventsTotal: {
        const Opt<uint64_t>& v = mem.events_local.oom_kill ? mem.events_local.oom_kill
                                 : mem.events.oom_kill     ? mem.events.oom_kill
                                                           : c.bpf.oom_kills;
        one(i, v);
        break;
      }
      case FamilyId::kContainerProcesses: one(i, c.process.processes); break;
      case FamilyId::kContainerThreads:
        one(i, c.process.threads ? c.process.threads : c.process.pids_current);
        break;
      case FamilyId::kContainerThreadsMax:
        if (c.process.pids_max) SampleU(f, i, {}, *c.process.pids_max == kUnlimited ? 0 : *c.process.pids_max);
        break;
      case FamilyId::kContainerFsReadsBytesTotal:
      case FamilyId::kContainerFsWritesBytesTotal:
      case FamilyId::kContainerFsReadsTotal:
      case FamilyId::kContainerFsWritesTotal:
        for (const IoDeviceStats& d : c.io.devices) {
          const Opt<uint64_t>& v = f.id == FamilyId::kContainerFsReadsBytesTotal    ? d.read_bytes
                                   : f.id == FamilyId::kContainerFsWritesBytesTotal ? d.write_bytes
                                   : f.id == FamilyId::kContainerFsReadsTotal       ? d.read_ios
                                                                                    : d.write_ios;
          if (v) SampleU(f, i, DeviceSuffix(d.major, d.minor), *v);
        }
        break;
      case FamilyId::kContainerBlkioDeviceUsageTotal:
        for (const IoDeviceStats& d : c.io.devices) {
          if (d.read_bytes) {
            Begin(f, i, BlkioSuffix(d.major, d.minor), ",operation=\"Read\"");
            AppendUint(out_, *d.read_bytes);
            out_->push_back('\n');
          }
          if (d.write_bytes) {
            Begin(f, i, BlkioSuffix(d.major, d.minor), ",operation=\"Write\"");
            AppendUint(out_, *d.write_bytes);
            out_->push_back('\n');
          }
        }
        break;
      case FamilyId::kContainerFsUsageBytes:
      case FamilyId::kContainerFsLimitBytes:
      case FamilyId::kContainerFsInodesFree:
      case FamilyId::kContainerFsInodesTotal: {
        // The writable layer as the runtime reports it: containers only (a pod cgroup
        // carries its sandbox's metadata, and the sandbox has no layer of its own here).
        if (c.id.kind != CgroupKind::kContainer || !c.id.meta || c.id.meta->writable_layer.timestamp_ns == 0) break;
        const auto& layer = c.id.meta->writable_layer;
        const Opt<uint64_t>& v = f.id == FamilyId::kContainerFsUsageBytes   ? layer.used_bytes
                                 : f.id == FamilyId::kContainerFsLimitBytes ? layer.capacity_bytes
                                 : f.id == FamilyId::kContainerFsInodesFree ? layer.inodes_free
                                                                            : layer.inodes_total;
        if (v) {
          std::string_view device = layer.device.empty() ? std::string_view(layer.mountpoint) : layer.device;
          SampleU(f, i, CachedSuffix(&fs_device_suffixes_, "device", device), *v);
        }
        break;
      }
      case FamilyId::kContainerFileDescriptors: one(i, c.process.file_descriptors); break;
      case FamilyId::kContainerSockets: one(i, c.process.sockets); break;
      case FamilyId::kContainerUlimitsSoft:
        if (const auto& v = c.process.max_open_files_soft) {
          if (*v == kUnlimited) SampleD(f, i, ",ulimit=\"max_open_files\"", -1.0);
          else SampleU(f, i, ",ulimit=\"max_open_files\"", *v);
        }
        break;
      case FamilyId::kContainerHugetlbUsageBytes:
      case FamilyId::kContainerHugetlbMaxUsageBytes:
        for (const MemoryStats::Hugetlb& h : mem.hugetlb) {
          const Opt<uint64_t>& v = f.id == FamilyId::kContainerHugetlbUsageBytes ? h.usage_bytes : h.max_usage_bytes;
          if (v) SampleU(f, i, CachedSuffix(&page_size_suffixes_, "pagesize", h.page_size), *v);
        }
        break;
      case FamilyId::kContainerNetworkReceiveBytesTotal:
      case FamilyId::kContainerNetworkReceivePacketsTotal:
      case FamilyId::kContainerNetworkReceiveErrorsTotal:
      case FamilyId::kContainerNetworkReceivePacketsDroppedTotal:
      case FamilyId::kContainerNetworkTransmitBytesTotal:
      case FamilyId::kContainerNetworkTransmitPacketsTotal:
      case FamilyId::kContainerNetworkTransmitErrorsTotal:
      case FamilyId::kContainerNetworkTransmitPacketsDroppedTotal: {
        if (!CarriesContainerNetwork(c)) break;
        const NetNamespaceStats* ns = s.Netns(c);
        switch (f.id) {
          case FamilyId::kContainerNetworkReceiveBytesTotal: network(i, ns, &NetInterfaceStats::rx_bytes); break;
          case FamilyId::kContainerNetworkReceivePacketsTotal: network(i, ns, &NetInterfaceStats::rx_packets); break;
          case FamilyId::kContainerNetworkReceiveErrorsTotal: network(i, ns, &NetInterfaceStats::rx_errors); break;
          case FamilyId::kContainerNetworkReceivePacketsDroppedTotal:
            network(i, ns, &NetInterfaceStats::rx_dropped);
            break;
          case FamilyId::kContainerNetworkTransmitBytesTotal: network(i, ns, &NetInterfaceStats::tx_bytes); break;
          case FamilyId::kContainerNetworkTransmitPacketsTotal: network(i, ns, &NetInterfaceStats::tx_packets); break;
          case FamilyId::kContainerNetworkTransmitErrorsTotal: network(i, ns, &NetInterfaceStats::tx_errors); break;
          default: network(i, ns, &NetInterfaceStats::tx_dropped); break;
        }
        break;
      }
      case FamilyId::kContainerPressureCpuWaitingSecondsTotal: psi_total(i, cpu.psi, false); break;
      case FamilyId::kContainerPressureCpuStalledSecondsTotal: psi_total(i, cpu.psi, true); break;
      case FamilyId::kContainerPressureMemoryWaitingSecondsTotal: psi_total(i, mem.psi, false); break;
      case FamilyId::kContainerPressureMemoryStalledSecondsTotal: psi_total(i, mem.psi, true); break;
      case FamilyId::kContainerPressureIoWaitingSecondsTotal: psi_total(i, c.io.psi, false); break;
      case FamilyId::kContainerPressureIoStalledSecondsTotal: psi_total(i, c.io.psi, true); break;
      case FamilyId::kStatletMemoryEventsTotal: {
        static constexpr std::string_view kExtra[2][6] = {
            {",event=\"low\",scope=\"hierarchy\"", ",event=\"high\",scope=\"hierarchy\"",
             ",event=\"max\",scope=\"hierarchy\"", ",event=\"oom\",scope=\"hierarchy\"",
             ",event=\"oom_kill\",scope=\"hierarchy\"", ",event=\"oom_group_kill\",scope=\"hierarchy\""},
            {",event=\"low\",scope=\"local\"", ",event=\"high\",scope=\"local\"", ",event=\"max\",scope=\"local\"",
             ",event=\"oom\",scope=\"local\"", ",event=\"oom_kill\",scope=\"local\"",
             ",event=\"oom_group_kill\",scope=\"local\""}};
        static_assert(std::size(kMemoryEventNames) == 6);
        for (int scope = 0; scope < 2; ++scope) {
          const MemoryEvents& e = scope == 0 ? mem.events : mem.events_local;
          for (size_t k = 0; k < 6; ++k) {
            if (const auto& v = MemoryEvent(e, k)) SampleU(f, i, kExtra[scope][k], *v);
          }
        }
        break;
      }
      case FamilyId::kStatletMemoryMinBytes: if (mem.min_bytes) SampleD(f, i, {}, StatletLimit(*mem.min_bytes)); break;
      case FamilyId::kStatletMemoryLowBytes: if (mem.low_bytes) SampleD(f, i, {}, StatletLimit(*mem.low_bytes)); break;
      case FamilyId::kStatletMemoryHighBytes:
        if (mem.high_bytes) SampleD(f, i, {}, StatletLimit(*mem.high_bytes));
        break;
      case FamilyId::kStatletMemoryReclaimScannedPagesTotal:
        if (mem.pgscan_direct) SampleU(f, i, ",reclaimer=\"direct\"", *mem.pgscan_direct);
        if (mem.pgscan_kswapd) SampleU(f, i, ",reclaimer=\"kswapd\"", *mem.pgscan_kswapd);
        break;
      case FamilyId::kStatletMemoryReclaimStolenPagesTotal:
        if (mem.pgsteal_direct) SampleU(f, i, ",reclaimer=\"direct\"", *mem.pgsteal_direct);
        if (mem.pgsteal_kswapd) SampleU(f, i, ",reclaimer=\"kswapd\"", *mem.pgsteal_kswapd);
        break;
      case FamilyId::kStatletMemoryWorkingsetRefaultsTotal:
        if (mem.workingset_refault_anon) SampleU(f, i, ",type=\"anon\"", *mem.workingset_refault_anon);
        if (mem.workingset_refault_file) SampleU(f, i, ",type=\"file\"", *mem.workingset_refault_file);
        break;
      case FamilyId::kStatletPressureStallRatio: {
        const Psi* psis[3] = {&cpu.psi, &mem.psi, &c.io.psi};
        for (int r = 0; r < 3; ++r) {
          for (int full = 0; full < 2; ++full) {
            const Opt<PsiLine>& line = full ? psis[r]->full : psis[r]->some;
            if (!line) continue;
            const double avgs[3] = {line->avg10, line->avg60, line->avg300};
            for (int w = 0; w < 3; ++w) SampleD(f, i, PsiSuffix(r, full, w), avgs[w] / 100.0);
          }
        }
        break;
      }
      case FamilyId::kStatletPidsCurrent: one(i, c.process.pids_current); break;
      case FamilyId::kStatletPidsMax:
        if (c.process.pids_max) SampleD(f, i, {}, StatletLimit(*c.process.pids_max));
        break;
      case FamilyId::kStatletPidsLimitHitsTotal: one(i, c.process.pids_events_max); break;
      case FamilyId::kStatletPodNetworkBytesTotal:
        pod_network(i, &NetInterfaceStats::rx_bytes, &NetInterfaceStats::tx_bytes);
        break;
      case FamilyId::kStatletPodNetworkPacketsTotal:
        pod_network(i, &NetInterfaceStats::rx_packets, &NetInterfaceStats::tx_packets);
        break;
      case FamilyId::kStatletPodNetworkErrorsTotal:
        pod_network(i, &NetInterfaceStats::rx_errors, &NetInterfaceStats::tx_errors);
        break;
      case FamilyId::kStatletPodNetworkDroppedPacketsTotal:
        pod_network(i, &NetInterfaceStats::rx_dropped, &NetInterfaceStats::tx_dropped);
        break;
      case FamilyId::kStatletCpuRunqueueLatencySeconds:
        EncodeHistogram(f, i, c.bpf.runq_latency_log2_us, c.bpf.runq_latency_sum_ns);
        break;
      case FamilyId::kStatletTcpRetransmitsTotal: one(i, c.bpf.tcp_retransmits); break;
      case FamilyId::kStatletTcpDropsTotal:
        // One series per reason seen; the reasons sum to tcp_drops.
        for (const auto& [reason, n] : c.bpf.tcp_drop_reasons) {
          SampleU(f, i, CachedSuffix(&drop_reason_suffixes_, "reason", reason), n);
        }
        break;
      case FamilyId::kStatletPageFaultsTotal:
        if (c.bpf.minor_faults) SampleU(f, i, ",type=\"minor\"", *c.bpf.minor_faults);
        if (c.bpf.major_faults) SampleU(f, i, ",type=\"major\"", *c.bpf.major_faults);
        break;
      case FamilyId::kStatletOomKillsTotal: one(i, c.bpf.oom_kills); break;
      default: break;
    }
  }
}

void PrometheusEncoder::EncodeEventFamily(const MetricFamily& f, const Snapshot& s) {
  if (f.id != FamilyId::kStatletOomKillTimestampSeconds) return;
  std::string& o = *out_;
  // Bounded by the Sampler's recent list (newest last): at most that many series, each
  // leaving when newer kills push it out. Labels come from the event alone (the victim
  // cgroup's identity as the Sampler resolved it), so a series keeps them after the cgroup
  // is gone.
  const std::vector<OomEvent>& events = s.recent_ooms;
  for (size_t i = 0; i < events.size(); ++i) {
    const OomEvent& e = events[i];
    bool newer_twin = false;
    for (size_t j = i + 1; j < events.size() && !newer_twin; ++j) newer_twin = SameOomSeries(e, events[j]);
    if (newer_twin) continue;
    o.append(f.name);
    bool first = true;
    if (e.cgroup) {
      AppendCgroupLabels(&o, *e.cgroup, &first);
    } else {
      AppendLabel(&o, &first, "id", e.cgroup_path);
    }
    AppendLabel(&o, &first, "comm", e.comm);
    AppendLabel(&o, &first, "constraint", e.constraint_memcg ? "memcg" : "global");
    o.append(",pid=\"");
    AppendUint(&o, e.pid);
    o.append("\"} ");
    AppendScaledUint(&o, static_cast<uint64_t>(std::max<int64_t>(0, e.timestamp_ns)), 9);
    o.push_back('\n');
    ++series_;
  }
}

void PrometheusEncoder::EncodeProcessFamily(const MetricFamily& f, const Snapshot& s,
                                            const SamplerStats& sampler) {
  std::string& o = *out_;
  auto plain = [&](auto write_value) {
    o.append(f.name).push_back(' ');
    write_value();
    o.push_back('\n');
    ++series_;
  };
  switch (f.id) {
    case FamilyId::kStatletBuildInfo:
      o.append(f.name).append("{revision=\"");
      AppendEscapedLabelValue(&o, options_.revision);
      o.append("\",version=\"");
      AppendEscapedLabelValue(&o, options_.version);
      o.append("\"} 1\n");
      ++series_;
      break;
    case FamilyId::kStatletCollectionDurationSeconds:
      plain([&] { AppendScaledUint(&o, static_cast<uint64_t>(std::max<int64_t>(0, s.collection.duration_ns)), 9); });
      break;
    case FamilyId::kStatletCgroupsTracked: plain([&] { AppendUint(&o, s.collection.cgroups_tracked); }); break;
    case FamilyId::kStatletCgroupsReported: plain([&] { AppendUint(&o, s.cgroups.size()); }); break;
    case FamilyId::kStatletCollectionsTotal: plain([&] { AppendUint(&o, sampler.collections); }); break;
    case FamilyId::kStatletScrapeJoinsTotal: plain([&] { AppendUint(&o, sampler.joins); }); break;
    case FamilyId::kStatletSnapshotReusesTotal: plain([&] { AppendUint(&o, sampler.reuses); }); break;
    case FamilyId::kStatletReadErrorsTotal:
      for (const ReadErrorCount& e : s.read_errors) {
        o.append(f.name).append("{file=\"");
        AppendEscapedLabelValue(&o, e.file);
        o.append("\",reason=\"");
        AppendEscapedLabelValue(&o, e.reason);
        o.append("\"} ");
        AppendUint(&o, e.count);
        o.push_back('\n');
        ++series_;
      }
      break;
    case FamilyId::kStatletBpfProbeUp:
    case FamilyId::kStatletBpfLostEventsTotal:
      for (const SourceState& p : s.bpf_probes) {
        o.append(f.name).append("{probe=\"");
        AppendEscapedLabelValue(&o, p.name);
        o.append("\"} ");
        AppendUint(&o, f.id == FamilyId::kStatletBpfProbeUp ? uint64_t{p.up} : p.lost_events);
        o.push_back('\n');
        ++series_;
      }
      break;
    case FamilyId::kStatletRuntimeUp:
      if (!s.runtime) break;
      o.append(f.name).append("{endpoint=\"");
      AppendEscapedLabelValue(&o, s.runtime->name);
      o.append(s.runtime->up ? "\"} 1\n" : "\"} 0\n");
      ++series_;
      break;
    case FamilyId::kStatletRuntimeInfo: {
      if (!s.runtime || !s.runtime->up) break;
      // An answering runtime's detail is "<name> <version>" (its CRI Version reply).
      std::string_view detail = s.runtime->detail;
      size_t space = detail.find(' ');
      std::string_view runtime = detail.substr(0, space);
      std::string_view version = space == std::string_view::npos ? std::string_view() : detail.substr(space + 1);
      o.append(f.name);
      bool first = true;
      AppendLabel(&o, &first, "endpoint", s.runtime->name);
      AppendLabel(&o, &first, "runtime", runtime);
      AppendLabel(&o, &first, "version", version);
      o.append(first ? " 1\n" : "} 1\n");
      ++series_;
      break;
    }
    case FamilyId::kStatletCardinalityDroppedTotal:
      o.append(f.name).append("{kind=\"cgroup\"} ");
      AppendUint(&o, dropped_cgroups_);
      o.append("\n").append(f.name).append("{kind=\"interface\"} ");
      AppendUint(&o, dropped_interfaces_);
      o.push_back('\n');
      series_ += 2;
      break;
    default: break;
  }
}

void PrometheusEncoder::Encode(const Snapshot& s, const SamplerStats& sampler, ExpositionFormat format,
                               std::string* out) {
  out->clear();
  out_ = out;
  series_ = 0;
  size_t count = s.cgroups.size();
  if (options_.max_cgroups && count > options_.max_cgroups) count = options_.max_cgroups;
  if (s.sequence != last_counted_sequence_) {
    last_counted_sequence_ = s.sequence;
    dropped_cgroups_ += s.cgroups.size() - count;
    if (options_.max_interfaces) {
      for (const auto& [inode, ns] : s.netns) {
        if (ns.interfaces.size() > options_.max_interfaces) {
          dropped_interfaces_ += ns.interfaces.size() - options_.max_interfaces;
        }
      }
    }
  }
  SyncLabelCache(s, count);
  const auto& headers = format == ExpositionFormat::kText004 ? text_headers_ : om_headers_;
  for (const MetricFamily& f : AllMetricFamilies()) {
    out->append(headers[static_cast<size_t>(f.id)]);
    switch (f.scope) {
      case MetricScope::kCgroup: EncodeCgroupFamily(f, s, count); break;
      case MetricScope::kEvent: EncodeEventFamily(f, s); break;
      case MetricScope::kProcess: EncodeProcessFamily(f, s, sampler); break;
    }
  }
  if (format == ExpositionFormat::kOpenMetrics100) out->append("# EOF\n");
  out_ = nullptr;
}

}  // namespace statlet
