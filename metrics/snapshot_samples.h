// The value path: turns a snapshot into the samples of each metric family. Every rule about
// values is decided here, once, for every edge (Prometheus, CRI metrics, OTLP): units, the
// "unlimited" and absent rules, which cgroups carry a pod's network and which interfaces
// count, block device names, per-CPU series, the cardinality caps.
//
// Usage (an edge keeps one SnapshotSamples and re-binds it per snapshot; a repeat bind of
// the same shape allocates nothing):
//   samples.Bind(snapshot);
//   for (const MetricFamily& f : AllMetricFamilies())
//     for (size_t i = 0; i < samples.cgroup_count(); ++i) samples.ForEachSample(f.id, i, sink);
//
// A value the snapshot lacks yields no sample (never a zero).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/device_names.h"
#include "metrics/families.h"
#include "metrics/metric_selection.h"
#include "metrics/sample.h"
#include "snapshot/snapshot.h"

namespace statlet::metrics {

// Which cgroup carries a pod's container_network_* series (each pod's namespace is
// reported once either way):
//   kSandboxOrPod  as the kubelet's cAdvisor: on the sandbox (pause) container when the
//                  runtime named one, else on the pod cgroup (no runtime metadata, or a
//                  runtime without a pause container);
//   kPod           always on the pod cgroup: the CRI's pod-level metrics.
enum class NetworkCarrier : uint8_t { kSandboxOrPod, kPod };

struct SampleRules {
  // cAdvisor's per-CPU mode: container_cpu_usage_seconds_total gets one series per CPU
  // (cpu="cpu00"…, zero values left out) instead of cpu="total", when per-CPU time is known.
  bool per_cpu = false;
  // Interfaces left out of container_network_* (name prefixes, as cAdvisor's
  // ignoredDevicePrefixes): loopback and the host ends of container links.
  std::vector<std::string> ignored_interface_prefixes = {"lo", "veth", "docker", "nerdctl"};
  // Cardinality guard: at most this many cgroups (in path order) and interfaces per network
  // namespace; 0 = no cap.
  size_t max_cgroups = 0;
  size_t max_interfaces = 0;
  NetworkCarrier network_carrier = NetworkCarrier::kSandboxOrPod;
  // cAdvisor's behaviour: a pod in the host's network namespace gets the host's interfaces
  // in container_network_* (the same series for every such pod). Off: it gets none of them;
  // its own traffic is in statlet_container_network_* (eBPF net probe). On needs the
  // collector to read the host's namespace (CollectorOptions::host_network_interfaces).
  bool host_network_interfaces = false;
  // The families served and the cgroup labels left out (--metrics.enable, --metrics.disable,
  // --metrics.drop-labels): a family left out yields no sample here, so no edge serves it.
  MetricSelection selection = {};
};

// Whether container_network_* counts an interface under `rules` (case-insensitive prefixes).
bool CountsInterface(const SampleRules& rules, std::string_view name);

class SnapshotSamples {
 public:
  explicit SnapshotSamples(SampleRules rules = {}, DeviceNames::Namer namer = BlockDeviceName);

  // Binds a snapshot, which must outlive every later call until the next Bind.
  void Bind(const Snapshot& snapshot);
  const Snapshot& snapshot() const { return *snap_; }
  const SampleRules& rules() const { return rules_; }
  // Whether family `id` is served at all (an edge leaves out its metadata too).
  bool Serves(FamilyId id) const { return rules_.selection.Serves(id); }
  // Cgroups that get series: the first max_cgroups in path order.
  size_t cgroup_count() const { return count_; }
  // Left out of this snapshot by the caps.
  uint64_t dropped_cgroups() const { return dropped_cgroups_; }
  uint64_t dropped_interfaces() const { return dropped_interfaces_; }

  // Yields the samples of cgroup-scope family `id` for cgroup `cgroup` (< cgroup_count()).
  void ForEachSample(FamilyId id, size_t cgroup, SampleSink& sink);
  // The same for cgroups [begin, end), the sink's type known at compile time so that its Add
  // is a direct call (the Prometheus encoder's path, once per series). Defined in
  // snapshot_samples_visit.h.
  template <class Sink>
  void ForEachSampleIn(FamilyId id, size_t begin, size_t end, Sink& sink);
  // Yields the samples of event-scope family `id`.
  void ForEachEventSample(FamilyId id, SampleSink& sink);

  // The network namespace whose interfaces cgroup `i` carries in container_network_*, or
  // null; and the pod namespace of pod cgroup `i` (statlet_pod_network_*), or null.
  const NetNamespaceStats* ContainerNetwork(size_t i) const { return container_net_[i]; }
  const NetNamespaceStats* PodNetwork(size_t i) const { return pod_net_[i]; }

 private:
  // Family `id`'s samples of one cgroup. kFixed: the family when known at compile time
  // (FamilyLoop), whose switch then folds before anything is inlined into its cases;
  // FamilyId::kCount when `id` decides at run time.
  template <class Sink, FamilyId kFixed = FamilyId::kCount>
  void VisitCgroup(FamilyId id, size_t cgroup, Sink& sink);
  // ForEachSampleIn's loop for one family, its rule chosen at compile time.
  template <FamilyId kId, class Sink>
  static void FamilyLoop(SnapshotSamples& self, size_t begin, size_t end, Sink& sink);

  SampleRules rules_;
  DeviceNames devices_;
  const Snapshot* snap_ = nullptr;
  size_t count_ = 0;
  // Kept as numbers: they are read after the snapshot may be gone.
  uint64_t dropped_cgroups_ = 0;
  uint64_t dropped_interfaces_ = 0;
  std::vector<const NetNamespaceStats*> container_net_;
  std::vector<const NetNamespaceStats*> pod_net_;
  std::vector<std::string> pid_labels_;  // "pid" of each recent OOM event
  std::string major_buf_, minor_buf_;    // device numbers beyond the label table
  std::string factor_buf_;               // statlet_node_memory_qos_info's throttling_factor
};

// Upper bounds, in seconds, of the run-queue latency histogram's buckets (the probe's log2
// microsecond slots); the last slot is open-ended.
std::span<const double> RunqueueLatencyBounds();

}  // namespace statlet::metrics
