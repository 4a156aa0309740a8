// ContainerdPeer over tests/e2e's stage: containerd_harness.sh starts a private containerd
// (its own network namespace, root, state and sockets under a scratch directory) and
// CriDriver plays the kubelet. The stage's statlet agent runs beside it with its periodic
// ListContainerStats to containerd off, so containerd answers the bench's calls only.
#include "bench/cri/containerd_peer.h"

#include <chrono>
#include <string>
#include <vector>

#include "bench/support/read_floor.h"
#include "tests/e2e/e2e_stage.h"

namespace statlet::bench {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t CpuNsOf(const std::vector<pid_t>& pids) {
  uint64_t sum = 0;
  for (pid_t p : pids) sum += e2e::ProcessCpuNs(p);
  return sum;
}

class StagePeer final : public ContainerdPeer {
 public:
  explicit StagePeer(std::unique_ptr<e2e::E2eStage> stage) : stage_(std::move(stage)) {}
  ~StagePeer() override { Stop(); }

  Status Grow(size_t containers, size_t per_pod) override {
    while (running_ < containers) {
      if (running_ % per_pod == 0) {
        auto pod = stage_->driver().RunPod({"bench-" + std::to_string(pods_.size()), "cri-bench", {}});
        if (!pod.ok()) return pod.status();
        pods_.push_back(*pod);
      }
      auto id = stage_->driver().StartContainer(
          pods_.back(), {"idle-" + std::to_string(running_), {"sh", "-c", "exec sleep 2147483647"}});
      if (!id.ok()) return id.status();
      ++running_;
    }
    return Status::Ok();
  }

  StatusOr<PeerFigures> Measure(PeerCall call, int calls) override {
    PeerFigures f;
    std::vector<double> ms;
    // The processes that answer: containerd and every shim (one per pod).
    const std::vector<pid_t> pids = stage_->ContainerdPids();
    uint64_t cpu0 = 0;
    for (int i = 0; i < calls + 2; ++i) {  // two warm-up calls: connections, first-call rate state
      if (i == 2) cpu0 = CpuNsOf(pids);
      auto ctx = e2e::CallContext(std::chrono::seconds(120));
      grpc::Status s;
      size_t bytes = 0, items = 0;
      auto t0 = Clock::now();
      if (call == PeerCall::kListContainerStats) {
        runtime::v1::ListContainerStatsResponse resp;
        s = stage_->containerd()->ListContainerStats(ctx.get(), {}, &resp);
        bytes = resp.ByteSizeLong();
        items = static_cast<size_t>(resp.stats_size());
      } else {
        runtime::v1::ListPodSandboxStatsResponse resp;
        s = stage_->containerd()->ListPodSandboxStats(ctx.get(), {}, &resp);
        bytes = resp.ByteSizeLong();
        items = static_cast<size_t>(resp.stats_size());
      }
      auto t1 = Clock::now();
      if (!s.ok()) return Unavailable("containerd: " + s.error_message());
      if (i < 2) continue;
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      f.bytes = bytes;
      f.items = items;
    }
    f.cpu_ms = static_cast<double>(CpuNsOf(pids) - cpu0) / 1e6 / calls;
    f.p50_ms = Percentile(ms, 0.5);
    f.p99_ms = Percentile(ms, 0.99);
    return f;
  }

  void Stop() override {
    if (!stage_) return;
    for (const e2e::Pod& p : pods_) (void)stage_->driver().RemovePod(p);
    pods_.clear();
    stage_->Stop();
    stage_.reset();
  }

 private:
  std::unique_ptr<e2e::E2eStage> stage_;
  std::vector<e2e::Pod> pods_;
  size_t running_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<ContainerdPeer>> ContainerdPeer::Start() {
  e2e::StageOptions o;
  o.agent_binary = STATLET_E2E_AGENT;
  o.harness_script = STATLET_E2E_HARNESS;
  o.agent_flags = {"--runtime.stats-period=0s"};
  auto stage = e2e::E2eStage::Start(o);
  if (!stage.ok()) return stage.status();
  return std::unique_ptr<ContainerdPeer>(new StagePeer(std::move(stage).value()));
}

}  // namespace statlet::bench
