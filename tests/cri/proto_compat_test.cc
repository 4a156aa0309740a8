// statlet's proto/api.proto against upstream's tests/cri/upstream/v0.36.3/api.proto,
// compared as descriptors: same services and methods (types, streaming), and for every
// message both declare, every statlet field below 1000 exists upstream with the same
// name, number, type and cardinality; statlet's additions are >= 1000 and unknown
// upstream. Messages statlet serves must carry every upstream field.
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

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
  // statlet declares ImageService in image_service.proto (same package); every upstream
  // service must be found in statlet's pool under the same full name.
  for (int i = 0; i < ufile_->service_count(); ++i) {
    const auto* u = ufile_->service(i);
    const auto* s = statlet_->FindServiceByName(u->full_name());
    ASSERT_NE(s, nullptr) << u->full_name();
    // Every upstream method; the only additions are checked by OnlyTheKepMethodsAreAdded.
    EXPECT_GE(s->method_count(), u->method_count()) << u->full_name();
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

// The only methods statlet adds to upstream's services: the KEP-3542 pull-progress streams
// on ImageService, whose messages live in package statlet.kep3542 (a file of their own).
TEST_F(ProtoCompat, OnlyTheKepMethodsAreAdded) {
  std::set<std::string> added;
  for (const char* name : {"runtime.v1.RuntimeService", "runtime.v1.ImageService"}) {
    const auto* s = statlet_->FindServiceByName(name);
    const auto* u = upstream_->FindServiceByName(name);
    ASSERT_NE(s, nullptr) << name;
    ASSERT_NE(u, nullptr) << name;
    for (int m = 0; m < s->method_count(); ++m) {
      if (u->FindMethodByName(s->method(m)->name()) == nullptr) added.insert(s->method(m)->full_name());
    }
  }
  EXPECT_EQ(added, (std::set<std::string>{"runtime.v1.ImageService.PullImageWithProgress",
                                          "runtime.v1.ImageService.PullImageProgress"}));
  const auto* images = statlet_->FindServiceByName("runtime.v1.ImageService");
  const auto* with_progress = images->FindMethodByName("PullImageWithProgress");
  EXPECT_TRUE(with_progress->server_streaming());
  EXPECT_FALSE(with_progress->client_streaming());
  EXPECT_EQ(with_progress->input_type()->full_name(), "statlet.kep3542.PullImageWithProgressRequest");
  EXPECT_EQ(with_progress->output_type()->full_name(), "statlet.kep3542.PullImageWithProgressResponse");
  const auto* progress = images->FindMethodByName("PullImageProgress");
  EXPECT_TRUE(progress->server_streaming());
  EXPECT_EQ(progress->input_type()->full_name(), "runtime.v1.PullImageRequest");
  EXPECT_EQ(progress->output_type()->full_name(), "statlet.kep3542.PullImageProgressResponse");
}

// The KEP messages' numbers: KEP-3542's request (1-5), its response with `details` moved
// from the duplicate 3 to 4, and the 2019 Image Pull Progress KEP's state message (1-4).
TEST_F(ProtoCompat, KepMessagesKeepTheProposalsNumbers) {
  struct Want {
    const char* message;
    std::vector<std::pair<const char*, int>> fields;
  };
  const std::vector<Want> want = {
      {"statlet.kep3542.PullImageWithProgressRequest",
       {{"request", 1}, {"granularity_type", 2}, {"interval", 3}, {"no_progress_timeout", 4}, {"verbosity", 5}}},
      {"statlet.kep3542.PullImageWithProgressResponse",
       {{"image_ref", 1}, {"offset", 2}, {"total", 3}, {"details", 4}}},
      {"statlet.kep3542.PullImageProgressResponse", {{"state", 1}, {"size", 2}, {"current_offset", 3}, {"reason", 4}}},
      {"statlet.kep3542.UInt32Value", {{"value", 1}}},
  };
  for (const Want& w : want) {
    const Descriptor* d = statlet_->FindMessageTypeByName(w.message);
    ASSERT_NE(d, nullptr) << w.message;
    EXPECT_EQ(d->field_count(), static_cast<int>(w.fields.size())) << w.message;
    for (const auto& [name, number] : w.fields) {
      const FieldDescriptor* f = d->FindFieldByName(name);
      ASSERT_NE(f, nullptr) << w.message << "." << name;
      EXPECT_EQ(f->number(), number) << f->full_name();
    }
  }
  const auto* request = statlet_->FindMessageTypeByName("statlet.kep3542.PullImageWithProgressRequest");
  EXPECT_EQ(request->FindFieldByName("request")->message_type()->full_name(), "runtime.v1.PullImageRequest");
  EXPECT_EQ(request->FindFieldByName("interval")->message_type()->full_name(), "runtime.v1.UInt64Value");
  const auto* state = statlet_->FindEnumTypeByName("statlet.kep3542.PullImageState");
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->FindValueByName("STARTED")->number(), 0);
  EXPECT_EQ(state->FindValueByName("PULLING")->number(), 1);
  EXPECT_EQ(state->FindValueByName("FAILED")->number(), 2);
  EXPECT_EQ(state->FindValueByName("DONE")->number(), 3);
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
  const std::set<std::string> complete = {"VersionRequest",
                                          "VersionResponse",
                                          "ContainerStatsRequest",
                                          "ContainerStatsResponse",
                                          "ListContainerStatsRequest",
                                          "ListContainerStatsResponse",
                                          "StreamContainerStatsRequest",
                                          "StreamContainerStatsResponse",
                                          "ContainerStatsFilter",
                                          "PodSandboxStatsRequest",
                                          "PodSandboxStatsResponse",
                                          "PodSandboxStatsFilter",
                                          "ListPodSandboxStatsRequest",
                                          "ListPodSandboxStatsResponse",
                                          "StreamPodSandboxStatsRequest",
                                          "StreamPodSandboxStatsResponse",
                                          "PodSandboxAttributes",
                                          "LinuxPodSandboxStats",
                                          "ContainerAttributes",
                                          "ContainerStats",
                                          "CpuUsage",
                                          "MemoryUsage",
                                          "SwapUsage",
                                          "IoUsage",
                                          "PsiStats",
                                          "PsiData",
                                          "FilesystemUsage",
                                          "FilesystemIdentifier",
                                          "NetworkUsage",
                                          "NetworkInterfaceUsage",
                                          "ProcessUsage",
                                          "UInt64Value",
                                          "ListMetricDescriptorsRequest",
                                          "ListMetricDescriptorsResponse",
                                          "MetricDescriptor",
                                          "ListPodSandboxMetricsRequest",
                                          "ListPodSandboxMetricsResponse",
                                          "StreamPodSandboxMetricsRequest",
                                          "StreamPodSandboxMetricsResponse",
                                          "PodSandboxMetrics",
                                          "ContainerMetrics",
                                          "Metric",
                                          "PodSandboxMetadata",
                                          "ContainerMetadata",
                                          "ListPodSandboxRequest",
                                          "ListPodSandboxResponse",
                                          "PodSandbox",
                                          "PodSandboxFilter",
                                          "ListContainersRequest",
                                          "ListContainersResponse",
                                          "Container",
                                          "ContainerFilter",
                                          "ImageSpec",
                                          "ContainerStatusRequest",
                                          "ContainerStatusResponse"};
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
