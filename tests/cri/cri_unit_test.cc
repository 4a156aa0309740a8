// In-process checks of the CRI edge: the metric table, socket path handling, and what the
// server tells its call observer.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <set>
#include <tuple>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "base/unix_socket.h"
#include "cri/cri_server.h"
#include "cri/metric_table.h"
#include "cri/pod_metrics.h"
#include "cri/snapshot_to_cri.h"
#include "proto/api.grpc.pb.h"
#include "proto/image_service.grpc.pb.h"
#include "tests/cri/server_process.h"
#include "tests/support/fixed_snapshot_source.h"
#include "tests/support/snapshot_builder.h"

namespace statlet::cri {
namespace {

TEST(MetricTable, EveryFamilyHasTheRuntimesKeysThenItsOwn) {
  std::set<std::string> names;
  for (const auto& f : CriMetricFamilies()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    // containerd 2.3's key set, in its order; no `name` (CRI-O dropped it to match).
    ASSERT_GE(f.label_keys.size(), kSharedLabelCount) << f.name;
    EXPECT_EQ(std::vector<std::string>(f.label_keys.begin(), f.label_keys.begin() + kSharedLabelCount),
              (std::vector<std::string>{"pod", "namespace", "container", "id", "image"}))
        << f.name;
    EXPECT_EQ(std::count(f.label_keys.begin(), f.label_keys.end(), "name"), 0) << f.name;
    EXPECT_EQ(f.label_keys.size(), kSharedLabelCount + Family(f.id).labels.size()) << f.name;
    EXPECT_EQ(f.seconds, f.name.find("_seconds") != std::string::npos) << f.name;
  }
  EXPECT_EQ(NanosecondsName("container_cpu_usage_seconds_total"), "container_cpu_usage_nanoseconds_total");
  EXPECT_EQ(NanosecondsName("container_start_time_seconds"), "container_start_time_nanoseconds");
  EXPECT_NE(CriFamily(FamilyId::kContainerCpuUsageSecondsTotal), nullptr);
  EXPECT_EQ(CriFamily(FamilyId::kStatletPidsCurrent), nullptr);  // statlet's own: /metrics only
}

TEST(PodMetrics, SeriesOfAPodWithoutMetadata) {
  Snapshot s = testing::FixtureSnapshot();
  CriView view = BuildCriView(s);
  const PodEntry* b = nullptr;
  for (const auto& p : view.pods) {
    if (p.id == testing::kPodBUid) b = &p;
  }
  ASSERT_NE(b, nullptr);
  ::runtime::v1::PodSandboxMetrics m;
  metrics::SnapshotSamples samples(CriSampleRules({}));
  samples.Bind(s);
  FillPodSandboxMetrics(view, *b, samples, &m);
  ASSERT_EQ(m.container_metrics_size(), 1);
  for (const auto& metric : m.container_metrics(0).metrics()) {
    // No quota on this container: no CFS series, no quota.
    EXPECT_NE(metric.name(), "container_cpu_cfs_periods_total");
    EXPECT_NE(metric.name(), "container_spec_cpu_quota");
    if (metric.name() == "container_spec_memory_limit_bytes") {
      EXPECT_EQ(metric.value().value(), 0u);
    }
  }
  // The pod level: container="" and image="" (the kubelet's cAdvisor labels a pod cgroup so);
  // the pod's network, loopback left out.
  ASSERT_GT(m.metrics_size(), 0);
  for (const auto& metric : m.metrics()) {
    ASSERT_GE(metric.label_values_size(), 5) << metric.name();
    EXPECT_EQ(metric.label_values(2), "") << metric.name();
    EXPECT_EQ(metric.label_values(3), b->id) << metric.name();
    EXPECT_EQ(metric.label_values(4), "") << metric.name();
    if (metric.name().rfind("container_network_", 0) == 0) {
      EXPECT_NE(metric.label_values(5), "lo");
    }
  }
}

// A pod cgroup the runtime does not know, with no process left (a removed pod whose cgroup
// lingers), is not listed while the runtime answers, nor its containers; without the
// runtime statlet cannot tell and lists it.
TEST(CriView, LeftoverPodsAreNotListedWhileTheRuntimeAnswers) {
  Snapshot s = testing::FixtureSnapshot();
  const std::string leftover_uid = "77777777-0000-0000-0000-000000000000";
  const std::string pod_path = "/kubepods/besteffort/pod" + leftover_uid;
  CgroupStats pod;
  pod.id.cgroup_path = pod_path;
  pod.id.kind = CgroupKind::kPod;
  pod.id.pod_uid = leftover_uid;
  CgroupStats ctr;
  ctr.id.cgroup_path = pod_path + "/" + std::string(64, '7');
  ctr.id.kind = CgroupKind::kContainer;
  ctr.id.container_id = std::string(64, '7');
  ctr.id.pod_uid = leftover_uid;
  ctr.id.parent_path = pod_path;
  s.cgroups.push_back(pod);
  s.cgroups.push_back(ctr);
  std::sort(s.cgroups.begin(), s.cgroups.end(),
            [](const CgroupStats& a, const CgroupStats& b) { return a.id.cgroup_path < b.id.cgroup_path; });
  auto listed = [](const CriView& v, const std::string& uid) {
    int pods = 0, containers = 0;
    for (const auto& p : v.pods) pods += p.cgroup->id.pod_uid == uid;
    for (const auto& c : v.containers) containers += c.cgroup->id.pod_uid == uid;
    return std::make_pair(pods, containers);
  };

  EXPECT_EQ(listed(BuildCriView(s), leftover_uid), std::make_pair(1, 1)) << "no runtime: listed";
  s.runtime = SourceState{"unix:///run/containerd/containerd.sock", true, "containerd 1.6.20", 0};
  CriView view = BuildCriView(s);
  EXPECT_EQ(listed(view, leftover_uid), std::make_pair(0, 0));
  // The others stay, with their containers still pointing at their own pods (pod B's one
  // container has no metadata: the runtime does not name it, so it is no CRI container).
  EXPECT_EQ(listed(view, testing::kPodAUid), std::make_pair(1, 2));
  EXPECT_EQ(listed(view, testing::kPodBUid), std::make_pair(1, 0));
  for (const auto& c : view.containers) {
    if (c.pod_index >= 0) {
      EXPECT_EQ(view.pods[c.pod_index].cgroup->id.pod_uid, c.cgroup->id.pod_uid);
    }
  }
  // A process in it again: the pod is listed again, not the container the runtime does
  // not name.
  for (auto& c : s.cgroups) {
    if (c.id.pod_uid == leftover_uid) c.populated = true;
  }
  EXPECT_EQ(listed(BuildCriView(s), leftover_uid), std::make_pair(1, 0));
}

// While the runtime answers, a running container cgroup it does not name (a sandbox it is
// still starting, a cgroup of another manager) is no CRI container; the runtime's own
// sandbox is never one. Without the runtime statlet cannot tell and lists it.
TEST(CriView, OnlyTheContainersTheRuntimeNamesAreListedWhileItAnswers) {
  Snapshot s = testing::FixtureSnapshot();
  const std::string unnamed_id(64, '9');
  const CgroupStats* named = nullptr;
  for (const auto& c : s.cgroups) {
    if (c.id.kind == CgroupKind::kContainer && c.id.meta != nullptr && !c.id.meta->is_sandbox) named = &c;
  }
  ASSERT_NE(named, nullptr);
  CgroupStats unnamed = *named;
  unnamed.id.cgroup_path = named->id.parent_path + "/" + unnamed_id;
  unnamed.id.container_id = unnamed_id;
  unnamed.id.meta = nullptr;
  unnamed.populated = true;
  const std::string named_id = named->id.meta->container_id;
  s.cgroups.push_back(std::move(unnamed));
  std::sort(s.cgroups.begin(), s.cgroups.end(),
            [](const CgroupStats& a, const CgroupStats& b) { return a.id.cgroup_path < b.id.cgroup_path; });
  auto ids = [](const Snapshot& snap) {
    std::set<std::string> out;
    for (const auto& c : BuildCriView(snap).containers) out.insert(c.id);
    return out;
  };

  EXPECT_EQ(ids(s).count(unnamed_id), 1u) << "no runtime: listed";
  s.runtime = SourceState{"unix:///run/containerd/containerd.sock", true, "containerd 1.6.20", 0};
  const std::set<std::string> listed = ids(s);
  EXPECT_EQ(listed.count(unnamed_id), 0u);
  EXPECT_EQ(listed.count(named_id), 1u);
  for (const auto& c : s.cgroups) {
    if (c.id.meta != nullptr && c.id.meta->is_sandbox) {
      EXPECT_EQ(listed.count(c.id.meta->container_id), 0u);
    }
  }
}

// A container kept only by its exit record answers on CRI while the runtime lists it (as
// exited); once the runtime removed it, it is no CRI container. Without the runtime statlet
// cannot tell and lists it.
TEST(CriView, AnExitRecordIsListedWhileTheRuntimeListsItsContainer) {
  Snapshot s = testing::FixtureSnapshot();
  const CgroupStats* running = nullptr;
  for (const auto& c : s.cgroups) {
    if (c.id.kind == CgroupKind::kContainer && c.id.meta != nullptr && !c.id.meta->is_sandbox) {
      running = &c;
      break;
    }
  }
  ASSERT_NE(running, nullptr);
  const std::string gone_id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  CgroupStats gone = *running;
  gone.id.cgroup_path = running->id.parent_path + "/" + gone_id;
  gone.id.container_id = gone_id;
  gone.id.meta = nullptr;
  gone.populated = false;
  gone.exit = ExitInfo{};
  std::shared_ptr<ContainerMetadata> exited = std::make_shared<ContainerMetadata>(*running->id.meta);
  exited->container_id = gone_id;
  exited->container_name = "done";
  s.cgroups.push_back(std::move(gone));
  std::sort(s.cgroups.begin(), s.cgroups.end(),
            [](const CgroupStats& a, const CgroupStats& b) { return a.id.cgroup_path < b.id.cgroup_path; });
  auto listed = [&](const Snapshot& snap) {
    CriView v = BuildCriView(snap);
    for (const auto& c : v.containers) {
      if (c.id == gone_id) return true;
    }
    return false;
  };

  EXPECT_TRUE(listed(s)) << "no runtime: listed";
  s.runtime = SourceState{"unix:///run/containerd/containerd.sock", true, "containerd 1.6.20", 0};
  EXPECT_FALSE(listed(s)) << "the record of a container the runtime removed was listed";
  for (auto& c : s.cgroups) {
    if (c.id.container_id == gone_id) c.id.meta = exited;
  }
  EXPECT_TRUE(listed(s)) << "a container the runtime lists as exited was not listed";
}

TEST(SocketPath, ParsesUnixEndpoints) {
  EXPECT_EQ(*ParseUnixEndpoint("unix:///run/x.sock"), "/run/x.sock");
  EXPECT_EQ(*ParseUnixEndpoint("unix:/run/x.sock"), "/run/x.sock");
  EXPECT_EQ(*ParseUnixEndpoint("/run/x.sock"), "/run/x.sock");
  EXPECT_EQ(ParseUnixEndpoint("tcp://1.2.3.4:5").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUnixEndpoint("unix://relative").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUnixEndpoint("unix://" + std::string(200, 'a')).status().code(), StatusCode::kInvalidArgument);
}

int BindAt(const std::string& path, bool listen_too) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  if (listen_too) {
    EXPECT_EQ(listen(fd, 1), 0);
  }
  return fd;
}

TEST(SocketPath, ReplacesOnlyStaleSockets) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/sub/dir/cri.sock";
  ASSERT_TRUE(PrepareListenPath(path).ok());  // creates the parents
  struct stat st;
  ASSERT_EQ(stat((dir.path() + "/sub/dir").c_str(), &st), 0);

  int live = BindAt(path, true);
  Status s = PrepareListenPath(path);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_EQ(stat(path.c_str(), &st), 0);  // untouched
  close(live);                            // the socket file stays behind, nobody listens: stale
  EXPECT_TRUE(PrepareListenPath(path).ok());
  EXPECT_NE(stat(path.c_str(), &st), 0);

  std::ofstream(path) << "not a socket";
  EXPECT_EQ(PrepareListenPath(path).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(stat(path.c_str(), &st), 0);
}

class CallRecorder final : public metrics::CallObserver {
 public:
  void ObserveCall(std::string_view method, std::string_view code, double seconds) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.emplace_back(std::string(method), std::string(code), seconds);
  }
  std::vector<std::tuple<std::string, std::string, double>> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::vector<std::tuple<std::string, std::string, double>> calls_;
};

// Every call on the socket reaches the observer once it is answered, named by service and
// method, with its status: also the image calls the server answers UNIMPLEMENTED.
TEST(CallObserver, IsToldEveryCallWithItsStatus) {
  testing::ScratchDir dir;
  testing::FixedSnapshotSource source(testing::FixtureSnapshot());
  CallRecorder recorder;
  CriServerOptions o;
  o.listen_path = dir.path() + "/cri.sock";
  o.call_observer = &recorder;
  auto server = CriServer::Start(&source, o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto channel = grpc::CreateChannel("unix:" + o.listen_path, grpc::InsecureChannelCredentials());
  auto runtime = ::runtime::v1::RuntimeService::NewStub(channel);
  auto images = ::runtime::v1::ImageService::NewStub(channel);
  {
    grpc::ClientContext ctx;
    ::runtime::v1::ListContainerStatsResponse resp;
    ASSERT_TRUE(runtime->ListContainerStats(&ctx, {}, &resp).ok());
    EXPECT_GT(resp.stats_size(), 0);
  }
  {
    grpc::ClientContext ctx;
    ::runtime::v1::ListImagesResponse resp;
    EXPECT_EQ(images->ListImages(&ctx, {}, &resp).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  }
  (*server)->Stop();
  const auto calls = recorder.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(std::get<0>(calls[0]), "RuntimeService/ListContainerStats");
  EXPECT_EQ(std::get<1>(calls[0]), "OK");
  EXPECT_EQ(std::get<0>(calls[1]), "ImageService/ListImages");
  EXPECT_EQ(std::get<1>(calls[1]), "UNIMPLEMENTED");
  for (const auto& c : calls) EXPECT_GE(std::get<2>(c), 0.0);
}

}  // namespace
}  // namespace statlet::cri
