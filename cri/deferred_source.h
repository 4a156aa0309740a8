// DeferredSource: a SnapshotSource that exists before the one it stands for. In proxy mode
// the CRI socket is up before the collector (eBPF programs, the first cgroup walk) is
// ready, so that the kubelet's runtime calls are passed from the start; a stats call that
// comes meanwhile waits for the real source, at most `wait`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "snapshot/snapshot_source.h"

namespace statlet::cri {

class DeferredSource final : public SnapshotSource {
 public:
  explicit DeferredSource(std::chrono::milliseconds wait = std::chrono::seconds(30)) : wait_(wait) {}

  // Once; `source` must outlive every Get.
  void Bind(SnapshotSource* source) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      source_ = source;
    }
    cv_.notify_all();
  }

  using SnapshotSource::Get;
  StatusOr<SnapshotPtr> Get(std::chrono::nanoseconds max_age, CollectParts parts) override {
    SnapshotSource* source = Wait();
    if (source == nullptr) return Unavailable("statlet is still starting its collector");
    return source->Get(max_age, parts);
  }
  SamplerStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return source_ != nullptr ? source_->stats() : SamplerStats{};
  }

 private:
  SnapshotSource* Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait_, [&] { return source_ != nullptr; });
    return source_;
  }

  const std::chrono::milliseconds wait_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  SnapshotSource* source_ = nullptr;  // guarded by mu_
};

}  // namespace statlet::cri
