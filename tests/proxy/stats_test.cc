// The stats calls statlet answers in proxy mode carry what the kubelet's CRI stats provider
// reads (pkg/kubelet/stats/cri_stats_provider.go, cri_stats_provider_linux.go; see
// docs/cri.md): every sandbox containerd lists READY and every container it lists RUNNING
// is there, under containerd's ids, right after the call that made it; CPU, memory,
// network (always with its default interface), process count and the writable layer (as
// containerd reports it); timestamps that move; metrics whose names and labels match the
// descriptors.
// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/proxy/kubelet_calls.h"
#include "tests/proxy/shared_stage.h"
#include "tests/support/wait_for.h"

namespace statlet::proxy_test {
namespace {

using std::chrono::seconds;

class ProxyStats : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    stage_ = SharedStage(&error);
    ASSERT_NE(stage_, nullptr) << error;
    kubelet_ = std::make_unique<KubeletClient>(stage_->statlet_socket());
    containerd_ = std::make_unique<KubeletClient>(stage_->containerd_socket());
  }

  // A pod with `containers` running containers, created through statlet.
  Pod RunPod(const std::string& name, const std::vector<std::string>& containers) {
    Pod pod = NewPod(stage_->cgroup_root(), stage_->dir(), name);
    grpc::Status s = proxy_test::RunPod(*kubelet_, &pod);
    EXPECT_TRUE(s.ok()) << Describe(s);
    for (const std::string& c : containers) {
      std::string id;
      s = CreateAndStart(*kubelet_, pod, c, stage_->image(),
                         {"sh", "-c", "dd if=/dev/zero of=/tmp/fill bs=1M count=4 2>/dev/null; exec sleep 2147483647"},
                         &id);
      EXPECT_TRUE(s.ok()) << Describe(s);
    }
    return pod;
  }

  void RemovePod(const Pod& pod) {
    grpc::Status removed = StopAndRemovePod(*kubelet_, pod);
    EXPECT_TRUE(removed.ok()) << removed.error_message();
    EXPECT_TRUE(RemoveCgroupEverywhere(pod.cgroup_parent, seconds(10)).ok());
  }

  ProxyStage* stage_ = nullptr;
  std::unique_ptr<KubeletClient> kubelet_, containerd_;
};

// What the kubelet requires of one container's stats (makeContainerStats and, with
// `layer`, the writable layer), `where` naming it in failures.
void ExpectContainerStats(const v1::ContainerStats& c, const std::string& name, const std::string& where,
                          bool layer = false) {
  SCOPED_TRACE(where);
  EXPECT_EQ(c.attributes().metadata().name(), name);
  ASSERT_TRUE(c.has_cpu());
  EXPECT_GT(c.cpu().timestamp(), 0);
  EXPECT_TRUE(c.cpu().has_usage_core_nano_seconds());
  ASSERT_TRUE(c.has_memory());
  EXPECT_GT(c.memory().timestamp(), 0);
  EXPECT_TRUE(c.memory().has_working_set_bytes());
  EXPECT_TRUE(c.memory().has_usage_bytes());
  EXPECT_TRUE(c.memory().has_rss_bytes());
  EXPECT_TRUE(c.memory().has_page_faults());
  EXPECT_TRUE(c.memory().has_major_page_faults());
  if (c.has_swap()) {
    EXPECT_GT(c.swap().timestamp(), 0);  // an empty one becomes 1970
  }
  if (!layer) return;
  ASSERT_TRUE(c.has_writable_layer()) << "the runtime's writable layer";
  EXPECT_GT(c.writable_layer().timestamp(), 0);
  EXPECT_FALSE(c.writable_layer().fs_id().mountpoint().empty());
  EXPECT_TRUE(c.writable_layer().has_used_bytes());
  EXPECT_TRUE(c.writable_layer().has_inodes_used());
}

TEST_F(ProxyStats, EveryRunningSandboxAndContainerCarriesWhatTheKubeletReads) {
  Pod web = RunPod("stats-web", {"nginx", "sidecar"});
  Pod job = RunPod("stats-job", {"worker"});
  // Right after the calls that made them (no waiting here): statlet saw them pass.
  v1::ListPodSandboxStatsRequest req;
  req.mutable_filter();
  v1::ListPodSandboxStatsResponse first;
  grpc::Status s = kubelet_->runtime().ListPodSandboxStats(Ctx().get(), req, &first);
  ASSERT_TRUE(s.ok()) << Describe(s);

  // What the kubelet keeps from containerd's lists: READY sandboxes, RUNNING containers.
  v1::ListPodSandboxResponse sandboxes;
  v1::ListContainersResponse containers;
  ASSERT_TRUE(containerd_->runtime().ListPodSandbox(Ctx().get(), v1::ListPodSandboxRequest(), &sandboxes).ok());
  ASSERT_TRUE(containerd_->runtime().ListContainers(Ctx().get(), v1::ListContainersRequest(), &containers).ok());
  std::map<std::string, std::set<std::string>> running;  // sandbox id -> running container ids
  std::map<std::string, std::string> container_names;
  for (const auto& p : sandboxes.items()) {
    if (p.state() == v1::SANDBOX_READY) running[p.id()];
  }
  for (const auto& c : containers.containers()) {
    if (c.state() != v1::CONTAINER_RUNNING) continue;
    running[c.pod_sandbox_id()].insert(c.id());
    container_names[c.id()] = c.metadata().name();
  }
  ASSERT_EQ(running.count(web.id), 1u);
  ASSERT_EQ(running[web.id].size(), 2u);
  ASSERT_EQ(running[job.id].size(), 1u);

  std::map<std::string, const v1::PodSandboxStats*> by_id;
  for (const auto& p : first.stats()) {
    ASSERT_TRUE(p.has_attributes());
    EXPECT_TRUE(running.count(p.attributes().id()) != 0)
        << "statlet names a sandbox containerd does not list READY: " << p.attributes().id();
    by_id[p.attributes().id()] = &p;
  }
  for (const auto& [sandbox, ids] : running) {
    SCOPED_TRACE("sandbox " + sandbox);
    ASSERT_EQ(by_id.count(sandbox), 1u) << "a READY sandbox missing from ListPodSandboxStats";
    const v1::PodSandboxStats& p = *by_id[sandbox];
    ASSERT_TRUE(p.has_linux()) << "the kubelet ranges over linux.containers unchecked";
    EXPECT_TRUE(p.linux().cpu().has_usage_core_nano_seconds());
    EXPECT_TRUE(p.linux().memory().has_working_set_bytes());
    EXPECT_TRUE(p.linux().memory().has_usage_bytes());
    EXPECT_TRUE(p.linux().memory().has_rss_bytes());
    EXPECT_TRUE(p.linux().memory().has_page_faults());
    ASSERT_TRUE(p.linux().has_network()) << "a pod with a network namespace of its own";
    ASSERT_TRUE(p.linux().network().has_default_interface()) << "the kubelet dereferences it unchecked";
    EXPECT_EQ(p.linux().network().default_interface().name(), "eth0");
    EXPECT_TRUE(p.linux().network().default_interface().has_rx_bytes());
    EXPECT_GE(p.linux().process().process_count().value(), ids.size());
    std::set<std::string> got;
    for (const auto& c : p.linux().containers()) {
      got.insert(c.attributes().id());
      ExpectContainerStats(c, container_names[c.attributes().id()], "container " + c.attributes().id());
    }
    EXPECT_EQ(got, ids);
  }

  // ListContainerStats: the same containers.
  v1::ListContainerStatsRequest creq;
  creq.mutable_filter();
  v1::ListContainerStatsResponse ours;
  ASSERT_TRUE(kubelet_->runtime().ListContainerStats(Ctx().get(), creq, &ours).ok());
  std::set<std::string> listed;
  for (const auto& c : ours.stats()) {
    listed.insert(c.attributes().id());
    if (container_names.count(c.attributes().id()) != 0) {
      ExpectContainerStats(c, container_names[c.attributes().id()], "ListContainerStats " + c.attributes().id());
    }
  }
  for (const auto& [id, name] : container_names) EXPECT_EQ(listed.count(id), 1u) << "container " << name;

  // The writable layers are containerd's: once containerd's own ListContainerStats reports
  // a container's layer (its snapshot usage is refreshed every stats_collect_period), so
  // does statlet's, on the same filesystem.
  std::string missing;
  const bool layers = testing::WaitFor(
      [&] {
        v1::ListContainerStatsResponse theirs;
        ours.Clear();
        if (!containerd_->runtime().ListContainerStats(Ctx().get(), creq, &theirs).ok() ||
            !kubelet_->runtime().ListContainerStats(Ctx().get(), creq, &ours).ok()) {
          return false;
        }
        std::map<std::string, std::string> their_layers;
        for (const auto& c : theirs.stats()) {
          if (c.has_writable_layer()) their_layers[c.attributes().id()] = c.writable_layer().fs_id().mountpoint();
        }
        missing.clear();
        for (const auto& c : ours.stats()) {
          if (container_names.count(c.attributes().id()) == 0) continue;
          auto it = their_layers.find(c.attributes().id());
          if (it == their_layers.end() || !c.has_writable_layer() ||
              c.writable_layer().fs_id().mountpoint() != it->second) {
            missing += " " + c.attributes().id();
          }
        }
        return their_layers.size() >= container_names.size() && missing.empty();
      },
      seconds(40));
  EXPECT_TRUE(layers) << "writable layers not as containerd reports them:" << missing;
  for (const auto& c : ours.stats()) {
    if (container_names.count(c.attributes().id()) == 0) continue;
    ExpectContainerStats(c, container_names[c.attributes().id()], "layer of " + c.attributes().id(), /*layer=*/true);
  }

  // One-object calls.
  {
    v1::PodSandboxStatsRequest one;
    one.set_pod_sandbox_id(web.id);
    v1::PodSandboxStatsResponse resp;
    ASSERT_TRUE(kubelet_->runtime().PodSandboxStats(Ctx().get(), one, &resp).ok());
    EXPECT_EQ(resp.stats().attributes().id(), web.id);
    v1::ContainerStatsRequest c;
    c.set_container_id(*running[job.id].begin());
    v1::ContainerStatsResponse cresp;
    ASSERT_TRUE(kubelet_->runtime().ContainerStats(Ctx().get(), c, &cresp).ok());
    ExpectContainerStats(cresp.stats(), "worker", "ContainerStats");
  }

  // Timestamps move (a snapshot lives --cri.max-age), and a later look has CPU rates (the
  // kubelet never computes a pod's).
  v1::ListPodSandboxStatsResponse second;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        second.Clear();
        if (!kubelet_->runtime().ListPodSandboxStats(Ctx().get(), req, &second).ok()) return false;
        for (const auto& p : second.stats()) {
          auto it = by_id.find(p.attributes().id());
          if (it != by_id.end() && p.linux().cpu().timestamp() <= it->second->linux().cpu().timestamp()) return false;
        }
        return true;
      },
      seconds(10)))
      << "the stats' timestamps did not move";
  for (const auto& p : second.stats()) {
    if (by_id.count(p.attributes().id()) == 0) continue;
    EXPECT_GT(p.linux().cpu().timestamp(), by_id[p.attributes().id()]->linux().cpu().timestamp());
    EXPECT_TRUE(p.linux().cpu().has_usage_nano_cores());
    for (const auto& c : p.linux().containers()) EXPECT_TRUE(c.cpu().has_usage_nano_cores());
  }

  // Metrics: fixed descriptors; every metric named by one, its labels in their order.
  v1::ListMetricDescriptorsResponse descriptors;
  ASSERT_TRUE(
      kubelet_->runtime().ListMetricDescriptors(Ctx().get(), v1::ListMetricDescriptorsRequest(), &descriptors).ok());
  std::map<std::string, int> keys;
  for (const auto& d : descriptors.descriptors()) keys[d.name()] = d.label_keys_size();
  ASSERT_FALSE(keys.empty());
  v1::ListPodSandboxMetricsResponse metrics;
  ASSERT_TRUE(
      kubelet_->runtime().ListPodSandboxMetrics(Ctx().get(), v1::ListPodSandboxMetricsRequest(), &metrics).ok());
  std::set<std::string> pods_with_metrics;
  for (const auto& pm : metrics.pod_metrics()) {
    pods_with_metrics.insert(pm.pod_sandbox_id());
    auto check = [&](const v1::Metric& m) {
      ASSERT_EQ(keys.count(m.name()), 1u) << m.name();
      EXPECT_EQ(m.label_values_size(), keys[m.name()]) << m.name();
    };
    for (const auto& m : pm.metrics()) check(m);
    for (const auto& cm : pm.container_metrics()) {
      for (const auto& m : cm.metrics()) check(m);
    }
  }
  for (const auto& [sandbox, ids] : running) EXPECT_EQ(pods_with_metrics.count(sandbox), 1u) << sandbox;

  RemovePod(web);
  RemovePod(job);
  // Gone from statlet's answers right after the calls that removed them.
  v1::ListPodSandboxStatsResponse after;
  ASSERT_TRUE(kubelet_->runtime().ListPodSandboxStats(Ctx().get(), req, &after).ok());
  for (const auto& p : after.stats()) {
    EXPECT_NE(p.attributes().id(), web.id);
    EXPECT_NE(p.attributes().id(), job.id);
  }
}

}  // namespace
}  // namespace statlet::proxy_test
