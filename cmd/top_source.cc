#include "cmd/top_source.h"

#include <grpcpp/grpcpp.h>

#include "base/unix_socket.h"
#include "cmd/cri_stats_view.h"
#include "collector/memory_qos.h"
#include "collector/sampler.h"
#include "metrics/derived_values.h"
#include "metrics/snapshot_samples.h"
#include "proto/api.grpc.pb.h"

namespace statlet::top {
namespace v1 = ::runtime::v1;
namespace {

std::optional<uint64_t> Limit(const std::optional<uint64_t>& v) {
  if (!v || *v == kUnlimited) return std::nullopt;
  return v;
}

std::optional<double> SomeAvg10(const Psi& psi) {
  if (!psi.some) return std::nullopt;
  return psi.some->avg10;
}

void AddNetwork(const NetNamespaceStats& ns, Entry* e) {
  uint64_t rx = 0, tx = 0;
  // The interfaces container_network_* counts (loopback and host link ends left out).
  static const metrics::SampleRules kRules;
  for (const NetInterfaceStats& i : ns.interfaces) {
    if (!metrics::CountsInterface(kRules, i.name)) continue;
    rx += i.rx_bytes;
    tx += i.tx_bytes;
  }
  e->rx_bytes = rx;
  e->tx_bytes = tx;
}

void FillFromCgroup(const Snapshot& s, const CgroupStats& c, Entry* e) {
  e->timestamp_ns = s.monotonic_ns;
  e->cpu_ns = c.cpu.usage_ns;
  e->user_ns = c.cpu.user_ns;
  e->system_ns = c.cpu.system_ns;
  e->periods = c.cpu.nr_periods;
  e->throttled_periods = c.cpu.nr_throttled;
  e->throttled_ns = c.cpu.throttled_ns;
  e->working_set_bytes = c.memory.working_set_bytes;
  e->memory_limit_bytes = Limit(c.memory.max_bytes);
  e->cpu_psi_some_avg10 = SomeAvg10(c.cpu.psi);
  e->memory_psi_some_avg10 = SomeAvg10(c.memory.psi);
  if (c.id.kind == CgroupKind::kContainer) e->memory_zone = MemoryZoneName(c.memory_qos.zone);
}

std::string PodKey(const CgroupStats& c) { return c.id.pod_uid.empty() ? c.id.cgroup_path : "pod/" + c.id.pod_uid; }

std::string ShortId(const std::string& id) { return id.substr(0, 13); }

template <typename W>
std::optional<uint64_t> Value(bool has, const W& w) {
  if (!has) return std::nullopt;
  return w.value();
}

std::optional<double> SomeAvg10(const v1::PsiStats& psi, bool has) {
  if (!has || !psi.has_some()) return std::nullopt;
  return psi.some().avg10();
}

void FillFromCri(const v1::CpuUsage& cpu, const v1::MemoryUsage& mem, Entry* e) {
  e->timestamp_ns = cpu.timestamp() != 0 ? cpu.timestamp() : mem.timestamp();
  e->cpu_ns = Value(cpu.has_usage_core_nano_seconds(), cpu.usage_core_nano_seconds());
  e->user_ns = Value(cpu.has_usage_user_nano_seconds(), cpu.usage_user_nano_seconds());
  e->system_ns = Value(cpu.has_usage_kernel_nano_seconds(), cpu.usage_kernel_nano_seconds());
  if (cpu.has_throttling()) {
    const v1::StatletCpuThrottling& t = cpu.throttling();
    e->periods = Value(t.has_periods(), t.periods());
    e->throttled_periods = Value(t.has_throttled_periods(), t.throttled_periods());
    e->throttled_ns = Value(t.has_throttled_time_nano_seconds(), t.throttled_time_nano_seconds());
  }
  e->working_set_bytes = Value(mem.has_working_set_bytes(), mem.working_set_bytes());
  e->memory_limit_bytes = Value(mem.has_limit_bytes(), mem.limit_bytes());
  e->cpu_psi_some_avg10 = SomeAvg10(cpu.psi(), cpu.has_psi());
  e->memory_psi_some_avg10 = SomeAvg10(mem.psi(), mem.has_psi());
  if (mem.has_memory_qos()) e->memory_zone = mem.memory_qos().zone();
}

void FillFromCri(const v1::NetworkUsage& n, Entry* e) {
  const NetworkTotals t = SumNetworkUsage(n);
  e->rx_bytes = t.rx_bytes;
  e->tx_bytes = t.tx_bytes;
}

class InProcessSource : public SampleSource {
 public:
  explicit InProcessSource(std::unique_ptr<Collector> collector) : sampler_(std::move(collector), nullptr, nullptr) {}
  StatusOr<Sample> Next() override {
    auto snap = sampler_.Get(std::chrono::nanoseconds(0));
    if (!snap.ok()) return snap.status();
    return SampleFromSnapshot(**snap);
  }
  const std::string& Describe() const override { return name_; }

 private:
  Sampler sampler_;
  std::string name_ = "in-process";
};

class DaemonSource : public SampleSource {
 public:
  DaemonSource(const std::string& path, std::chrono::milliseconds timeout)
      : name_("daemon " + path + ": pods only, --cri.endpoint= for every cgroup"), timeout_(timeout) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);  // a node's pods can exceed gRPC's 4 MiB default
    stub_ = v1::RuntimeService::NewStub(
        grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), args));
  }
  StatusOr<v1::ListPodSandboxStatsResponse> Call() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
    v1::ListPodSandboxStatsResponse resp;
    grpc::Status s = stub_->ListPodSandboxStats(&ctx, v1::ListPodSandboxStatsRequest(), &resp);
    if (!s.ok()) return Unavailable("ListPodSandboxStats: " + s.error_message());
    return resp;
  }
  StatusOr<Sample> Next() override {
    auto resp = Call();
    if (!resp.ok()) return resp.status();
    return SampleFromPodSandboxStats(*resp);
  }
  const std::string& Describe() const override { return name_; }

 private:
  std::string name_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<v1::RuntimeService::Stub> stub_;
};

}  // namespace

namespace {

bool IsKubernetes(const CgroupStats& c) {
  return c.id.kind == CgroupKind::kPod || (c.id.kind == CgroupKind::kContainer && !c.id.pod_uid.empty());
}

// Everything else a host runs: services, sessions, bare runtime containers.
bool IsHost(const CgroupStats& c) {
  return c.id.kind == CgroupKind::kOther || (c.id.kind == CgroupKind::kContainer && c.id.pod_uid.empty());
}

// A pod (at the top, or under `section`) or one of its application containers.
void AddKubernetesEntry(const Snapshot& s, const CgroupStats& c, const std::string& section, Sample* out) {
  const ContainerMetadata* meta = c.id.meta.get();
  if (meta != nullptr && meta->is_sandbox) return;
  Entry& e = out->entries.emplace_back();
  FillFromCgroup(s, c, &e);
  if (c.id.kind == CgroupKind::kPod) {
    e.kind = EntryKind::kPod;
    e.key = PodKey(c);
    e.parent = section;
    e.name = meta != nullptr && !meta->pod_name.empty() ? meta->pod_namespace + "/" + meta->pod_name
             : !c.id.pod_uid.empty()                    ? "pod" + c.id.pod_uid
                                                        : c.id.cgroup_path;
    // A host-network pod has no traffic of its own: the node's interfaces are not its.
    if (const NetNamespaceStats* ns = s.Netns(c); ns != nullptr && !c.host_network) AddNetwork(*ns, &e);
  } else {
    e.kind = EntryKind::kContainer;
    e.key = c.id.container_id.empty() ? c.id.cgroup_path : "container/" + c.id.container_id;
    e.parent = c.id.pod_uid.empty() ? section : "pod/" + c.id.pod_uid;
    e.name = meta != nullptr && !meta->container_name.empty() ? meta->container_name
             : !c.id.container_id.empty()                     ? ShortId(c.id.container_id)
                                                              : c.id.cgroup_path;
  }
}

// Cgroups of `s` that `take` accepts, each under its nearest accepted ancestor (named by the
// path below it), the others under `top` ("" at the top).
template <typename Take>
void AddCgroupTree(const Snapshot& s, Take take, const std::string& top, Sample* out) {
  const std::vector<int32_t> parent = s.NearestAncestors();
  for (size_t i = 0; i < s.cgroups.size(); ++i) {
    const CgroupStats& c = s.cgroups[i];
    if (!take(c)) continue;
    Entry& e = out->entries.emplace_back();
    FillFromCgroup(s, c, &e);
    e.kind = EntryKind::kCgroup;
    e.key = c.id.cgroup_path;
    e.name = c.id.cgroup_path;
    e.parent = top;
    int32_t a = parent[i];
    while (a >= 0 && !take(s.cgroups[static_cast<size_t>(a)])) a = parent[static_cast<size_t>(a)];
    if (a >= 0) {
      // Shown under its parent: the path below it is enough.
      e.parent = s.cgroups[static_cast<size_t>(a)].id.cgroup_path;
      e.name = c.id.cgroup_path.substr(e.parent == "/" ? 1 : e.parent.size() + 1);
    }
    if (!c.host_network) {
      if (const NetNamespaceStats* ns = s.Netns(c)) AddNetwork(*ns, &e);
    }
  }
}

std::optional<uint64_t> Minus(const std::optional<uint64_t>& a, const std::optional<uint64_t>& b) {
  if (!a || !b || *b > *a) return std::nullopt;
  return *a - *b;
}

}  // namespace

Sample SampleFromSnapshot(const Snapshot& s) {
  bool kubernetes = false, host = false;
  const CgroupStats* root = nullptr;
  const CgroupStats* kubepods = nullptr;
  for (const CgroupStats& c : s.cgroups) {
    kubernetes |= IsKubernetes(c);
    host |= IsHost(c);
    if (c.id.kind == CgroupKind::kRoot) root = &c;
    if (c.id.kind == CgroupKind::kKubepods &&
        (kubepods == nullptr || c.id.cgroup_path.size() < kubepods->id.cgroup_path.size())) {
      kubepods = &c;
    }
  }
  Sample out;
  if (const MemoryQosBasis* b = s.memory_qos.basis.get()) {
    const bool known = b->rules.generation != MemoryQosGeneration::kUnknown;
    out.memory_qos =
        DescribeMemoryQos(MemoryQosRulesLabel(b->rules), known ? MemoryReservationPolicyName(b->rules.reservation) : "",
                          known ? metrics::ThrottlingFactorLabel(b->rules.throttling_factor) : "", b->kubelet_version);
  }
  out.entries.reserve(s.cgroups.size() + 2);
  if (!kubernetes) {
    AddCgroupTree(
        s, [](const CgroupStats&) { return true; }, "", &out);
    return out;
  }
  if (!host) {  // Kubernetes alone (e.g. --cgroup /kubepods.slice): pods at the top
    for (const CgroupStats& c : s.cgroups) {
      if (IsKubernetes(c)) AddKubernetesEntry(s, c, "", &out);
    }
    return out;
  }
  // A mixed host: the pods, and under a section of their own whatever else the host runs,
  // so that load outside Kubernetes (the kubelet, the runtime, the node's services) shows.
  Entry& pods = out.entries.emplace_back();
  pods.kind = EntryKind::kSection;
  pods.key = kKubernetesSection;
  pods.name = "Kubernetes pods";
  if (kubepods != nullptr) {
    FillFromCgroup(s, *kubepods, &pods);
    pods.name += " (" + kubepods->id.cgroup_path + ")";
  }
  pods.memory_limit_bytes.reset();  // node allocatable is no limit of the pods' own
  Entry& rest = out.entries.emplace_back();
  rest.kind = EntryKind::kSection;
  rest.key = kHostSection;
  rest.name = "host, outside Kubernetes";
  rest.timestamp_ns = s.monotonic_ns;
  if (root != nullptr && kubepods != nullptr) {
    // The node's totals less the pods': what the rest of the node costs.
    rest.cpu_ns = Minus(root->cpu.usage_ns, kubepods->cpu.usage_ns);
    rest.user_ns = Minus(root->cpu.user_ns, kubepods->cpu.user_ns);
    rest.system_ns = Minus(root->cpu.system_ns, kubepods->cpu.system_ns);
    rest.working_set_bytes = Minus(root->memory.working_set_bytes, kubepods->memory.working_set_bytes);
  }
  for (const CgroupStats& c : s.cgroups) {
    if (IsKubernetes(c)) AddKubernetesEntry(s, c, kKubernetesSection, &out);
  }
  AddCgroupTree(s, IsHost, kHostSection, &out);
  return out;
}

Sample SampleFromPodSandboxStats(const v1::ListPodSandboxStatsResponse& response) {
  Sample out;
  for (const v1::PodSandboxStats& p : response.stats()) {
    Entry& pod = out.entries.emplace_back();
    pod.kind = EntryKind::kPod;
    pod.key = !p.attributes().id().empty() ? p.attributes().id() : p.statlet_cgroup_path();
    const auto& md = p.attributes().metadata();
    // Without the runtime's names, as the in-process view names a pod: "pod<uid>".
    pod.name = !md.name().empty()  ? (md.namespace_().empty() ? "" : md.namespace_() + "/") + md.name()
               : !md.uid().empty() ? "pod" + md.uid()
                                   : "pod" + ShortId(pod.key);
    FillFromCri(p.linux().cpu(), p.linux().memory(), &pod);
    if (p.linux().has_network()) FillFromCri(p.linux().network(), &pod);
    const std::string pod_key = pod.key;  // `pod` moves when entries grow
    for (const v1::ContainerStats& c : p.linux().containers()) {
      Entry& e = out.entries.emplace_back();
      e.kind = EntryKind::kContainer;
      e.key = !c.attributes().id().empty() ? c.attributes().id() : c.cgroup_path();
      e.parent = pod_key;
      e.name = c.attributes().metadata().name().empty() ? ShortId(e.key) : c.attributes().metadata().name();
      FillFromCri(c.cpu(), c.memory(), &e);
      if (out.memory_qos.empty() && c.memory().has_memory_qos() && !c.memory().memory_qos().rules().empty()) {
        const auto& q = c.memory().memory_qos();
        out.memory_qos =
            DescribeMemoryQos(q.rules(), q.reservation_policy(), q.throttling_factor(), q.kubelet_version());
      }
    }
  }
  return out;
}

StatusOr<std::unique_ptr<SampleSource>> OpenSource(const SourceOptions& options, std::string* why) {
  why->clear();
  if (options.socket.empty()) {
    // Asked for: nothing to explain.
  } else if (auto path = ParseUnixEndpoint(options.socket); !path.ok()) {
    return path.status();
  } else if (!SocketIsLive(*path)) {
    *why = "no daemon on " + *path;
  } else {
    auto daemon = std::make_unique<DaemonSource>(*path, options.timeout);
    auto first = daemon->Call();
    if (!first.ok()) {
      *why = "daemon on " + *path + ": " + first.status().message();
    } else if (first->stats_size() == 0) {
      *why = "the daemon lists no pods";
    } else {
      return std::unique_ptr<SampleSource>(std::move(daemon));
    }
  }
  auto collector = Collector::Create(options.collector);
  if (!collector.ok()) return collector.status();
  return std::unique_ptr<SampleSource>(std::make_unique<InProcessSource>(std::move(*collector)));
}

}  // namespace statlet::top
