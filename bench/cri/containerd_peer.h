// The peer of bench_cri: containerd's own stats calls on as many real containers
// (a private containerd and runc from tests/e2e's stage, pods in the kubelet's cgroupfs
// layout). Built only when tests/e2e is; otherwise Start() says why there is no peer.
#pragma once

#include <cstddef>
#include <memory>

#include "base/status.h"

namespace statlet::bench {

struct PeerFigures {
  double p50_ms = 0, p99_ms = 0;
  double cpu_ms = 0;  // containerd and its shims, per call (utime+stime, /proc/<pid>/stat)
  size_t bytes = 0, items = 0;
};

enum class PeerCall { kListContainerStats, kListPodSandboxStats };

class ContainerdPeer {
 public:
  static StatusOr<std::unique_ptr<ContainerdPeer>> Start();
  virtual ~ContainerdPeer() = default;
  // Runs containers (sleeping busybox) until `containers` run, `per_pod` per pod.
  virtual Status Grow(size_t containers, size_t per_pod) = 0;
  // `calls` sequential calls after two warm-up calls.
  virtual StatusOr<PeerFigures> Measure(PeerCall call, int calls) = 0;
  // Removes every pod and stops containerd.
  virtual void Stop() = 0;
};

}  // namespace statlet::bench
