#include "cri/stats_service.h"

#include <malloc.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>
#include <vector>

#include "base/grpc_status.h"
#include "base/monotonic_clock.h"
#include "cri/pod_metrics.h"
#include "cri/snapshot_to_cri.h"
#include "cri/stats_selection.h"
#include "proto/cri_services.h"

namespace statlet::cri {
namespace v1 = ::runtime::v1;
namespace {

// One snapshot and its CRI view, kept alive together for one call.
struct Frame {
  SnapshotPtr snapshot;
  CriView view;
};

// A large answer (ListPodSandboxMetrics at 1,000 containers: ~55,000 Metric messages, each
// with its label strings) leaves tens of MB of small freed chunks in malloc's heap once gRPC
// has sent and destroyed it; glibc keeps them resident. The next call hands them back to the
// kernel first (malloc_trim walks the heap: ~1 ms, only after a large answer).
std::atomic<bool> g_trim_pending{false};
constexpr size_t kLargeAnswerMetrics = 5000;

void TrimAfterLargeAnswer() {
  if (g_trim_pending.exchange(false, std::memory_order_relaxed)) malloc_trim(0);
}

// The stats calls carry no fd or socket counts and none of the detail files' values (see
// CollectParts): they never wait for the process scan nor read those files. The container
// calls read no file of a pod, a pod's sandbox or any other cgroup that is not a container.
constexpr CollectParts kContainerStatsParts = CollectParts::None();
constexpr CollectParts kPodStatsParts = CollectParts(CollectParts::kNonContainerFiles | CollectParts::kSandboxFiles);
// ListPodSandboxMetrics carries container_file_descriptors, _sockets and _ulimits_soft.
constexpr CollectParts kMetricsParts = CollectParts::All();

StatusOr<Frame> Load(StatusOr<SnapshotPtr> snap) {
  if (!snap.ok()) return Unavailable("collecting stats failed: " + snap.status().message());
  Frame f;
  f.snapshot = std::move(snap).value();
  f.view = BuildCriView(*f.snapshot);
  return f;
}

ContainerFilter FromProto(const v1::ContainerStatsFilter& f) {
  return {f.id(), f.pod_sandbox_id(), {f.label_selector().begin(), f.label_selector().end()}};
}
PodFilter FromProto(const v1::PodSandboxStatsFilter& f) {
  return {f.id(), {f.label_selector().begin(), f.label_selector().end()}};
}

template <typename Entry, typename Filter>
std::vector<const Entry*> Select(const CriView& view, const std::vector<Entry>& all, const Filter& f) {
  std::vector<const Entry*> out;
  for (const auto& e : all) {
    if (Matches(view, e, f)) out.push_back(&e);
  }
  return out;
}

// Writes `items` in messages of at most `chunk` items; none when there are no items.
template <typename Resp, typename Entry, typename Fill, typename Add>
grpc::Status StreamChunks(grpc::ServerWriter<Resp>* writer, const std::vector<const Entry*>& items, size_t chunk,
                          Fill&& fill, Add&& add) {
  if (chunk == 0) chunk = 1;
  for (size_t i = 0; i < items.size(); i += chunk) {
    Resp resp;
    for (size_t j = i; j < items.size() && j < i + chunk; ++j) fill(*items[j], add(resp));
    if (!writer->Write(resp)) return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
  }
  return grpc::Status::OK;
}

// The container cgroups of a snapshot that the runtime's metadata does not name, while the
// runtime answers (without it every id comes from cgroup paths).
std::vector<std::string> UnnamedContainers(const Snapshot& snap) {
  std::vector<std::string> ids;
  if (!snap.runtime || !snap.runtime->up) return ids;
  for (const auto& c : snap.cgroups) {
    if (c.id.kind == CgroupKind::kContainer && c.id.meta == nullptr && !c.exit && !c.id.container_id.empty()) {
      ids.push_back(c.id.container_id);
    }
  }
  return ids;
}

}  // namespace

bool IsStatsCall(std::string_view method) {
  static constexpr std::string_view kStats[] = {
      "ContainerStats",        "ListContainerStats",    "StreamContainerStats",
      "PodSandboxStats",       "ListPodSandboxStats",   "StreamPodSandboxStats",
      "ListMetricDescriptors", "ListPodSandboxMetrics", "StreamPodSandboxMetrics",
  };
  return std::find(std::begin(kStats), std::end(kStats), method) != std::end(kStats);
}

CriStatsService::CriStatsService(SnapshotSource* source, CriServiceOptions options)
    : source_(source), options_(options) {
  if (!options_.stats_calls_only) return;
  // Registered methods take precedence over the generic service: every method that is not
  // a stats call is unregistered (the descriptor's order is the generated service's).
  const google::protobuf::ServiceDescriptor& service = proto::CriRuntimeService();
  for (int i = 0; i < service.method_count(); ++i) {
    if (!IsStatsCall(service.method(i)->name())) MarkMethodGeneric(i);
  }
}

StatusOr<SnapshotPtr> CriStatsService::LoadSnapshot(CollectParts parts) {
  TrimAfterLargeAnswer();
  std::chrono::nanoseconds max_age = options_.max_age;
  RuntimeClient* rc = options_.runtime;
  if (rc != nullptr && options_.wait_for_changes) {
    // The runtime lists what the caller has just created or removed through statlet: the
    // answer must name it as the runtime does (ids, pods of containers), so it waits for
    // a round of the runtime client that began after the last change, and for a
    // collection younger than that round's metadata.
    if (const uint64_t change = rc->changes(); change != 0) {
      if (std::optional<int64_t> covered = rc->WaitCovering(change, options_.freshness_wait)) {
        max_age = std::min(max_age, std::chrono::nanoseconds(std::max<int64_t>(MonotonicNowNs() - *covered, 0)));
      }
    }
  }
  StatusOr<SnapshotPtr> snap = source_->Get(max_age, parts);
  if (rc == nullptr || !snap.ok()) return snap;
  // A container cgroup the metadata does not name is new to statlet (the runtime client's
  // periodic round has not listed it yet: a sandbox or a container just started, which
  // only the runtime tells apart) or not the runtime's. The answer is read once more after
  // a round that began when it was first seen; the CRI view leaves out those still unnamed
  // (cri/stats_selection.h).
  if (std::optional<int64_t> covered = rc->CoverUnknown(UnnamedContainers(**snap), options_.freshness_wait)) {
    if (*covered > (*snap)->monotonic_ns) {
      snap = source_->Get(std::chrono::nanoseconds(std::max<int64_t>(MonotonicNowNs() - *covered, 0)), parts);
    }
  }
  return snap;
}

grpc::Status CriStatsService::Version(Ctx*, const v1::VersionRequest*, v1::VersionResponse* resp) {
  resp->set_version("0.1.0");  // the kubelet runtime API version every runtime reports
  resp->set_runtime_name("statlet");
  resp->set_runtime_version(STATLET_VERSION);
  resp->set_runtime_api_version("v1");
  return grpc::Status::OK;
}

grpc::Status CriStatsService::ContainerStats(Ctx*, const v1::ContainerStatsRequest* req,
                                             v1::ContainerStatsResponse* resp) {
  if (req->container_id().empty()) return ToGrpc(InvalidArgument("container_id is empty"));
  auto frame = Load(LoadSnapshot(kContainerStatsParts));
  if (!frame.ok()) return ToGrpc(frame.status());
  auto c = FindContainer(frame->view, req->container_id());
  if (!c.ok()) return ToGrpc(c.status());
  FillContainerStats(frame->view, **c, resp->mutable_stats());
  return grpc::Status::OK;
}

grpc::Status CriStatsService::ListContainerStats(Ctx*, const v1::ListContainerStatsRequest* req,
                                                 v1::ListContainerStatsResponse* resp) {
  ContainerFilter filter = FromProto(req->filter());
  if (statlet::Status s = ValidateLabelSelector(filter.label_selector); !s.ok()) return ToGrpc(s);
  auto frame = Load(LoadSnapshot(kContainerStatsParts));
  if (!frame.ok()) return ToGrpc(frame.status());
  for (const ContainerEntry* c : Select(frame->view, frame->view.containers, filter)) {
    FillContainerStats(frame->view, *c, resp->add_stats());
  }
  return grpc::Status::OK;
}

grpc::Status CriStatsService::StreamContainerStats(Ctx*, const v1::StreamContainerStatsRequest* req,
                                                   grpc::ServerWriter<v1::StreamContainerStatsResponse>* writer) {
  ContainerFilter filter = FromProto(req->filter());
  if (statlet::Status s = ValidateLabelSelector(filter.label_selector); !s.ok()) return ToGrpc(s);
  auto frame = Load(LoadSnapshot(kContainerStatsParts));
  if (!frame.ok()) return ToGrpc(frame.status());
  const CriView& view = frame->view;
  return StreamChunks(
      writer, Select(view, view.containers, filter), options_.stream_chunk,
      [&](const ContainerEntry& c, v1::ContainerStats* out) { FillContainerStats(view, c, out); },
      [](v1::StreamContainerStatsResponse& r) { return r.add_container_stats(); });
}

grpc::Status CriStatsService::PodSandboxStats(Ctx*, const v1::PodSandboxStatsRequest* req,
                                              v1::PodSandboxStatsResponse* resp) {
  if (req->pod_sandbox_id().empty()) return ToGrpc(InvalidArgument("pod_sandbox_id is empty"));
  auto frame = Load(LoadSnapshot(kPodStatsParts));
  if (!frame.ok()) return ToGrpc(frame.status());
  auto p = FindPod(frame->view, req->pod_sandbox_id());
  if (!p.ok()) return ToGrpc(p.status());
  FillPodSandboxStats(frame->view, **p, resp->mutable_stats());
  return grpc::Status::OK;
}

grpc::Status CriStatsService::ListPodSandboxStats(Ctx*, const v1::ListPodSandboxStatsRequest* req,
                                                  v1::ListPodSandboxStatsResponse* resp) {
  PodFilter filter = FromProto(req->filter());
  if (statlet::Status s = ValidateLabelSelector(filter.label_selector); !s.ok()) return ToGrpc(s);
  auto frame = Load(LoadSnapshot(kPodStatsParts));
  if (!frame.ok()) return ToGrpc(frame.status());
  for (const PodEntry* p : Select(frame->view, frame->view.pods, filter)) {
    FillPodSandboxStats(frame->view, *p, resp->add_stats());
  }
  return grpc::Status::OK;
}

grpc::Status CriStatsService::StreamPodSandboxStats(Ctx*, const v1::StreamPodSandboxStatsRequest* req,
                                                    grpc::ServerWriter<v1::StreamPodSandboxStatsResponse>* writer) {
  PodFilter filter = FromProto(req->filter());
  if (statlet::Status s = ValidateLabelSelector(filter.label_selector); !s.ok()) return ToGrpc(s);
  auto frame = Load(LoadSnapshot(kPodStatsParts));
  if (!frame.ok()) return ToGrpc(frame.status());
  const CriView& view = frame->view;
  return StreamChunks(
      writer, Select(view, view.pods, filter), options_.stream_chunk,
      [&](const PodEntry& p, v1::PodSandboxStats* out) { FillPodSandboxStats(view, p, out); },
      [](v1::StreamPodSandboxStatsResponse& r) { return r.add_pod_sandbox_stats(); });
}

grpc::Status CriStatsService::ListMetricDescriptors(Ctx*, const v1::ListMetricDescriptorsRequest*,
                                                    v1::ListMetricDescriptorsResponse* resp) {
  FillMetricDescriptors(resp, options_.rules.selection);
  return grpc::Status::OK;
}

grpc::Status CriStatsService::ListPodSandboxMetrics(Ctx*, const v1::ListPodSandboxMetricsRequest*,
                                                    v1::ListPodSandboxMetricsResponse* resp) {
  auto frame = Load(LoadSnapshot(kMetricsParts));
  if (!frame.ok()) return ToGrpc(frame.status());
  metrics::SnapshotSamples samples(CriSampleRules(options_.rules));
  samples.Bind(*frame->view.snapshot);
  size_t metrics = 0;
  for (const auto& p : frame->view.pods) {
    v1::PodSandboxMetrics* out = resp->add_pod_metrics();
    FillPodSandboxMetrics(frame->view, p, samples, out);
    metrics += static_cast<size_t>(out->metrics_size());
    for (const auto& c : out->container_metrics()) metrics += static_cast<size_t>(c.metrics_size());
  }
  if (metrics >= kLargeAnswerMetrics) g_trim_pending.store(true, std::memory_order_relaxed);
  if (const size_t bytes = resp->ByteSizeLong(); bytes > options_.max_unary_metrics_bytes) {
    resp->Clear();
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "the ListPodSandboxMetrics answer would be " + std::to_string(bytes) + " bytes (" +
                            std::to_string(frame->view.pods.size()) + " pods), over the " +
                            std::to_string(options_.max_unary_metrics_bytes) +
                            " bytes a CRI client accepts in one message; call StreamPodSandboxMetrics");
  }
  return grpc::Status::OK;
}

grpc::Status CriStatsService::StreamPodSandboxMetrics(Ctx*, const v1::StreamPodSandboxMetricsRequest*,
                                                      grpc::ServerWriter<v1::StreamPodSandboxMetricsResponse>* writer) {
  auto frame = Load(LoadSnapshot(kMetricsParts));
  if (!frame.ok()) return ToGrpc(frame.status());
  const CriView& view = frame->view;
  metrics::SnapshotSamples samples(CriSampleRules(options_.rules));
  samples.Bind(*view.snapshot);
  std::vector<const PodEntry*> pods;
  for (const auto& p : view.pods) pods.push_back(&p);
  return StreamChunks(
      writer, pods, options_.stream_chunk,
      [&](const PodEntry& p, v1::PodSandboxMetrics* out) { FillPodSandboxMetrics(view, p, samples, out); },
      [](v1::StreamPodSandboxMetricsResponse& r) { return r.add_pod_sandbox_metrics(); });
}

}  // namespace statlet::cri
