// Where statlet top's samples come from: a running daemon's CRI socket (ListPodSandboxStats:
// pods with their containers), or a collection in this process, the one `statlet stats`
// makes without a daemon. The conversions are pure and tested on their own.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "cmd/top_model.h"
#include "collector/collector.h"
#include "snapshot/snapshot.h"

namespace runtime::v1 {
class ListPodSandboxStatsResponse;
}  // namespace runtime::v1

namespace statlet::top {

// With pods or containers in the snapshot: pods at the top, their containers under them (the
// root, kubepods and QoS cgroups, pause containers and non-Kubernetes cgroups left out).
// Without (a bare host): every reported cgroup, under its nearest reported ancestor. Keys
// are cgroup paths; timestamps the snapshot's monotonic clock.
Sample SampleFromSnapshot(const Snapshot& snapshot);

// Pods and the containers under them, keyed by their CRI ids; timestamps as the daemon
// stamped the values.
Sample SampleFromPodSandboxStats(const runtime::v1::ListPodSandboxStatsResponse& response);

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual StatusOr<Sample> Next() = 0;
  // For the header: "daemon /run/statlet/cri.sock" or "in-process".
  virtual const std::string& Describe() const = 0;
};

struct SourceOptions {
  std::string socket;  // the daemon's CRI socket (a path or unix:///path); "" = never
  CollectorOptions collector;
  std::chrono::milliseconds timeout{5000};  // one CRI call
};

// The daemon when its socket answers ListPodSandboxStats with at least one pod (its CRI
// service lists pods and containers only: a bare host's cgroups need the collector), else
// an in-process collector. `why` says why the daemon was passed over ("" when it was used
// or no socket was given).
StatusOr<std::unique_ptr<SampleSource>> OpenSource(const SourceOptions& options, std::string* why);

}  // namespace statlet::top
