// In-process checks of proxy mode's pure parts: which paths pass, which calls change the
// node's workloads, the network shape the kubelet can read, and the source that stands in
// for the Sampler until it exists. The passing itself runs in tests/proxy.
#include <thread>

#include <gtest/gtest.h>

#include "cri/deferred_source.h"
#include "cri/passthrough.h"
#include "cri/snapshot_to_cri.h"
#include "cri/stats_service.h"

namespace statlet::cri {
namespace {

TEST(PassThrough, RuntimeV1PathsPassOthersDoNot) {
  EXPECT_TRUE(IsPassableMethod("/runtime.v1.RuntimeService/Version"));
  EXPECT_TRUE(IsPassableMethod("/runtime.v1.RuntimeService/CheckpointPod"));  // newer than any proto of ours
  EXPECT_TRUE(IsPassableMethod("/runtime.v1.ImageService/StreamImages"));
  EXPECT_FALSE(IsPassableMethod("/runtime.v1.RuntimeService/"));
  EXPECT_FALSE(IsPassableMethod("/runtime.v1.RuntimeService/a/b"));
  EXPECT_FALSE(IsPassableMethod("/runtime.v1alpha2.RuntimeService/Version"));
  EXPECT_FALSE(IsPassableMethod("/containerd.services.tasks.v1.Tasks/List"));
  EXPECT_FALSE(IsPassableMethod("runtime.v1.RuntimeService/Version"));
}

TEST(PassThrough, UnaryMethodsAreThoseOurProtoDeclaresUnary) {
  EXPECT_TRUE(IsUnaryMethod("/runtime.v1.RuntimeService/Version"));
  EXPECT_TRUE(IsUnaryMethod("/runtime.v1.RuntimeService/StopContainer"));  // an empty answer
  EXPECT_TRUE(IsUnaryMethod("/runtime.v1.ImageService/ListImages"));
  EXPECT_FALSE(IsUnaryMethod("/runtime.v1.RuntimeService/GetContainerEvents"));  // server streaming
  EXPECT_FALSE(IsUnaryMethod("/runtime.v1.RuntimeService/StreamContainers"));
  EXPECT_FALSE(IsUnaryMethod("/runtime.v1.ImageService/StreamImages"));
  EXPECT_FALSE(IsUnaryMethod("/runtime.v1.RuntimeService/CheckpointPod"));  // unknown shape: pumped
  EXPECT_FALSE(IsUnaryMethod("/runtime.v1.RuntimeService/"));
  EXPECT_FALSE(IsUnaryMethod("/runtime.v1alpha2.RuntimeService/Version"));
}

TEST(PassThrough, WorkloadChangesAreTheLifecycleCalls) {
  for (const char* m : {"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "CreateContainer", "StartContainer",
                        "StopContainer", "RemoveContainer", "UpdateContainerResources"}) {
    EXPECT_TRUE(ChangesWorkloads(std::string("/runtime.v1.RuntimeService/") + m)) << m;
  }
  for (const char* m : {"Version", "ListContainers", "ContainerStatus", "ExecSync", "PodSandboxStatus"}) {
    EXPECT_FALSE(ChangesWorkloads(std::string("/runtime.v1.RuntimeService/") + m)) << m;
  }
  EXPECT_FALSE(ChangesWorkloads("/runtime.v1.ImageService/RemoveImage"));
  EXPECT_TRUE(IsStatsCall("ListPodSandboxStats"));
  EXPECT_TRUE(IsStatsCall("StreamPodSandboxMetrics"));
  EXPECT_FALSE(IsStatsCall("Version"));  // the runtime's, in proxy mode
}

NetInterfaceStats Interface(const std::string& name, uint64_t rx) {
  NetInterfaceStats s;
  s.name = name;
  s.rx_bytes = rx;
  return s;
}

TEST(NetworkUsage, AlwaysHasADefaultInterfaceOrIsAbsent) {
  v1::NetworkUsage net;
  NetNamespaceStats ns;
  ns.interfaces = {Interface("lo", 1), Interface("net1", 2), Interface("eth0", 3)};
  ASSERT_TRUE(FillNetworkUsage(ns, 5, &net));
  EXPECT_EQ(net.default_interface().name(), "eth0");
  ASSERT_EQ(net.interfaces_size(), 1);
  EXPECT_EQ(net.interfaces(0).name(), "net1");
  // No eth0 (a CNI that names the pod's interface otherwise): the first one but lo.
  net.Clear();
  ns.interfaces = {Interface("lo", 1), Interface("ens3", 2), Interface("net1", 3)};
  ASSERT_TRUE(FillNetworkUsage(ns, 5, &net));
  EXPECT_EQ(net.default_interface().name(), "ens3");
  ASSERT_EQ(net.interfaces_size(), 1);
  EXPECT_EQ(net.interfaces(0).name(), "net1");
  // Only a loopback: no network at all (never one without its default interface).
  net.Clear();
  ns.interfaces = {Interface("lo", 1)};
  EXPECT_FALSE(FillNetworkUsage(ns, 5, &net));
  EXPECT_FALSE(net.has_default_interface());
  EXPECT_EQ(net.timestamp(), 0);
}

class FixedSource final : public SnapshotSource {
 public:
  StatusOr<SnapshotPtr> Get(std::chrono::nanoseconds, CollectParts) override {
    ++calls;
    return SnapshotPtr(std::make_shared<Snapshot>());
  }
  SamplerStats stats() const override { return {}; }
  int calls = 0;
};

TEST(DeferredSource, WaitsForTheSourceItStandsFor) {
  DeferredSource early(std::chrono::milliseconds(0));
  EXPECT_FALSE(early.Get(std::chrono::seconds(1)).ok()) << "no source yet, no wait";

  DeferredSource deferred(std::chrono::seconds(30));
  FixedSource real;
  std::thread binder([&] { deferred.Bind(&real); });
  auto snap = deferred.Get(std::chrono::seconds(1));  // returns once bound, well before 30 s
  binder.join();
  EXPECT_TRUE(snap.ok());
  EXPECT_EQ(real.calls, 1);
}

}  // namespace
}  // namespace statlet::cri
