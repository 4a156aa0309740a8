// RuntimeClient: the node's container runtime (containerd, CRI-O) as statlet's metadata
// source. A background thread lists sandboxes and containers over the runtime's CRI
// socket (ContainerStatus only for containers it has not seen yet, for start time and
// image) and publishes an immutable MetadataMap; Current() only reads that map, so a
// collection never waits on the network. While the runtime is absent or down the last
// map stays published, the outage is logged once, and reconnects back off up to
// max_backoff.
//
// The runtime's own ListContainerStats is asked at a slower cadence (stats_period, 10 s by
// default; never per scrape) for what only the runtime knows: each container's writable
// layer (used bytes and inodes, and where it lives). The filesystem under it is measured
// with statvfs when statlet can reach the reported mountpoint; a runtime that reports no
// mountpoint is asked ImageFsInfo for its container filesystem instead. A container new to
// a round is asked ContainerStats at once, so its layer does not wait for the next period.
//
// In proxy mode (cri/proxy_router.h) statlet sees the calls that change the node's sandboxes
// and containers: NoteChange starts a round at once, and the stats calls wait (briefly)
// for a round that covers every change noted before they began, so that their answers
// name what the runtime lists (WaitCovering). Beside a runtime it does not front, statlet
// learns of a new sandbox or container from its cgroup first: the stats calls hand over the
// container cgroups the metadata does not name, and a round starts for those not handed
// over before (CoverUnknown).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "collector/enrichment.h"

namespace grpc {
class ClientContext;
}

namespace statlet {

enum class RuntimeState : uint8_t {
  kUnknown,  // not tried yet
  kAbsent,   // no runtime socket found
  kDown,     // the socket is there but calls fail
  kUp,
};
const char* RuntimeStateName(RuntimeState s);

// The usual runtime sockets, tried in order when no endpoint is given.
std::vector<std::string> DefaultRuntimeSockets();

struct RuntimeClientOptions {
  std::string endpoint;  // "unix:///run/containerd/containerd.sock"; empty: auto-detect
  std::vector<std::string> candidates = DefaultRuntimeSockets();
  std::chrono::milliseconds refresh_period{2000};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds call_timeout{5000};
  // ListContainerStats cadence for the writable layers; 0 never asks.
  std::chrono::milliseconds stats_period{10000};
};

// For the self-metric (statlet_runtime_up and friends) and the logs.
struct RuntimeClientStatus {
  RuntimeState state = RuntimeState::kUnknown;
  std::string endpoint;      // the socket in use or last tried
  std::string runtime_name;  // from Version, e.g. "containerd"
  std::string runtime_version;
  uint64_t refreshes = 0;  // successful list rounds
  uint64_t failures = 0;   // failed rounds
  uint64_t sandboxes = 0, containers = 0;
  uint64_t stats_refreshes = 0;  // successful ListContainerStats rounds
  uint64_t stats_failures = 0;
  std::string last_error;
  std::string last_stats_error;
};

class RuntimeClient : public MetadataSource {
 public:
  explicit RuntimeClient(RuntimeClientOptions options);
  ~RuntimeClient() override;

  // Starts the background refresher (the first round runs at once).
  void Start();
  // Stops the refresher; a call in flight is cancelled, not waited for.
  void Stop();
  // One synchronous round: resolve the socket, list, publish. For tests and start-up.
  Status Refresh();
  // One synchronous ListContainerStats round (after a successful Refresh): the writable
  // layers, published with the metadata.
  Status RefreshStats();

  std::shared_ptr<const MetadataMap> Current() override;
  RuntimeClientStatus status() const;
  SourceState State() const override;

  // A call that changes sandboxes or containers succeeded through statlet's CRI socket: the
  // next round starts now. Returns the change's number. Never waits on a round.
  uint64_t NoteChange();
  // The number of the last change noted.
  uint64_t changes() const { return changes_.load(std::memory_order_relaxed); }
  // Waits until a round that started after change `change` has published, at most
  // `timeout`, and not at all while the runtime is not up. Returns the CLOCK_MONOTONIC ns
  // from which a collection reads that round's metadata; none when it did not come.
  std::optional<int64_t> WaitCovering(uint64_t change, std::chrono::milliseconds timeout);
  // The ids of the container cgroups a collection found and the published metadata does
  // not name. The first time an id is handed over, a round starts at once and this waits
  // for it (at most `timeout`, as WaitCovering); an id handed over before is not asked
  // again (a round after it was first seen did not list it: not the runtime's container, or
  // not yet; a call handing it over before that round came waits for the same round), nor
  // while the runtime is not up. Ids missing from `ids` are forgotten (their
  // cgroups are gone or named now). Returns the CLOCK_MONOTONIC ns from which a collection
  // reads the new round's metadata; none when no round was asked or it did not come.
  std::optional<int64_t> CoverUnknown(const std::vector<std::string>& ids, std::chrono::milliseconds timeout);

 private:
  struct Conn;
  void Loop();
  // ContainerStats of running containers without a writable layer yet (a few a round).
  void AskNewLayersLocked();
  // The runtime's container filesystem (ImageFsInfo), for layers reported without one.
  std::string ContainerFilesystemLocked();
  // One list round by phase: the socket, the channel, Version (once per connection), the
  // lists, ContainerStatus for containers new to us, and the map when anything changed.
  Status RefreshLocked();
  // The socket to use; none (and the state absent) while no runtime socket exists.
  StatusOr<std::string> ResolveSocketLocked();
  void ConnectLocked(const std::string& path);
  Status VersionLocked(const std::string& path);
  Status ListLocked(const std::string& path);
  Status AskNewContainersLocked(const std::string& path);
  void PublishIfChangedLocked();
  // A failed call: the runtime is down (Version is asked again on the next round).
  Status CallFailedLocked(const std::string& path, const char* call, const std::string& detail);
  Status RefreshStatsLocked();
  void PublishLocked();
  void SetState(RuntimeState s, const std::string& endpoint, const std::string& error);

  RuntimeClientOptions options_;
  std::mutex refresh_mu_;       // serialises rounds
  std::unique_ptr<Conn> conn_;  // guarded by refresh_mu_
  // ContainerStatus answers by container id, kept across rounds (guarded by refresh_mu_).
  struct Known {
    int64_t started_at = 0;
    std::string image, image_ref;
    ContainerMetadata::MemoryResources memory;
  };
  std::unordered_map<std::string, Known> known_;
  std::string last_fingerprint_;  // guarded by refresh_mu_
  // The last lists and writable layers (guarded by refresh_mu_): the map is rebuilt from
  // them when either changes.
  struct Lists;
  std::unique_ptr<Lists> lists_;
  std::unordered_map<std::string, ContainerMetadata::WritableLayer> layers_;
  std::unordered_set<std::string> layer_asked_;  // guarded by refresh_mu_: ContainerStats asked once

  mutable std::mutex mu_;
  std::shared_ptr<const MetadataMap> current_;  // guarded by mu_
  RuntimeClientStatus status_;                  // guarded by mu_
  std::atomic<uint64_t> changes_{0};
  uint64_t covered_change_ = 0;  // guarded by mu_: the last change a published round covers
  int64_t covered_at_ns_ = 0;    // guarded by mu_: when that round published
  std::condition_variable covered_cv_;
  // Guarded by mu_: the ids CoverUnknown asked a round for, and that round's change.
  std::unordered_map<std::string, uint64_t> unknown_asked_;

  class ActiveCall;
  std::mutex call_mu_;
  grpc::ClientContext* call_ = nullptr;  // guarded by call_mu_
  bool cancelled_ = false;               // guarded by call_mu_: set by Stop()

  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  bool stop_ = false;  // guarded by loop_mu_
  std::thread thread_;
};

}  // namespace statlet
