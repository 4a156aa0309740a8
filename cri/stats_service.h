// CriStatsService: runtime.v1 RuntimeService's stats calls over statlet's snapshots.
// Every RPC reads one snapshot through SnapshotSource::Get(max_age), so concurrent callers
// share a collection (single-flight lives in the source). Methods not overridden here
// answer UNIMPLEMENTED (gRPC's default for a declared but unimplemented method) — except in
// proxy mode, where only the stats calls are registered (the router sends no other call
// here: cri/proxy_router.h) and every other method is left to the server's generic
// service, which answers UNIMPLEMENTED.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

#include "metrics/snapshot_samples.h"
#include "proto/api.grpc.pb.h"
#include "runtime/runtime_client.h"
#include "snapshot/snapshot_source.h"

namespace statlet::cri {

struct CriServiceOptions {
  // Snapshot reuse: a collection younger than this answers the call.
  std::chrono::nanoseconds max_age = std::chrono::seconds(1);
  // Items per message of the Stream* calls.
  size_t stream_chunk = 100;
  // A unary ListPodSandboxMetrics answer larger than this is refused with
  // RESOURCE_EXHAUSTED naming the streaming call: the kubelet's CRI client rejects messages
  // over 16 MiB as an opaque error.
  size_t max_unary_metrics_bytes = size_t{16} << 20;
  // The value rules of ListPodSandboxMetrics (the network always on the pod).
  metrics::SampleRules rules;
  // Proxy mode: register the stats calls only (Version and the rest pass to the runtime).
  bool stats_calls_only = false;
  // The runtime client whose metadata names the snapshots' cgroups. A stats call that
  // finds a container cgroup the metadata does not name, and was not named by a round
  // since it was first seen, waits (at most freshness_wait) for a round and answers from
  // a collection that read it (RuntimeClient::CoverUnknown). Null: no waiting.
  RuntimeClient* runtime = nullptr;
  // Proxy mode: `runtime` sees the changes passed through statlet; a stats call first
  // waits (at most freshness_wait) for the metadata of every change noted before it began.
  bool wait_for_changes = false;
  std::chrono::milliseconds freshness_wait{2000};
};

// The names of the calls CriStatsService answers (the stats and metrics calls and their
// Stream* variants; Version is also answered outside proxy mode).
bool IsStatsCall(std::string_view method);

class CriStatsService final : public ::runtime::v1::RuntimeService::Service {
 public:
  using Ctx = ::grpc::ServerContext;
  CriStatsService(SnapshotSource* source, CriServiceOptions options);

  ::grpc::Status Version(Ctx*, const ::runtime::v1::VersionRequest*, ::runtime::v1::VersionResponse*) override;
  ::grpc::Status ContainerStats(Ctx*, const ::runtime::v1::ContainerStatsRequest*,
                                ::runtime::v1::ContainerStatsResponse*) override;
  ::grpc::Status ListContainerStats(Ctx*, const ::runtime::v1::ListContainerStatsRequest*,
                                    ::runtime::v1::ListContainerStatsResponse*) override;
  ::grpc::Status StreamContainerStats(Ctx*, const ::runtime::v1::StreamContainerStatsRequest*,
                                      ::grpc::ServerWriter<::runtime::v1::StreamContainerStatsResponse>*) override;
  ::grpc::Status PodSandboxStats(Ctx*, const ::runtime::v1::PodSandboxStatsRequest*,
                                 ::runtime::v1::PodSandboxStatsResponse*) override;
  ::grpc::Status ListPodSandboxStats(Ctx*, const ::runtime::v1::ListPodSandboxStatsRequest*,
                                     ::runtime::v1::ListPodSandboxStatsResponse*) override;
  ::grpc::Status StreamPodSandboxStats(Ctx*, const ::runtime::v1::StreamPodSandboxStatsRequest*,
                                       ::grpc::ServerWriter<::runtime::v1::StreamPodSandboxStatsResponse>*) override;
  ::grpc::Status ListMetricDescriptors(Ctx*, const ::runtime::v1::ListMetricDescriptorsRequest*,
                                       ::runtime::v1::ListMetricDescriptorsResponse*) override;
  ::grpc::Status ListPodSandboxMetrics(Ctx*, const ::runtime::v1::ListPodSandboxMetricsRequest*,
                                       ::runtime::v1::ListPodSandboxMetricsResponse*) override;
  ::grpc::Status StreamPodSandboxMetrics(
      Ctx*, const ::runtime::v1::StreamPodSandboxMetricsRequest*,
      ::grpc::ServerWriter<::runtime::v1::StreamPodSandboxMetricsResponse>*) override;

 private:
  // A snapshot for one call: no older than max_age, read after the metadata of the
  // container cgroups it holds (as far as the runtime lists them) and, with
  // wait_for_changes, of the changes noted so far.
  StatusOr<SnapshotPtr> LoadSnapshot(CollectParts parts);

  SnapshotSource* source_;
  CriServiceOptions options_;
};

}  // namespace statlet::cri
