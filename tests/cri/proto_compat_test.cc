// statlet's cri/proto/api.proto against the upstream-shaped tests/cri/upstream/api.proto,
// compared as descriptors: same services and methods (types, streaming), and for every
// message both declare, every statlet field below 1000 exists upstream with the same
// name, number, type and cardinality; statlet's additions are >= 1000 and unknown
// upstream. Messages statlet serves must carry every upstream field.
#include <fstream>
#include <set>
#include <sstream>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <gtest/gtest.h>

namespace statlet {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptorSet;

std::unique_ptr<DescriptorPool> Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  FileDescriptorSet set;
  EXPECT_TRUE(set.ParseFromString(ss.str())) << path;
  auto pool = std::make_unique<DescriptorPool>();
  for (const auto& f : set.file()) EXPECT_NE(pool->BuildFile(f), nullptr) << path;
  return pool;
}

class ProtoCompat : public ::testing::Test {
 protected:
  void SetUp() override {
    statlet_ = Load(STATLET_DESC);
    upstream_ = Load(UPSTREAM_DESC);
    sfile_ = statlet_->FindFileByName("api.proto");
    ufile_ = upstream_->FindFileByName("api.proto");
    ASSERT_NE(sfile_, nullptr);
    ASSERT_NE(ufile_, nullptr);
  }
  std::unique_ptr<DescriptorPool> statlet_, upstream_;
  const google::protobuf::FileDescriptor *sfile_ = nullptr, *ufile_ = nullptr;
};

TEST_F(ProtoCompat, SamePackageServicesAndMethods) {
  EXPECT_EQ(sfile_->package(), "runtime.v1");
  ASSERT_EQ(sfile_->service_count(), ufile_->service_count());
  for (int i = 0; i < ufile_->service_count(); ++i) {
    const auto* u = ufile_->service(i);
    const auto* s = statlet_->FindServiceByName(u->full_name());
    ASSERT_NE(s, nullptr) << u->full_name();
    EXPECT_EQ(s->method_count(), u->method_count()) << u->full_name();
    for (int m = 0; m < u->method_count(); ++m) {
      const auto* um = u->method(m);
      const auto* sm = s->FindMethodByName(um->name());
      ASSERT_NE(sm, nullptr) << um->full_name();
      EXPECT_EQ(sm->input_type()->full_name(), um->input_type()->full_name()) << um->full_name();
      EXPECT_EQ(sm->output_type()->full_name(), um->output_type()->full_name()) << um->full_name();
      EXPECT_EQ(sm->server_streaming(), um->server_streaming()) << um->full_name();
      EXPECT_EQ(sm->client_streaming(), um->client_streaming()) << um->full_name();
    }
  }
}

void CompareField(const FieldDescriptor* s, const FieldDescriptor* u) {
  EXPECT_EQ(s->name(), u->name()) << s->full_name();
  EXPECT_EQ(s->type(), u->type()) << s->full_name();
  EXPECT_EQ(s->is_repeated(), u->is_repeated()) << s->full_name();
  if (s->message_type() != nullptr) {
    EXPECT_EQ(s->message_type()->full_name(), u->message_type()->full_name()) << s->full_name();
  }
  if (s->enum_type() != nullptr) {
    EXPECT_EQ(s->enum_type()->full_name(), u->enum_type()->full_name()) << s->full_name();
  }
}

TEST_F(ProtoCompat, SharedMessagesAgreeFieldByField) {
  int compared = 0;
  for (int i = 0; i < sfile_->message_type_count(); ++i) {
    const Descriptor* s = sfile_->message_type(i);
    const Descriptor* u = upstream_->FindMessageTypeByName(s->full_name());
    if (u == nullptr) {
      EXPECT_EQ(s->name().rfind("Statlet", 0), 0u) << s->full_name() << ": statlet-only messages are named Statlet*";
      continue;
    }
    for (int f = 0; f < s->field_count(); ++f) {
      const FieldDescriptor* sf = s->field(f);
      const FieldDescriptor* uf = u->FindFieldByNumber(sf->number());
      if (sf->number() >= 1000) {
        EXPECT_EQ(uf, nullptr) << sf->full_name() << " collides with upstream";
        continue;
      }
      ASSERT_NE(uf, nullptr) << sf->full_name() << " (" << sf->number() << ") is not an upstream field";
      CompareField(sf, uf);
      ++compared;
    }
  }
  EXPECT_GT(compared, 150);
}

TEST_F(ProtoCompat, EnumsAgree) {
  for (int i = 0; i < sfile_->enum_type_count(); ++i) {
    const auto* s = sfile_->enum_type(i);
    const auto* u = upstream_->FindEnumTypeByName(s->full_name());
    ASSERT_NE(u, nullptr) << s->full_name();
    ASSERT_EQ(s->value_count(), u->value_count()) << s->full_name();
    for (int v = 0; v < s->value_count(); ++v) {
      const auto* uv = u->FindValueByName(s->value(v)->name());
      ASSERT_NE(uv, nullptr) << s->value(v)->full_name();
      EXPECT_EQ(uv->number(), s->value(v)->number()) << s->value(v)->full_name();
    }
  }
}

// Everything statlet serves or reads back must carry every upstream field.
TEST_F(ProtoCompat, ServedAndReadMessagesAreComplete) {
  const std::set<std::string> complete = {
      "VersionRequest", "VersionResponse", "ContainerStatsRequest", "ContainerStatsResponse",
      "ListContainerStatsRequest", "ListContainerStatsResponse", "StreamContainerStatsRequest",
      "StreamContainerStatsResponse", "ContainerStatsFilter", "PodSandboxStatsRequest", "PodSandboxStatsResponse",
      "PodSandboxStatsFilter", "ListPodSandboxStatsRequest", "ListPodSandboxStatsResponse",
      "StreamPodSandboxStatsRequest", "StreamPodSandboxStatsResponse", "PodSandboxAttributes",
      "LinuxPodSandboxStats", "ContainerAttributes", "ContainerStats", "CpuUsage", "MemoryUsage", "SwapUsage",
      "IoUsage", "PsiStats", "PsiData", "FilesystemUsage", "FilesystemIdentifier", "NetworkUsage",
      "NetworkInterfaceUsage", "ProcessUsage", "UInt64Value", "ListMetricDescriptorsRequest",
      "ListMetricDescriptorsResponse", "MetricDescriptor", "ListPodSandboxMetricsRequest",
      "ListPodSandboxMetricsResponse", "StreamPodSandboxMetricsRequest", "StreamPodSandboxMetricsResponse",
      "PodSandboxMetrics", "ContainerMetrics", "Metric", "PodSandboxMetadata", "ContainerMetadata",
      "ListPodSandboxRequest", "ListPodSandboxResponse", "PodSandbox", "PodSandboxFilter",
      "ListContainersRequest", "ListContainersResponse", "Container", "ContainerFilter", "ImageSpec",
      "ContainerStatusRequest", "ContainerStatusResponse"};
  for (const auto& name : complete) {
    const Descriptor* u = upstream_->FindMessageTypeByName("runtime.v1." + name);
    const Descriptor* s = statlet_->FindMessageTypeByName("runtime.v1." + name);
    ASSERT_NE(u, nullptr) << name;
    ASSERT_NE(s, nullptr) << name;
    for (int f = 0; f < u->field_count(); ++f) {
      const FieldDescriptor* sf = s->FindFieldByNumber(u->field(f)->number());
      ASSERT_NE(sf, nullptr) << u->field(f)->full_name() << " missing in statlet's proto";
      CompareField(sf, u->field(f));
    }
  }
}

}  // namespace
}  // namespace statlet
