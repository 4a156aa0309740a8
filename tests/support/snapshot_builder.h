// Snapshots built in code, for the tests and benches of everything that reads one: a
// builder for the structure (cgroups by path and kind, pods and their containers, runtime
// metadata, network namespaces, path order), and the two node fixtures built with it.
// Plain C++ (no protobuf): the statlet-proto and the upstream-proto test binaries both
// build them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "snapshot/snapshot.h"

namespace statlet::testing {

class SnapshotBuilder {
 public:
  SnapshotBuilder(int64_t timestamp_ns, uint64_t sequence, uint32_t num_cpus);

  // A cgroup at `path`, its values left to the caller; the reference holds until the next Add.
  CgroupStats& Add(std::string path, CgroupKind kind);
  // A pod cgroup of the pod `uid`.
  CgroupStats& AddPod(std::string path, const std::string& uid);
  // A container cgroup, <pod_path>/<id>, of the pod `uid`.
  CgroupStats& AddContainer(const std::string& pod_path, const std::string& id, const std::string& uid);
  // The interfaces of a network namespace, in /proc/net/dev order.
  void AddNetns(uint64_t inode, std::vector<NetInterfaceStats> interfaces);

  // The snapshot, its cgroups in path order (as the collector reports them).
  Snapshot Build();

 private:
  Snapshot s_;
};

// ---- The node of the encoder, value-path, OTLP and HTTP tests and the encoder benches: a
// root cgroup, kubepods/QoS parents, and pods of one sandbox plus `containers_per_pod`
// containers, every field filled the way a cgroup v2 host with PSI fills it, plus what the
// eBPF probes and the runtime client add.

struct SnapshotShape {
  size_t pods = 3;
  size_t containers_per_pod = 2;
  uint32_t num_cpus = 2;
  bool with_metadata = true;
  // eBPF probe values on every cgroup, probe and runtime states, and recent OOM kills.
  bool with_bpf = true;
  uint64_t sequence = 1;
};

Snapshot MakeNodeSnapshot(const SnapshotShape& shape);
// Number of series of each cgroup kind is not fixed; this counts sample lines of a text
// exposition (lines not starting with '#').
size_t CountSamples(const std::string& exposition);

// ---- The node of the CRI tests: two pods (one with runtime metadata and a pause
// container, one without), a bare runtime container outside Kubernetes and the root, with
// distinct values in every field the CRI carries.

inline const std::string kPodAUid = "11111111-2222-3333-4444-555555555555";
inline const std::string kPodBUid = "99999999-8888-7777-6666-555555555555";
inline const std::string kSandboxA = std::string(64, 'a');        // pause container of pod A
inline const std::string kNginx = std::string(64, 'b');           // pod A, metadata
inline const std::string kSidecar = "bc" + std::string(62, '0');  // pod A, shares prefix "b"
inline const std::string kPlainC = std::string(64, 'd');          // pod B, no metadata
inline const std::string kBare = std::string(64, 'e');            // /docker/<id>, no pod
inline constexpr int64_t kTimestampNs = 1700000000123456789;
inline constexpr uint64_t kNetnsA = 4026532001;

Snapshot FixtureSnapshot();

}  // namespace statlet::testing
