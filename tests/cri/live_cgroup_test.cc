// The upstream client against statlet serving a real collection: a kubepods-shaped
// cgroup made in every hierarchy of this host, a spinning process in it, and the CRI
// answers compared with the cgroup files read just before and after the call.
// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include <unistd.h>

#include <sstream>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "tests/cri/server_process.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/wait_for.h"
#include "tests/support/workloads.h"

namespace statlet {
namespace {

namespace v1 = ::runtime::v1;
using testing::Child;
using testing::LiveCgroup;

uint64_t StatValue(const std::string& content, const std::string& key) {
  std::istringstream in(content);
  std::string k;
  uint64_t v;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

uint64_t PsiTotalUs(const std::string& content, const std::string& line) {
  auto pos = content.find(line + " ");
  if (pos == std::string::npos) return 0;
  auto t = content.find("total=", pos);
  return std::stoull(content.substr(t + 6));
}

// A container cgroup of the kubelet's cgroupfs layout, made in every mounted hierarchy.
struct KubepodsContainer {
  KubepodsContainer()
      : uid("cafe" + std::to_string(getpid()) + "-0000-4000-8000-000000000001"),
        id(ContainerId()),
        pod_path("/kubepods/burstable/pod" + uid),
        cgroup(pod_path + "/" + id) {}
  static std::string ContainerId() {
    std::string id = std::string(56, 'c') + "0000" + std::to_string(getpid() % 10000);
    id.resize(64, '0');
    return id;
  }
  std::string uid, id, pod_path;
  LiveCgroup cgroup;
};

uint64_t CpuNs(const LiveCgroup& cg) {
  if (cg.in(kV1Cpuacct)) return std::stoull(cg.Read(kV1Cpuacct, "cpuacct.usage"));
  return StatValue(cg.Read(kUnified, "cpu.stat"), "usage_usec") * 1000;
}

uint64_t WorkingSet(const LiveCgroup& cg) {  // as the kubelet computes it
  uint64_t usage, inactive;
  if (cg.in(kV1Memory)) {
    usage = std::stoull(cg.Read(kV1Memory, "memory.usage_in_bytes"));
    inactive = StatValue(cg.Read(kV1Memory, "memory.stat"), "total_inactive_file");
  } else {
    usage = std::stoull(cg.Read(kUnified, "memory.current"));
    inactive = StatValue(cg.Read(kUnified, "memory.stat"), "inactive_file");
  }
  return usage > inactive ? usage - inactive : 0;
}

TEST(LiveCri, UpstreamFieldsMatchTheCgroupFiles) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create cgroups";
  KubepodsContainer ctr;
  const LiveCgroup& cg = ctr.cgroup;
  ASSERT_TRUE(cg.ok()) << cg.error();
  Child spinner(testing::SpinForever);
  ASSERT_TRUE(spinner.StartIn(ctr.cgroup));
  testing::ScratchDir dir;
  const std::string socket = dir.path() + "/cri.sock";
  testing::ServerProcess server;
  ASSERT_TRUE(server.Start({CRI_TEST_SERVER, "--socket", socket, "--live", ctr.pod_path, "--max-age-ms", "0"}))
      << server.error();
  auto stub = v1::RuntimeService::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));

  auto call = [&](v1::ContainerStatsResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::ContainerStatsRequest req;
    req.set_container_id(ctr.id);
    return stub->ContainerStats(&ctx, req, resp);
  };
  // Wait until the spinner has used a measurable amount of CPU (>= 200 ms).
  ASSERT_TRUE(testing::WaitFor([&] { return CpuNs(cg) >= 200'000'000; }, std::chrono::seconds(30)));
  // The unified hierarchy keeps PSI files for every cgroup: then statlet must send them.
  const bool kernel_has_psi = cg.in(kUnified) && !cg.Read(kUnified, "cpu.pressure").empty();

  uint64_t prev_cpu = 0;
  int64_t prev_ts = 0;
  for (int round = 0; round < 3; ++round) {
    uint64_t cpu_before = CpuNs(cg), ws_before = WorkingSet(cg);
    uint64_t psi_before = kernel_has_psi ? PsiTotalUs(cg.Read(kUnified, "cpu.pressure"), "some") : 0;
    v1::ContainerStatsResponse resp;
    auto st = call(&resp);
    uint64_t cpu_after = CpuNs(cg), ws_after = WorkingSet(cg);
    uint64_t psi_after = kernel_has_psi ? PsiTotalUs(cg.Read(kUnified, "cpu.pressure"), "some") : 0;
    ASSERT_TRUE(st.ok()) << st.error_message();
    const auto& s = resp.stats();
    EXPECT_EQ(s.attributes().id(), ctr.id);
    uint64_t cpu = s.cpu().usage_core_nano_seconds().value();
    EXPECT_GE(cpu, cpu_before);
    EXPECT_LE(cpu, cpu_after);
    uint64_t ws = s.memory().working_set_bytes().value();
    EXPECT_GE(ws + (64 << 10), std::min(ws_before, ws_after));
    EXPECT_LE(ws, std::max(ws_before, ws_after) + (64 << 10));
    ASSERT_EQ(s.cpu().has_psi(), kernel_has_psi);
    if (kernel_has_psi) {
      EXPECT_GE(s.cpu().psi().some().total(), psi_before * 1000);
      EXPECT_LE(s.cpu().psi().some().total(), psi_after * 1000);
    }
    if (round > 0) {
      // From the second collection on, the rate against the previous sample: the cgroup's
      // own CPU time (checked against its file above) over the time between the two
      // samples. Timestamps are wall clock, rates use the monotonic clock: 2 % allows for
      // the difference between the two over a window of >= 100 ms of CPU.
      ASSERT_TRUE(s.cpu().has_usage_nano_cores());
      ASSERT_GT(s.cpu().timestamp(), prev_ts);
      const double expected = double(cpu - prev_cpu) * 1e9 / double(s.cpu().timestamp() - prev_ts);
      EXPECT_NEAR(double(s.cpu().usage_nano_cores().value()), expected, expected * 0.02);
      EXPECT_GT(expected, 0);
    }
    prev_cpu = cpu;
    prev_ts = s.cpu().timestamp();
    // The next sample spans >= 100 ms of the spinner's CPU time.
    ASSERT_TRUE(testing::WaitFor([&] { return CpuNs(cg) >= cpu + 100'000'000; }, std::chrono::seconds(30)));
  }

  // The pod sandbox of a runtime-less pod: id = the pod uid, aggregates the pod cgroup.
  grpc::ClientContext ctx;
  v1::ListPodSandboxStatsResponse pods;
  ASSERT_TRUE(stub->ListPodSandboxStats(&ctx, v1::ListPodSandboxStatsRequest(), &pods).ok());
  ASSERT_EQ(pods.stats_size(), 1);
  EXPECT_EQ(pods.stats(0).linux().containers_size(), 1);
  EXPECT_EQ(pods.stats(0).linux().process().process_count().value(), 1u);
}

}  // namespace
}  // namespace statlet
