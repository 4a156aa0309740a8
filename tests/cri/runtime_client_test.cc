// RuntimeClient against a runtime peer in another process (cri_fixture_runtime, built
// from the upstream proto): the metadata it publishes, ContainerStatus asked once
// per container, the sandbox a pod uid names, and the absent / down states.
#include <sys/statvfs.h>

#include <cstdio>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "proto/api.grpc.pb.h"
#include "runtime/runtime_client.h"
#include "tests/cri/server_process.h"

namespace statlet::cri {
namespace {

const std::string kSandbox = std::string(64, '1');
const std::string kApp = std::string(64, '2');

int PeerCount(const std::string& socket, const std::string& key) {
  auto stub =
      ::runtime::v1::RuntimeService::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ::runtime::v1::StatusResponse resp;
  if (!stub->Status(&ctx, ::runtime::v1::StatusRequest(), &resp).ok()) return -1;
  return std::stoi(resp.info().at(key));
}
int ContainerStatusCalls(const std::string& socket) { return PeerCount(socket, "container_status_calls"); }
int ListContainerStatsCalls(const std::string& socket) { return PeerCount(socket, "list_container_stats_calls"); }

// The mount source of the filesystem holding `dir`, as util-linux's findmnt sees it.
std::string FindmntSource(const std::string& dir) {
  std::string cmd = "findmnt -n -o SOURCE --target '" + dir + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[512] = {};
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  pclose(p);
  std::string out(buf, n);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

void ExpectLayerOn(const std::string& dir, const ContainerMetadata::WritableLayer& l) {
  EXPECT_EQ(l.timestamp_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(l.mountpoint, dir);
  EXPECT_EQ(l.used_bytes, 12'345'678u);
  EXPECT_EQ(l.inodes_used, 321u);
  struct statvfs vfs;
  ASSERT_EQ(statvfs(dir.c_str(), &vfs), 0);
  EXPECT_EQ(l.capacity_bytes, uint64_t{vfs.f_blocks} * vfs.f_frsize);
  EXPECT_EQ(l.inodes_total, uint64_t{vfs.f_files});
  ASSERT_TRUE(l.inodes_free.has_value());  // moves with other writers on the same filesystem
  EXPECT_LE(*l.inodes_free, *l.inodes_total);
  std::string source = FindmntSource(dir);
  if (!source.empty()) {
    EXPECT_EQ(l.device, source);
  }
  EXPECT_FALSE(l.device.empty());
}

TEST(RuntimeClient, PublishesMetadataAndAsksStatusOncePerContainer) {
  testing::ScratchDir dir;
  const std::string socket = dir.path() + "/runtime.sock";
  testing::ServerProcess runtime;
  ASSERT_TRUE(runtime.Start({CRI_FIXTURE_RUNTIME, "--socket", socket})) << runtime.error();

  RuntimeClientOptions o;
  o.endpoint = "unix://" + socket;
  RuntimeClient client(o);
  EXPECT_TRUE(client.Current()->by_container_id.empty());
  ASSERT_TRUE(client.Refresh().ok()) << client.status().last_error;
  auto st = client.status();
  EXPECT_EQ(st.state, RuntimeState::kUp);
  EXPECT_EQ(st.runtime_name, "fixture-runtime");
  EXPECT_EQ(st.runtime_version, "1.2.3");
  EXPECT_EQ(st.containers, 1u);
  EXPECT_EQ(st.sandboxes, 2u);

  auto map = client.Current();
  ASSERT_TRUE(map->by_container_id.count(kApp));
  const ContainerMetadata& app = *map->by_container_id.at(kApp);
  EXPECT_EQ(app.container_name, "app");
  EXPECT_EQ(app.attempt, 3u);
  EXPECT_EQ(app.pod_sandbox_id, kSandbox);
  EXPECT_EQ(app.pod_name, "web");
  EXPECT_EQ(app.pod_namespace, "prod");
  EXPECT_EQ(app.pod_uid, "0a0a0a0a-1111-2222-3333-444444444444");
  EXPECT_EQ(app.image, "docker.io/library/app:1.0");  // ContainerStatus's name, not the id
  EXPECT_EQ(app.image_ref, "docker.io/library/app@sha256:feed");
  EXPECT_EQ(app.started_at_ns, 400);
  EXPECT_EQ(app.created_at_ns, 300);
  EXPECT_EQ(app.labels.at("io.kubernetes.container.name"), "app");
  EXPECT_EQ(app.pod_labels.at("app"), "web");
  EXPECT_FALSE(app.is_sandbox);
  // Memory resources from ContainerStatus.resources.linux (the unified knobs parsed).
  EXPECT_TRUE(app.memory_resources.reported);
  EXPECT_EQ(app.memory_resources.limit_bytes, uint64_t{1000} << 20);
  EXPECT_EQ(app.memory_resources.unified_min_bytes, uint64_t{500} << 20);
  EXPECT_EQ(app.memory_resources.unified_high_bytes, uint64_t{950} << 20);
  // The ready sandbox names the pod, not the older stopped one.
  ASSERT_TRUE(map->sandbox_by_pod_uid.count(app.pod_uid));
  EXPECT_EQ(map->sandbox_by_pod_uid.at(app.pod_uid)->container_id, kSandbox);
  EXPECT_TRUE(map->sandbox_by_pod_uid.at(app.pod_uid)->is_sandbox);
  EXPECT_TRUE(map->by_container_id.count(std::string(64, '0')));

  // A second round with nothing changed: no new ContainerStatus, the same map object.
  ASSERT_TRUE(client.Refresh().ok());
  EXPECT_EQ(ContainerStatusCalls(socket), 1);
  EXPECT_EQ(client.Current().get(), map.get());

  // The runtime goes away: state down, the last metadata stays published.
  runtime.Stop();
  EXPECT_FALSE(client.Refresh().ok());
  EXPECT_NE(client.status().state, RuntimeState::kUp);
  EXPECT_EQ(client.Current().get(), map.get());
}

TEST(RuntimeClient, AbsentRuntimeIsAStateNotAnError) {
  testing::ScratchDir dir;
  RuntimeClientOptions o;
  o.candidates = {dir.path() + "/containerd.sock", dir.path() + "/crio.sock"};
  RuntimeClient client(o);
  EXPECT_FALSE(client.Refresh().ok());
  auto st = client.status();
  EXPECT_EQ(st.state, RuntimeState::kAbsent);
  EXPECT_NE(st.last_error.find("crio.sock"), std::string::npos);
  EXPECT_TRUE(client.Current()->by_container_id.empty());
}

// The stats calls hand over the container cgroups the metadata does not name: a round runs
// at once for an id handed over the first time, none for one handed over before (a cgroup
// the runtime does not list would cost a round on every call), and an id left out once is
// new again. Counted by the client's successful rounds (its periodic one is an hour away).
TEST(RuntimeClient, CoverUnknownAsksOneRoundPerNewId) {
  testing::ScratchDir dir;
  const std::string socket = dir.path() + "/containerd.sock";
  testing::ServerProcess runtime;
  ASSERT_TRUE(runtime.Start({CRI_FIXTURE_RUNTIME, "--socket", socket})) << runtime.error();
  RuntimeClientOptions o;
  o.endpoint = "unix://" + socket;
  o.refresh_period = std::chrono::hours(1);
  o.stats_period = std::chrono::milliseconds(0);
  RuntimeClient client(o);
  EXPECT_FALSE(client.CoverUnknown({"x"}, std::chrono::seconds(5)).has_value()) << "not up yet: no round";
  client.Start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (client.status().state != RuntimeState::kUp && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a condition
  }
  ASSERT_EQ(client.status().state, RuntimeState::kUp);
  const uint64_t first = client.status().refreshes;
  auto rounds = [&] { return client.status().refreshes - first; };
  const auto timeout = std::chrono::seconds(10);

  EXPECT_TRUE(client.CoverUnknown({"x"}, timeout).has_value());
  EXPECT_EQ(rounds(), 1u);
  EXPECT_FALSE(client.CoverUnknown({"x"}, timeout).has_value()) << "asked before";
  EXPECT_EQ(rounds(), 1u);
  EXPECT_TRUE(client.CoverUnknown({"x", "y"}, timeout).has_value()) << "y is new";
  EXPECT_EQ(rounds(), 2u);
  EXPECT_FALSE(client.CoverUnknown({}, timeout).has_value());
  EXPECT_TRUE(client.CoverUnknown({"x"}, timeout).has_value()) << "left out once: new again";
  EXPECT_EQ(rounds(), 3u);
  client.Stop();
}

TEST(RuntimeClient, AutoDetectsAndBackgroundRefreshes) {
  testing::ScratchDir dir;
  const std::string socket = dir.path() + "/crio.sock";
  RuntimeClientOptions o;
  o.candidates = {dir.path() + "/containerd.sock", socket};
  o.refresh_period = std::chrono::milliseconds(50);
  RuntimeClient client(o);
  client.Start();
  // The runtime starts after statlet: the refresher finds it without a restart.
  testing::ServerProcess runtime;
  ASSERT_TRUE(runtime.Start({CRI_FIXTURE_RUNTIME, "--socket", socket})) << runtime.error();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (client.Current()->by_container_id.count(kApp) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a condition
  }
  EXPECT_EQ(client.Current()->by_container_id.count(kApp), 1u);
  EXPECT_EQ(client.status().endpoint, socket);
  client.Stop();
}

TEST(RuntimeClient, WritableLayerFromListContainerStatsWithItsFilesystem) {
  testing::ScratchDir dir;
  const std::string socket = dir.path() + "/runtime.sock";
  testing::ServerProcess runtime;
  ASSERT_TRUE(runtime.Start({CRI_FIXTURE_RUNTIME, "--socket", socket, "--fs-dir", dir.path()})) << runtime.error();
  RuntimeClientOptions o;
  o.endpoint = "unix://" + socket;
  RuntimeClient client(o);
  EXPECT_FALSE(client.RefreshStats().ok()) << "no stats before the runtime is connected";
  ASSERT_TRUE(client.Refresh().ok()) << client.status().last_error;
  EXPECT_EQ(ListContainerStatsCalls(socket), 0) << "a metadata round must not ask for stats";
  EXPECT_EQ(client.Current()->by_container_id.at(kApp)->writable_layer.timestamp_ns, 0);

  ASSERT_TRUE(client.RefreshStats().ok()) << client.status().last_stats_error;
  EXPECT_EQ(ListContainerStatsCalls(socket), 1);
  EXPECT_EQ(client.status().stats_refreshes, 1u);
  auto map = client.Current();
  ExpectLayerOn(dir.path(), map->by_container_id.at(kApp)->writable_layer);
  // Sandboxes have no writable layer of their own.
  EXPECT_EQ(map->by_container_id.at(kSandbox)->writable_layer.timestamp_ns, 0);
  // Names and the rest of the metadata are unchanged by the stats round.
  EXPECT_EQ(map->by_container_id.at(kApp)->container_name, "app");
  EXPECT_EQ(map->by_container_id.at(kApp)->started_at_ns, 400);

  // A later metadata round keeps the layer.
  ASSERT_TRUE(client.Refresh().ok());
  EXPECT_EQ(client.Current()->by_container_id.at(kApp)->writable_layer.used_bytes, 12'345'678u);
}

TEST(RuntimeClient, ImageFsInfoNamesTheFilesystemWhenStatsDoNot) {
  testing::ScratchDir dir;
  const std::string socket = dir.path() + "/runtime.sock";
  testing::ServerProcess runtime;
  ASSERT_TRUE(runtime.Start({CRI_FIXTURE_RUNTIME, "--socket", socket, "--fs-dir", dir.path(), "--fs-via-imagefsinfo"}))
      << runtime.error();
  RuntimeClientOptions o;
  o.endpoint = "unix://" + socket;
  RuntimeClient client(o);
  ASSERT_TRUE(client.Refresh().ok()) << client.status().last_error;
  ASSERT_TRUE(client.RefreshStats().ok()) << client.status().last_stats_error;
  ExpectLayerOn(dir.path(), client.Current()->by_container_id.at(kApp)->writable_layer);
}

TEST(RuntimeClient, StatsAtTheirOwnCadenceNotPerRefresh) {
  testing::ScratchDir dir;
  const std::string socket = dir.path() + "/runtime.sock";
  testing::ServerProcess runtime;
  ASSERT_TRUE(runtime.Start({CRI_FIXTURE_RUNTIME, "--socket", socket, "--fs-dir", dir.path()})) << runtime.error();
  auto rounds = [&](std::chrono::milliseconds stats_period) {
    RuntimeClientOptions o;
    o.endpoint = "unix://" + socket;
    o.refresh_period = std::chrono::milliseconds(20);
    o.stats_period = stats_period;
    RuntimeClient client(o);
    client.Start();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (client.status().refreshes < 6 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a condition
    }
    client.Stop();
    EXPECT_GE(client.status().refreshes, 6u);
    return client.Current()->by_container_id.at(kApp)->writable_layer.timestamp_ns;
  };
  // A period far longer than the test: the first round asks once, the next five do not.
  EXPECT_NE(rounds(std::chrono::hours(1)), 0);
  EXPECT_EQ(ListContainerStatsCalls(socket), 1);
  // Period 0: never asked.
  EXPECT_EQ(rounds(std::chrono::milliseconds(0)), 0);
  EXPECT_EQ(ListContainerStatsCalls(socket), 1);
}

}  // namespace
}  // namespace statlet::cri
