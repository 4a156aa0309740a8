// What statlet knows about one image pull at one moment, in plain C++ types: the gRPC
// edge (image_service.cc), the per-node view, the metrics and `statlet pull` all read
// these; none of them sees protobuf or containerd.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace statlet::pulls {

using Clock = std::chrono::steady_clock;

enum class LayerStage : uint8_t {
  kWaiting,      // not started
  kDownloading,  // an ingest is open for it
  kDownloaded,   // committed by this pull
  kPresent,      // on the node before this pull: counted as done
};
const char* LayerStageName(LayerStage s);
inline bool LayerDone(LayerStage s) { return s == LayerStage::kDownloaded || s == LayerStage::kPresent; }

struct LayerState {
  std::string digest;   // "sha256:<hex>"
  uint64_t size = 0;    // from the manifest
  uint64_t offset = 0;  // bytes received; never decreases in reports
  LayerStage stage = LayerStage::kWaiting;
};

// The pod a pull was made for, from the request's sandbox_config (runtime.v1
// PodSandboxMetadata): what the kubelet sends with every PullImage of a pod's image.
struct PodRef {
  std::string namespace_;
  std::string name;
  std::string uid;
  bool operator==(const PodRef&) const = default;
};
// A pull made for many pods names the first few: the view's entry stays bounded.
inline constexpr size_t kMaxPodsPerPull = 16;

enum class PullPhase : uint8_t {
  kResolving,    // the manifest is not known yet
  kDownloading,  // some layer is not done
  kUnpacking,    // every layer is done; the runtime has not answered yet
  kSucceeded,
  kFailed,     // the runtime answered with an error
  kStalled,    // no byte moved for the no-progress timeout: cancelled
  kCancelled,  // every client left and the pull was cancelled, or statlet stopped
};
const char* PullPhaseName(PullPhase p);
inline bool PullFinished(PullPhase p) { return p >= PullPhase::kSucceeded; }

struct PullView {
  std::string image;  // normalized reference
  PullPhase phase = PullPhase::kResolving;
  std::optional<uint64_t> total;   // the manifest's layer sizes; empty until it is known
  uint64_t offset = 0;             // bytes of the layers received (done layers count in full)
  std::vector<LayerState> layers;  // manifest order
  Clock::time_point started;
  int64_t started_unix_ns = 0;
  int64_t finished_unix_ns = 0;     // 0 while running
  Clock::time_point last_progress;  // the last moment bytes were seen moving (or the start)
  double bytes_per_second = 0;      // over the last few seconds
  std::optional<double> eta_seconds;
  std::string image_ref;  // the runtime's answer, once succeeded
  std::string reason;     // why it failed, stalled or was cancelled
  int subscribers = 0;
  uint64_t joins = 0;        // clients that joined this pull after the first
  std::vector<PodRef> pods;  // the pods it was pulled for, first asked first (at most kMaxPodsPerPull)
  uint64_t version = 0;      // grows with every change
};
using PullViewPtr = std::shared_ptr<const PullView>;

// How one client's call ended. `grpc_code` is a grpc::StatusCode value (the edge maps it).
struct PullOutcome {
  enum Kind : uint8_t { kSucceeded, kFailed, kStalled, kCancelled } kind = kSucceeded;
  int grpc_code = 0;
  std::string message;
};

// The layers that have not finished, named for a stall message:
// "sha256:ab12… at 12.0 MiB of 64.0 MiB".
std::string DescribeUnfinishedLayers(const PullView& view);

}  // namespace statlet::pulls
