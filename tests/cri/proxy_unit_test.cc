// In-process checks of proxy mode's pure parts: which paths pass, which calls change the
// node's workloads, the network shape the kubelet can read, and the source that stands in
// for the Sampler until it exists. The passing itself runs in tests/proxy.
#include <thread>

#include <gtest/gtest.h>

#include "cri/deferred_source.h"
#include "cri/grpc_wire.h"
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

TEST(GrpcWire, TimeoutsAreReadInTheirUnits) {
  using std::chrono::nanoseconds;
  EXPECT_EQ(ParseGrpcTimeout("1S"), nanoseconds(1000000000));
  EXPECT_EQ(ParseGrpcTimeout("250m"), nanoseconds(250000000));
  EXPECT_EQ(ParseGrpcTimeout("7u"), nanoseconds(7000));
  EXPECT_EQ(ParseGrpcTimeout("99999999n"), nanoseconds(99999999));
  EXPECT_EQ(ParseGrpcTimeout("2H"), nanoseconds(int64_t{7200} * 1000000000));
  EXPECT_EQ(ParseGrpcTimeout("3M"), nanoseconds(int64_t{180} * 1000000000));
  // Past what nanoseconds hold: 100 years.
  EXPECT_EQ(ParseGrpcTimeout("99999999H"), nanoseconds(int64_t{100} * 365 * 24 * 3600 * 1000000000));
  EXPECT_FALSE(ParseGrpcTimeout("S"));
  EXPECT_FALSE(ParseGrpcTimeout("123456789S")) << "nine digits";
  EXPECT_FALSE(ParseGrpcTimeout("1x"));
  EXPECT_FALSE(ParseGrpcTimeout("-1S"));
}

TEST(GrpcWire, MessagePrefixesAreFollowedAcrossChunks) {
  // Two messages (3 and 300 bytes), then one declaring 17 MiB; fed a byte, then odd chunks.
  std::string wire;
  auto prefix = [&](uint32_t n) {
    wire += '\0';
    for (int shift = 24; shift >= 0; shift -= 8) wire += static_cast<char>((n >> shift) & 0xff);
  };
  prefix(3);
  wire += "abc";
  prefix(300);
  wire += std::string(300, 'x');
  const size_t big_at = wire.size();
  prefix(17u << 20);
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{64}}) {
    GrpcMessageFrames frames;
    uint64_t declared = 0;
    size_t at = 0;
    bool ok = true;
    while (ok && at < wire.size()) {
      const size_t n = std::min(chunk, wire.size() - at);
      ok = frames.Feed(reinterpret_cast<const uint8_t*>(wire.data() + at), n, size_t{16} << 20, &declared);
      at += n;
    }
    EXPECT_FALSE(ok) << "chunk " << chunk;
    EXPECT_EQ(declared, uint64_t{17} << 20);
    EXPECT_EQ(frames.messages(), 3u);
    EXPECT_GT(at, big_at + 4) << "refused only once its prefix was whole";
  }
  GrpcMessageFrames frames;
  uint64_t declared = 0;
  EXPECT_TRUE(frames.Feed(reinterpret_cast<const uint8_t*>(wire.data()), big_at, size_t{16} << 20, &declared));
  EXPECT_EQ(frames.messages(), 2u);
}

TEST(GrpcWire, MessagesArePercentEncoded) {
  EXPECT_EQ(PercentEncode("plain text"), "plain text");
  EXPECT_EQ(PercentEncode("100% \xff\n"), "100%25 %FF%0A");
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
