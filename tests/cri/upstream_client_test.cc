// A stock client, generated from upstream cri-api v0.36.3 (tests/cri/upstream: upstream's shapes and
// numbers, independent of statlet's proto), against a running statlet CRI server in
// another process: every served RPC, the meaning of each upstream field, statlet's
// additions as unknown fields, filters, errors, UNIMPLEMENTED, malformed requests and
// 200 concurrent callers.
// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include <set>
#include <thread>

#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "tests/cri/server_process.h"
#include "tests/support/snapshot_builder.h"

namespace statlet {
namespace {

namespace v1 = ::runtime::v1;
using testing::FixtureSnapshot;

const Snapshot& Fix() {
  static const Snapshot s = FixtureSnapshot();
  return s;
}
const CgroupStats& Cg(const std::string& id) { return *Fix().FindByContainerId(id); }
const CgroupStats& PodCg(const std::string& uid) {
  for (const auto& c : Fix().cgroups) {
    if (c.id.kind == CgroupKind::kPod && c.id.pod_uid == uid) return c;
  }
  abort();
}

class UpstreamClient : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::ScratchDir();
    socket_ = dir_->path() + "/cri.sock";
    server_ = new testing::ServerProcess();
    ASSERT_TRUE(server_->Start({CRI_TEST_SERVER, "--socket", socket_, "--fixture", "--chunk", "2"}))
        << server_->error();
    channel_ =
        new std::shared_ptr<grpc::Channel>(grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  }
  static void TearDownTestSuite() {
    delete channel_;
    delete server_;
    delete dir_;
  }
  void SetUp() override {
    rt_ = v1::RuntimeService::NewStub(*channel_);
    img_ = v1::ImageService::NewStub(*channel_);
  }
  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return c;
  }
  v1::ListContainerStatsResponse List(const v1::ContainerStatsFilter& f = {}) {
    v1::ListContainerStatsRequest req;
    *req.mutable_filter() = f;
    v1::ListContainerStatsResponse resp;
    auto s = rt_->ListContainerStats(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }
  const v1::ContainerStats* Find(const v1::ListContainerStatsResponse& r, const std::string& id) {
    for (const auto& s : r.stats()) {
      if (s.attributes().id() == id) return &s;
    }
    return nullptr;
  }

  static testing::ScratchDir* dir_;
  static std::string socket_;
  static testing::ServerProcess* server_;
  static std::shared_ptr<grpc::Channel>* channel_;
  std::unique_ptr<v1::RuntimeService::Stub> rt_;
  std::unique_ptr<v1::ImageService::Stub> img_;
};
testing::ScratchDir* UpstreamClient::dir_;
std::string UpstreamClient::socket_;
testing::ServerProcess* UpstreamClient::server_;
std::shared_ptr<grpc::Channel>* UpstreamClient::channel_;

// The value of a UInt64Value-typed unknown field (statlet's additions, numbered >= 1000).
std::optional<uint64_t> UnknownUInt64(const google::protobuf::Message& m, int number) {
  const auto& u = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < u.field_count(); ++i) {
    if (u.field(i).number() != number || u.field(i).type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    v1::UInt64Value v;
    if (v.ParseFromString(u.field(i).length_delimited())) return v.value();
  }
  return std::nullopt;
}
bool HasUnknown(const google::protobuf::Message& m, int number) {
  const auto& u = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < u.field_count(); ++i) {
    if (u.field(i).number() == number) return true;
  }
  return false;
}

void ExpectPsi(const v1::PsiStats& got, const Psi& want) {
  ASSERT_TRUE(want.some && want.full);
  EXPECT_EQ(got.some().total(), want.some->total_us * 1000);
  EXPECT_DOUBLE_EQ(got.some().avg10(), want.some->avg10);
  EXPECT_DOUBLE_EQ(got.some().avg60(), want.some->avg60);
  EXPECT_DOUBLE_EQ(got.some().avg300(), want.some->avg300);
  EXPECT_EQ(got.full().total(), want.full->total_us * 1000);
  EXPECT_DOUBLE_EQ(got.full().avg10(), want.full->avg10);
}

TEST_F(UpstreamClient, Version) {
  v1::VersionRequest req;
  req.set_version("0.1.0");
  v1::VersionResponse resp;
  ASSERT_TRUE(rt_->Version(Ctx().get(), req, &resp).ok());
  EXPECT_EQ(resp.runtime_name(), "statlet");
  EXPECT_EQ(resp.runtime_api_version(), "v1");
  EXPECT_FALSE(resp.runtime_version().empty());
}

TEST_F(UpstreamClient, ContainerStatsCarriesEveryUpstreamField) {
  v1::ContainerStatsRequest req;
  req.set_container_id(testing::kNginx);
  v1::ContainerStatsResponse resp;
  auto st = rt_->ContainerStats(Ctx().get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const auto& s = resp.stats();
  const CgroupStats& c = Cg(testing::kNginx);
  EXPECT_EQ(s.attributes().id(), testing::kNginx);
  EXPECT_EQ(s.attributes().metadata().name(), "nginx");
  EXPECT_EQ(s.attributes().metadata().attempt(), 2u);
  EXPECT_EQ(s.attributes().labels().at("tier"), "front");
  EXPECT_EQ(s.attributes().annotations().at("io.kubernetes.container.hash"), "abc");
  EXPECT_EQ(s.cpu().timestamp(), testing::kTimestampNs);
  EXPECT_EQ(s.cpu().usage_core_nano_seconds().value(), *c.cpu.usage_ns);
  EXPECT_EQ(s.cpu().usage_nano_cores().value(), *c.cpu.usage_nano_cores);
  ExpectPsi(s.cpu().psi(), c.cpu.psi);
  EXPECT_EQ(s.memory().timestamp(), testing::kTimestampNs);
  EXPECT_EQ(s.memory().working_set_bytes().value(), *c.memory.working_set_bytes);
  EXPECT_EQ(s.memory().available_bytes().value(), *c.memory.max_bytes - *c.memory.working_set_bytes);
  EXPECT_EQ(s.memory().usage_bytes().value(), *c.memory.usage_bytes);
  EXPECT_EQ(s.memory().rss_bytes().value(), *c.memory.rss_bytes);
  EXPECT_EQ(s.memory().page_faults().value(), *c.memory.pgfault);
  EXPECT_EQ(s.memory().major_page_faults().value(), *c.memory.pgmajfault);
  ExpectPsi(s.memory().psi(), c.memory.psi);
  EXPECT_EQ(s.swap().swap_usage_bytes().value(), *c.memory.swap_bytes);
  EXPECT_EQ(s.swap().swap_available_bytes().value(), *c.memory.swap_max_bytes - *c.memory.swap_bytes);
  EXPECT_EQ(s.io().psi().some().total(), c.io.psi.some->total_us * 1000);
  EXPECT_FALSE(s.io().psi().has_full());  // the fixture has no io full line: left unset
  // The writable layer as the node's runtime reported it, with the runtime's timestamp.
  const auto& layer = c.id.meta->writable_layer;
  ASSERT_TRUE(s.has_writable_layer());
  EXPECT_EQ(s.writable_layer().timestamp(), layer.timestamp_ns);
  EXPECT_EQ(s.writable_layer().fs_id().mountpoint(), layer.mountpoint);
  EXPECT_EQ(s.writable_layer().used_bytes().value(), *layer.used_bytes);
  EXPECT_EQ(s.writable_layer().inodes_used().value(), *layer.inodes_used);

  // statlet's additions arrive as unknown fields a stock client skips but keeps.
  EXPECT_EQ(UnknownUInt64(s.cpu(), 1000), c.cpu.system_ns);
  EXPECT_EQ(UnknownUInt64(s.cpu(), 1001), c.cpu.user_ns);
  EXPECT_TRUE(HasUnknown(s.cpu(), 1002));  // per-CPU usage
  EXPECT_EQ(UnknownUInt64(s.memory(), 1000), c.memory.max_usage_bytes);
  EXPECT_EQ(UnknownUInt64(s.memory(), 1001), c.memory.cache_bytes);
  EXPECT_EQ(UnknownUInt64(s.memory(), 1002), c.memory.mapped_file_bytes);
  EXPECT_EQ(UnknownUInt64(s.memory(), 1003), c.memory.failcnt);
  EXPECT_TRUE(HasUnknown(s, 1000));  // per-container ProcessUsage
  EXPECT_TRUE(HasUnknown(s, 1001));  // per-container NetworkUsage
  // ...and the per-container process/network decode with upstream's own messages.
  const auto& u = s.GetReflection()->GetUnknownFields(s);
  for (int i = 0; i < u.field_count(); ++i) {
    if (u.field(i).number() == 1000) {
      v1::ProcessUsage p;
      ASSERT_TRUE(p.ParseFromString(u.field(i).length_delimited()));
      EXPECT_EQ(p.process_count().value(), *c.process.processes);
    }
    if (u.field(i).number() == 1001) {
      v1::NetworkUsage n;
      ASSERT_TRUE(n.ParseFromString(u.field(i).length_delimited()));
      EXPECT_EQ(n.default_interface().name(), "eth0");
      EXPECT_EQ(n.default_interface().rx_bytes().value(), 5'000'000u);
      EXPECT_EQ(UnknownUInt64(n.default_interface(), 1000), 4000u);  // rx_packets
      EXPECT_EQ(UnknownUInt64(n.default_interface(), 1001), 2u);     // rx_dropped
    }
  }
}

TEST_F(UpstreamClient, WritableLayerUnsetWithoutTheRuntimesReport) {
  v1::ContainerStatsRequest req;
  req.set_container_id(testing::kSidecar);
  v1::ContainerStatsResponse resp;
  ASSERT_TRUE(rt_->ContainerStats(Ctx().get(), req, &resp).ok());
  EXPECT_FALSE(resp.stats().has_writable_layer());  // unset, not zero
}

TEST_F(UpstreamClient, ContainerStatsErrors) {
  v1::ContainerStatsRequest req;
  v1::ContainerStatsResponse resp;
  auto s = rt_->ContainerStats(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("container_id"), std::string::npos);
  req.set_container_id("f00");
  s = rt_->ContainerStats(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("f00"), std::string::npos);
  req.set_container_id("b");  // nginx "bbbb…" and sidecar "bc00…"
  s = rt_->ContainerStats(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("ambiguous"), std::string::npos);
  req.set_container_id("bb");  // a unique prefix resolves
  ASSERT_TRUE(rt_->ContainerStats(Ctx().get(), req, &resp).ok());
  EXPECT_EQ(resp.stats().attributes().id(), testing::kNginx);
}

TEST_F(UpstreamClient, ListContainerStatsFilters) {
  auto all = List();
  std::set<std::string> ids;
  for (const auto& s : all.stats()) ids.insert(s.attributes().id());
  // Sandboxes are not containers; containers without runtime metadata keep their
  // cgroup-path ids.
  EXPECT_EQ(ids, (std::set<std::string>{testing::kNginx, testing::kSidecar, testing::kPlainC, testing::kBare}));
  const auto* plain = Find(all, testing::kPlainC);
  ASSERT_NE(plain, nullptr);
  EXPECT_FALSE(plain->memory().has_available_bytes());  // unlimited: no available_bytes
  // No swap data: no swap{} (an empty one with timestamp 0 becomes a 1970 time in the kubelet).
  EXPECT_FALSE(plain->has_swap());
  EXPECT_TRUE(Find(all, testing::kNginx)->has_swap());
  EXPECT_TRUE(plain->attributes().metadata().name().empty());

  v1::ContainerStatsFilter f;
  f.set_pod_sandbox_id(testing::kSandboxA);
  EXPECT_EQ(List(f).stats_size(), 2);
  f.set_pod_sandbox_id(testing::kPodBUid);  // without metadata the pod uid stands in
  ASSERT_EQ(List(f).stats_size(), 1);
  EXPECT_EQ(List(f).stats(0).attributes().id(), testing::kPlainC);
  f.Clear();
  (*f.mutable_label_selector())["tier"] = "side";
  ASSERT_EQ(List(f).stats_size(), 1);
  EXPECT_EQ(List(f).stats(0).attributes().id(), testing::kSidecar);
  (*f.mutable_label_selector())["app"] = "web";  // ANDed
  EXPECT_EQ(List(f).stats_size(), 1);
  (*f.mutable_label_selector())["app"] = "db";
  EXPECT_EQ(List(f).stats_size(), 0);
  f.Clear();
  f.set_id("bc");
  f.set_pod_sandbox_id(testing::kSandboxA.substr(0, 6));
  ASSERT_EQ(List(f).stats_size(), 1);
  f.set_id("nothing-like-it");
  EXPECT_EQ(List(f).stats_size(), 0);
}

TEST_F(UpstreamClient, BadLabelSelectorIsInvalidArgument) {
  v1::ListContainerStatsRequest req;
  (*req.mutable_filter()->mutable_label_selector())[""] = "x";
  v1::ListContainerStatsResponse resp;
  auto s = rt_->ListContainerStats(Ctx().get(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("label_selector"), std::string::npos);
}

TEST_F(UpstreamClient, StreamContainerStatsMatchesList) {
  v1::StreamContainerStatsRequest req;
  auto ctx = Ctx();
  auto reader = rt_->StreamContainerStats(ctx.get(), req);
  v1::StreamContainerStatsResponse msg;
  std::set<std::string> ids;
  int messages = 0;
  while (reader->Read(&msg)) {
    ++messages;
    EXPECT_GE(msg.container_stats_size(), 1);  // lists of at least one item
    EXPECT_LE(msg.container_stats_size(), 2);  // the server was started with --chunk 2
    for (const auto& s : msg.container_stats()) EXPECT_TRUE(ids.insert(s.attributes().id()).second);
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(messages, 2);
  std::set<std::string> listed;
  auto all = List();
  for (const auto& s : all.stats()) listed.insert(s.attributes().id());
  EXPECT_EQ(ids, listed);

  // No match: the stream ends with no message at all.
  (*req.mutable_filter()->mutable_label_selector())["app"] = "none";
  auto ctx2 = Ctx();
  auto empty = rt_->StreamContainerStats(ctx2.get(), req);
  EXPECT_FALSE(empty->Read(&msg));
  EXPECT_TRUE(empty->Finish().ok());
}

TEST_F(UpstreamClient, PodSandboxStats) {
  v1::PodSandboxStatsRequest req;
  req.set_pod_sandbox_id(testing::kSandboxA);
  v1::PodSandboxStatsResponse resp;
  ASSERT_TRUE(rt_->PodSandboxStats(Ctx().get(), req, &resp).ok());
  const auto& p = resp.stats();
  const CgroupStats& pod = PodCg(testing::kPodAUid);
  EXPECT_EQ(p.attributes().id(), testing::kSandboxA);
  EXPECT_EQ(p.attributes().metadata().name(), "web");
  EXPECT_EQ(p.attributes().metadata().namespace_(), "prod");
  EXPECT_EQ(p.attributes().metadata().uid(), testing::kPodAUid);
  EXPECT_EQ(p.attributes().metadata().attempt(), 1u);
  EXPECT_EQ(p.attributes().labels().at("app"), "web");
  EXPECT_EQ(p.linux().cpu().usage_core_nano_seconds().value(), *pod.cpu.usage_ns);
  EXPECT_EQ(p.linux().memory().working_set_bytes().value(), *pod.memory.working_set_bytes);
  // The pod's processes as containerd counts them: the app containers', not the pause
  // process the pod cgroup's subtree count includes.
  EXPECT_EQ(p.linux().process().process_count().value(),
            *Cg(testing::kNginx).process.processes + *Cg(testing::kSidecar).process.processes);
  EXPECT_EQ(*pod.process.processes,
            p.linux().process().process_count().value() + *Cg(testing::kSandboxA).process.processes);
  const auto& net = p.linux().network();
  EXPECT_EQ(net.default_interface().name(), "eth0");
  EXPECT_EQ(net.default_interface().rx_bytes().value(), 5'000'000u);
  EXPECT_EQ(net.default_interface().rx_errors().value(), 3u);
  EXPECT_EQ(net.default_interface().tx_bytes().value(), 7'000'000u);
  EXPECT_EQ(net.default_interface().tx_errors().value(), 1u);
  ASSERT_EQ(net.interfaces_size(), 1);  // eth1; neither the default nor lo
  EXPECT_EQ(net.interfaces(0).name(), "eth1");
  EXPECT_EQ(p.linux().containers_size(), 2);
  ExpectPsi(p.linux().cpu().psi(), pod.cpu.psi);

  req.set_pod_sandbox_id("zzz");
  EXPECT_EQ(rt_->PodSandboxStats(Ctx().get(), req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  req.clear_pod_sandbox_id();
  EXPECT_EQ(rt_->PodSandboxStats(Ctx().get(), req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(UpstreamClient, ListAndStreamPodSandboxStats) {
  v1::ListPodSandboxStatsRequest req;
  v1::ListPodSandboxStatsResponse resp;
  ASSERT_TRUE(rt_->ListPodSandboxStats(Ctx().get(), req, &resp).ok());
  ASSERT_EQ(resp.stats_size(), 2);
  std::set<std::string> ids;
  for (const auto& p : resp.stats()) ids.insert(p.attributes().id());
  EXPECT_EQ(ids, (std::set<std::string>{testing::kSandboxA, testing::kPodBUid}));
  for (const auto& p : resp.stats()) {
    if (p.attributes().id() == testing::kPodBUid) {
      EXPECT_FALSE(p.linux().has_network());  // host network: no pod namespace
      EXPECT_EQ(p.attributes().metadata().uid(), testing::kPodBUid);
    }
  }
  (*req.mutable_filter()->mutable_label_selector())["app"] = "web";
  ASSERT_TRUE(rt_->ListPodSandboxStats(Ctx().get(), req, &resp).ok());
  ASSERT_EQ(resp.stats_size(), 1);
  EXPECT_EQ(resp.stats(0).attributes().id(), testing::kSandboxA);

  v1::StreamPodSandboxStatsRequest sreq;
  sreq.mutable_filter()->set_id(testing::kPodBUid.substr(0, 8));
  auto ctx = Ctx();
  auto reader = rt_->StreamPodSandboxStats(ctx.get(), sreq);
  v1::StreamPodSandboxStatsResponse msg;
  int items = 0;
  while (reader->Read(&msg)) items += msg.pod_sandbox_stats_size();
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(items, 1);
}

const std::vector<std::string>& KepFamilies() {
  static const std::vector<std::string> f = {
      "container_cpu_cfs_periods_total", "container_cpu_cfs_throttled_periods_total",
      "container_cpu_cfs_throttled_seconds_total", "container_cpu_system_seconds_total",
      "container_cpu_usage_seconds_total", "container_cpu_user_seconds_total", "container_file_descriptors",
      "container_fs_limit_bytes", "container_fs_usage_bytes", "container_fs_reads_bytes_total",
      "container_fs_reads_total", "container_fs_writes_bytes_total", "container_fs_writes_total", "container_last_seen",
      "container_memory_cache", "container_memory_failures_total", "container_memory_mapped_file",
      "container_memory_max_usage_bytes", "container_memory_rss", "container_memory_swap",
      "container_memory_usage_bytes", "container_memory_working_set_bytes", "container_oom_events_total",
      "container_processes", "container_sockets", "container_spec_cpu_period", "container_spec_cpu_shares",
      "container_spec_memory_limit_bytes", "container_spec_memory_swap_limit_bytes", "container_start_time_seconds",
      "container_threads", "container_threads_max", "container_network_receive_bytes_total",
      "container_network_receive_packets_total", "container_network_receive_errors_total",
      "container_network_receive_packets_dropped_total", "container_network_transmit_bytes_total",
      "container_network_transmit_packets_total", "container_network_transmit_errors_total",
      "container_network_transmit_packets_dropped_total",
      // optional
      "container_blkio_device_usage_total", "container_fs_inodes_free", "container_fs_inodes_total",
      "container_hugetlb_usage_bytes", "container_hugetlb_max_usage_bytes", "container_spec_cpu_quota",
      "container_spec_memory_reservation_limit_bytes", "container_ulimits_soft",
      "container_pressure_cpu_stalled_seconds_total", "container_pressure_cpu_waiting_seconds_total",
      "container_pressure_memory_stalled_seconds_total", "container_pressure_memory_waiting_seconds_total",
      "container_pressure_io_stalled_seconds_total", "container_pressure_io_waiting_seconds_total"};
  return f;
}

TEST_F(UpstreamClient, MetricDescriptorsCoverKep2371) {
  v1::ListMetricDescriptorsResponse resp;
  ASSERT_TRUE(rt_->ListMetricDescriptors(Ctx().get(), v1::ListMetricDescriptorsRequest(), &resp).ok());
  std::map<std::string, const v1::MetricDescriptor*> by_name;
  for (const auto& d : resp.descriptors()) EXPECT_TRUE(by_name.emplace(d.name(), &d).second) << d.name();
  for (const auto& name : KepFamilies()) {
    ASSERT_TRUE(by_name.count(name)) << name;
    const auto& keys = by_name[name]->label_keys();
    std::vector<std::string> k(keys.begin(), keys.end());
    // The runtimes' key set (containerd 2.3; CRI-O dropped `name` to match), in its order.
    ASSERT_GE(k.size(), 5u) << name;
    EXPECT_EQ(std::vector<std::string>(k.begin(), k.begin() + 5),
              (std::vector<std::string>{"pod", "namespace", "container", "id", "image"}))
        << name;
    EXPECT_EQ(std::find(k.begin(), k.end(), "name"), k.end()) << name;
    EXPECT_FALSE(by_name[name]->help().empty());
    // Seconds families have an exact nanoseconds sibling with the same labels.
    auto pos = name.find("_seconds");
    if (pos != std::string::npos) {
      std::string ns = name;
      ns.replace(pos, 8, "_nanoseconds");
      ASSERT_TRUE(by_name.count(ns)) << ns;
      EXPECT_EQ(by_name[ns]->label_keys_size(), keys.size());
    }
  }
  EXPECT_NE(std::find(by_name["container_network_receive_bytes_total"]->label_keys().begin(),
                      by_name["container_network_receive_bytes_total"]->label_keys().end(), "interface"),
            by_name["container_network_receive_bytes_total"]->label_keys().end());
}

TEST_F(UpstreamClient, PodSandboxMetrics) {
  v1::ListMetricDescriptorsResponse desc;
  ASSERT_TRUE(rt_->ListMetricDescriptors(Ctx().get(), v1::ListMetricDescriptorsRequest(), &desc).ok());
  std::map<std::string, std::vector<std::string>> keys;
  for (const auto& d : desc.descriptors()) keys[d.name()] = {d.label_keys().begin(), d.label_keys().end()};

  v1::ListPodSandboxMetricsResponse resp;
  ASSERT_TRUE(rt_->ListPodSandboxMetrics(Ctx().get(), v1::ListPodSandboxMetricsRequest(), &resp).ok());
  ASSERT_EQ(resp.pod_metrics_size(), 2);
  const v1::PodSandboxMetrics* a = nullptr;
  for (const auto& p : resp.pod_metrics()) {
    if (p.pod_sandbox_id() == testing::kSandboxA) a = &p;
  }
  ASSERT_NE(a, nullptr);
  auto label = [&](const v1::Metric& m, const std::string& key) {
    const auto& k = keys.at(m.name());
    return m.label_values(static_cast<int>(std::find(k.begin(), k.end(), key) - k.begin()));
  };
  auto check_shape = [&](const v1::Metric& m) {
    ASSERT_TRUE(keys.count(m.name())) << m.name() << " has no descriptor";
    EXPECT_EQ(static_cast<size_t>(m.label_values_size()), keys.at(m.name()).size()) << m.name();
    EXPECT_EQ(m.timestamp(), testing::kTimestampNs);
  };
  int net_series = 0;
  for (const auto& m : a->metrics()) {
    check_shape(m);
    // Pod-level series: container and image empty, as the kubelet's cAdvisor labels a pod
    // cgroup and containerd its pod-level metrics; id is the sandbox id.
    EXPECT_EQ(label(m, "container"), "");
    EXPECT_EQ(label(m, "image"), "");
    EXPECT_EQ(label(m, "id"), testing::kSandboxA);
    EXPECT_EQ(label(m, "pod"), "web");
    EXPECT_EQ(label(m, "namespace"), "prod");
    if (m.name() == "container_network_receive_bytes_total" && label(m, "interface") == "eth0") {
      EXPECT_EQ(m.value().value(), 5'000'000u);
      EXPECT_EQ(m.metric_type(), v1::COUNTER);
    }
    if (m.name().rfind("container_network_", 0) == 0) ++net_series;
  }
  EXPECT_EQ(net_series, 8 * 2);  // eight families x (eth0, eth1); lo left out
  const CgroupStats& nginx = Cg(testing::kNginx);
  bool seen_seconds = false, seen_ns = false, seen_pressure = false;
  int seen_process = 0, seen_hugetlb = 0, seen_fs = 0, seen_blkio = 0;
  for (const auto& cm : a->container_metrics()) {
    for (const auto& m : cm.metrics()) {
      check_shape(m);
      if (cm.container_id() != testing::kNginx) continue;
      EXPECT_EQ(label(m, "container"), "nginx");
      EXPECT_EQ(label(m, "image"), "docker.io/library/nginx:1.25");
      EXPECT_EQ(label(m, "id"), testing::kNginx);
      if (m.name() == "container_cpu_usage_seconds_total") {
        seen_seconds = true;
        EXPECT_EQ(m.value().value(), *nginx.cpu.usage_ns / 1000000000);  // whole seconds
        EXPECT_EQ(label(m, "cpu"), "total");
      }
      if (m.name() == "container_cpu_usage_nanoseconds_total") {
        seen_ns = true;
        EXPECT_EQ(m.value().value(), *nginx.cpu.usage_ns);  // exact
      }
      if (m.name() == "container_pressure_memory_stalled_nanoseconds_total") {
        seen_pressure = true;
        EXPECT_EQ(m.value().value(), nginx.memory.psi.full->total_us * 1000);
      }
      if (m.name() == "container_memory_working_set_bytes") {
        EXPECT_EQ(m.value().value(), *nginx.memory.working_set_bytes);
        EXPECT_EQ(m.metric_type(), v1::GAUGE);
      }
      if (m.name() == "container_start_time_seconds") {
        EXPECT_EQ(m.value().value(), 1'690'000'001u);
      }
      // The families that need the per-process scan, hugetlb and the runtime's writable layer.
      const ContainerMetadata& meta = *nginx.id.meta;
      if (m.name() == "container_file_descriptors") {
        ++seen_process;
        EXPECT_EQ(m.value().value(), *nginx.process.file_descriptors);
      }
      if (m.name() == "container_sockets") {
        ++seen_process;
        EXPECT_EQ(m.value().value(), *nginx.process.sockets);
      }
      if (m.name() == "container_ulimits_soft") {
        ++seen_process;
        EXPECT_EQ(label(m, "ulimit"), "max_open_files");
        EXPECT_EQ(m.value().value(), *nginx.process.max_open_files_soft);
      }
      if (m.name() == "container_hugetlb_usage_bytes" || m.name() == "container_hugetlb_max_usage_bytes") {
        bool max = m.name() == "container_hugetlb_max_usage_bytes";
        for (const auto& h : nginx.memory.hugetlb) {
          if (h.page_size != label(m, "pagesize")) continue;
          ++seen_hugetlb;
          EXPECT_EQ(m.value().value(), max ? *h.max_usage_bytes : *h.usage_bytes);
        }
      }
      std::map<std::string, uint64_t> fs = {{"container_fs_usage_bytes", *meta.writable_layer.used_bytes},
                                            {"container_fs_limit_bytes", *meta.writable_layer.capacity_bytes},
                                            {"container_fs_inodes_free", *meta.writable_layer.inodes_free},
                                            {"container_fs_inodes_total", *meta.writable_layer.inodes_total}};
      if (fs.count(m.name())) {
        EXPECT_EQ(label(m, "device"), meta.writable_layer.device);
        EXPECT_EQ(m.value().value(), fs[m.name()]) << m.name();
        EXPECT_EQ(m.metric_type(), v1::GAUGE) << m.name();
        ++seen_fs;
      }
      if (m.name() == "container_blkio_device_usage_total") {
        ++seen_blkio;
        EXPECT_EQ(label(m, "major"), "8");
        EXPECT_EQ(label(m, "minor"), "0");
        const auto& d = nginx.io.devices.at(0);
        EXPECT_EQ(m.value().value(), label(m, "operation") == "Read" ? *d.read_bytes : *d.write_bytes);
      }
    }
  }
  EXPECT_TRUE(seen_seconds && seen_ns && seen_pressure);
  EXPECT_EQ(seen_process, 3);
  EXPECT_EQ(seen_hugetlb, 4);  // two page sizes x (usage, max usage)
  EXPECT_EQ(seen_fs, 4);
  EXPECT_EQ(seen_blkio, 2);  // Read, Write

  auto ctx = Ctx();
  auto reader = rt_->StreamPodSandboxMetrics(ctx.get(), v1::StreamPodSandboxMetricsRequest());
  v1::StreamPodSandboxMetricsResponse msg;
  int pods = 0;
  while (reader->Read(&msg)) pods += msg.pod_sandbox_metrics_size();
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(pods, 2);
}

// Every RPC statlet does not serve answers UNIMPLEMENTED: walk both service descriptors
// and call each remaining method with an empty request.
TEST_F(UpstreamClient, EveryOtherRpcIsUnimplemented) {
  const std::set<std::string> served = {"Version",
                                        "ContainerStats",
                                        "ListContainerStats",
                                        "StreamContainerStats",
                                        "PodSandboxStats",
                                        "ListPodSandboxStats",
                                        "StreamPodSandboxStats",
                                        "ListMetricDescriptors",
                                        "ListPodSandboxMetrics",
                                        "StreamPodSandboxMetrics"};
  grpc::GenericStub generic(*channel_);
  int called = 0;
  const auto* file = v1::VersionRequest::descriptor()->file();
  const auto* runtime_service = file->FindServiceByName("RuntimeService");
  const auto* image_service = file->FindServiceByName("ImageService");
  ASSERT_NE(runtime_service, nullptr);
  ASSERT_NE(image_service, nullptr);
  for (const auto* svc : {runtime_service, image_service}) {
    for (int i = 0; i < svc->method_count(); ++i) {
      const auto* m = svc->method(i);
      if (svc == runtime_service && served.count(m->name())) continue;
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      grpc::ByteBuffer out;
      grpc::CompletionQueue cq;
      grpc::ByteBuffer in;  // an empty message
      grpc::Slice empty("");
      in = grpc::ByteBuffer(&empty, 1);
      auto call = generic.PrepareUnaryCall(&ctx, "/" + svc->full_name() + "/" + m->name(), in, &cq);
      call->StartCall();
      grpc::Status status;
      call->Finish(&out, &status, reinterpret_cast<void*>(1));
      void* tag;
      bool ok;
      ASSERT_TRUE(cq.Next(&tag, &ok));
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << m->full_name();
      ++called;
    }
  }
  EXPECT_EQ(called, 35 - 10 + 6);
}

TEST_F(UpstreamClient, MalformedRequestIsRejectedAndServerLives) {
  grpc::GenericStub generic(*channel_);
  for (const std::string& bytes : {std::string("\xff\xff\xff\xff", 4), std::string("\x0a\x05\x0a", 3),
                                   std::string("\x0a\x02\x0a\x02\xc3\x28", 6)}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Slice slice(bytes);
    grpc::ByteBuffer in(&slice, 1), out;
    grpc::CompletionQueue cq;
    auto call = generic.PrepareUnaryCall(&ctx, "/runtime.v1.RuntimeService/ListContainerStats", in, &cq);
    call->StartCall();
    grpc::Status status;
    call->Finish(&out, &status, reinterpret_cast<void*>(1));
    void* tag;
    bool ok;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.error_code(), grpc::StatusCode::UNAVAILABLE);  // rejected, not crashed
  }
  EXPECT_EQ(List().stats_size(), 4);  // still serving
}

TEST_F(UpstreamClient, TwoHundredConcurrentCallers) {
  constexpr int kCallers = 200;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  std::vector<v1::ListContainerStatsResponse> answers(kCallers);
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      auto stub = v1::RuntimeService::NewStub(*channel_);
      v1::ListContainerStatsResponse resp;
      auto s = stub->ListContainerStats(Ctx().get(), v1::ListContainerStatsRequest(), &resp);
      v1::ListPodSandboxMetricsResponse metrics;
      auto s2 = stub->ListPodSandboxMetrics(Ctx().get(), v1::ListPodSandboxMetricsRequest(), &metrics);
      if (s.ok() && s2.ok() && resp.stats_size() == 4 && metrics.pod_metrics_size() == 2) ++ok;
      answers[i] = std::move(resp);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kCallers);
  int same = 0;
  for (int i = 0; i < kCallers; ++i) same += google::protobuf::util::MessageDifferencer::Equals(answers[i], answers[0]);
  EXPECT_EQ(same, kCallers);
}

}  // namespace
}  // namespace statlet
