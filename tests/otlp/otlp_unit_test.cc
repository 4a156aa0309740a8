// The OTLP exporter's rules without a network: OTEL_* layering under the YAML file and the
// flags, the OTLP/HTTP URL, Retry-After and gRPC RetryInfo, request splitting under a size
// limit, the run-queue histogram as an explicit-bucket Histogram, and the node's metrics
// (the image pull families) on a resource of their own, read back by a decoder apart
// from statlet's (Debian's protoc with the opentelemetry-proto files under proto/).
#include <gtest/gtest.h>
#include <unistd.h>

#include <google/protobuf/text_format.h>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "cmd/daemon_options.h"
#include "exporters/otlp/otlp_encoder.h"
#include "exporters/otlp/otlp_mapping.h"
#include "exporters/otlp/otlp_options.h"
#include "exporters/otlp/otlp_transport.h"
#include "google/rpc/status.pb.h"
#include "metrics/container_oom_kills.h"
#include "metrics/exit_families.h"
#include "metrics/machine_families.h"
#include "metrics/snapshot_samples.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "pulls/observed_pulls.h"
#include "pulls/pull_engine.h"
#include "pulls/pull_metrics.h"
#include "pulls/status_writer.h"
#include "tests/support/child_process.h"
#include "tests/support/snapshot_builder.h"

namespace statlet::otlp {
namespace {

namespace pm = opentelemetry::proto::metrics::v1;
using ExportRequest = opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using std::chrono::milliseconds;

// ---- OTEL_* variables -------------------------------------------------------------------

Status Apply(const std::map<std::string, std::string>& env, OtlpOptions* o) {
  return ApplyEnvironment(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      o);
}

TEST(OtlpEnvironment, SignalSpecificWinsOverGeneric) {
  OtlpOptions o;
  ASSERT_TRUE(Apply({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"},
                     {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:9999/custom"},
                     {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                     {"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "1000"},
                     {"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "2500"},
                     {"OTEL_EXPORTER_OTLP_COMPRESSION", "none"},
                     {"OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip"},
                     {"OTEL_EXPORTER_OTLP_HEADERS", "a=generic"},
                     {"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "b=metrics"}},
                    &o)
                  .ok());
  EXPECT_EQ(o.endpoint, "http://metrics:9999/custom");
  EXPECT_TRUE(o.endpoint_is_full_url);
  EXPECT_EQ(o.protocol, Protocol::kGrpc);
  EXPECT_EQ(o.timeout, milliseconds(2500));
  EXPECT_TRUE(o.gzip);
  ASSERT_EQ(o.headers.size(), 1u);
  EXPECT_EQ(o.headers[0], std::make_pair(std::string("b"), std::string("metrics")));
}

TEST(OtlpEnvironment, GenericAppliesAndEmptyIsUnset) {
  OtlpOptions o;
  ASSERT_TRUE(Apply({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"},
                     {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", ""},
                     {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "750"},
                     {"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"},
                     {"OTEL_METRIC_EXPORT_INTERVAL", "15000"},
                     {"OTEL_SERVICE_NAME", ""}},
                    &o)
                  .ok());
  EXPECT_EQ(o.endpoint, "http://generic:4318");
  EXPECT_FALSE(o.endpoint_is_full_url);
  EXPECT_EQ(o.protocol, Protocol::kGrpc);
  EXPECT_EQ(o.timeout, milliseconds(750));
  EXPECT_TRUE(o.gzip);
  EXPECT_EQ(o.interval, milliseconds(15000));
  EXPECT_EQ(o.service_name, "statlet");
}

TEST(OtlpEnvironment, HeadersArePercentDecodedAndTrimmed) {
  OtlpOptions o;
  ASSERT_TRUE(
      Apply({{"OTEL_EXPORTER_OTLP_HEADERS", " api-key = s%3Dcr%2Ct , Authorization=Basic%20dXNlcjpwYXNz,,"}}, &o).ok());
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[0].first, "api-key");
  EXPECT_EQ(o.headers[0].second, "s=cr,t");
  EXPECT_EQ(o.headers[1].first, "Authorization");
  EXPECT_EQ(o.headers[1].second, "Basic dXNlcjpwYXNz");
}

TEST(OtlpEnvironment, MalformedValuesAreErrors) {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"},
                                                        {"OTEL_EXPORTER_OTLP_HEADERS", "=v"},
                                                        {"OTEL_EXPORTER_OTLP_HEADERS", "k=%4"},
                                                        {"OTEL_EXPORTER_OTLP_HEADERS", "k=%zz"},
                                                        {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
                                                        {"OTEL_EXPORTER_OTLP_TIMEOUT", "10s"},
                                                        {"OTEL_EXPORTER_OTLP_TIMEOUT", "-1"},
                                                        {"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"},
                                                        {"OTEL_RESOURCE_ATTRIBUTES", "a=1,b"}}) {
    OtlpOptions o;
    EXPECT_FALSE(Apply({{name, value}}, &o).ok()) << name << "=" << value;
  }
}

// Sets variables for one scope of a test (the daemon's parser reads the real environment).
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars) {
    for (const auto& [k, v] : vars) {
      ::setenv(k.c_str(), v.c_str(), 1);
      names_.push_back(k);
    }
  }
  ~ScopedEnv() {
    for (const auto& k : names_) ::unsetenv(k.c_str());
  }

 private:
  std::vector<std::string> names_;
};

std::string TempYaml(const std::string& text) {
  char path[] = "/tmp/statlet-otlp-unit-XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(OtlpEnvironment, FlagsOverYamlOverEnvironment) {
  ScopedEnv env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"},
                 {"OTEL_EXPORTER_OTLP_TIMEOUT", "1111"},
                 {"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"},
                 {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
                 {"OTEL_SERVICE_NAME", "from-env"}});
  const std::string yaml = TempYaml("otlp:\n  endpoint: http://yaml:4318\n  timeout: 2s\n  protocol: http/protobuf\n");
  DaemonOptions o;
  ASSERT_TRUE(ParseDaemonOptions({"--config.file=" + yaml, "--otlp.timeout=3s"}, &o).ok());
  ::unlink(yaml.c_str());
  EXPECT_EQ(o.otlp.endpoint, "http://yaml:4318");       // YAML over the environment
  EXPECT_EQ(o.otlp.timeout, milliseconds(3000));        // the flag over YAML and environment
  EXPECT_EQ(o.otlp.protocol, Protocol::kHttpProtobuf);  // YAML over the environment
  EXPECT_TRUE(o.otlp.gzip);                             // only the environment set it
  EXPECT_EQ(o.otlp.service_name, "from-env");
}

TEST(OtlpEnvironment, FlagEndpointIsABaseUrlEvenOverTheMetricsVariable) {
  ScopedEnv env(std::map<std::string, std::string>{{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://env:4318/full"}});
  DaemonOptions from_env;
  ASSERT_TRUE(ParseDaemonOptions({}, &from_env).ok());
  EXPECT_EQ(HttpUrl(from_env.otlp), "http://env:4318/full");
  DaemonOptions o;
  ASSERT_TRUE(ParseDaemonOptions({"--otlp.endpoint=http://flag:4318"}, &o).ok());
  EXPECT_EQ(HttpUrl(o.otlp), "http://flag:4318/v1/metrics");
}

// ---- OTLP/HTTP URL ----------------------------------------------------------------------

TEST(OtlpHttpUrl, GenericEndpointGetsTheSignalPathAppended) {
  OtlpOptions o;
  o.endpoint = "http://collector:4318";
  EXPECT_EQ(HttpUrl(o), "http://collector:4318/v1/metrics");
  o.endpoint = "http://collector:4318/";
  EXPECT_EQ(HttpUrl(o), "http://collector:4318/v1/metrics");
  o.endpoint = "https://gateway.example/otlp";
  EXPECT_EQ(HttpUrl(o), "https://gateway.example/otlp/v1/metrics");
}

TEST(OtlpHttpUrl, MetricsEndpointIsUsedAsItIs) {
  OtlpOptions o;
  o.endpoint_is_full_url = true;
  o.endpoint = "http://collector:4318/custom/path";
  EXPECT_EQ(HttpUrl(o), "http://collector:4318/custom/path");
  o.endpoint = "http://collector:4318/v1/metrics";
  EXPECT_EQ(HttpUrl(o), "http://collector:4318/v1/metrics");
  o.endpoint = "http://collector:4318";  // no path: the root
  EXPECT_EQ(HttpUrl(o), "http://collector:4318/");
}

TEST(OtlpHttpUrl, NoSchemeIsHttpsUnlessInsecure) {
  OtlpOptions o;
  o.endpoint = "collector:4318";
  EXPECT_EQ(HttpUrl(o), "https://collector:4318/v1/metrics");
  o.insecure = true;
  EXPECT_EQ(HttpUrl(o), "http://collector:4318/v1/metrics");
}

// ---- Retry-After and RetryInfo ----------------------------------------------------------

TEST(OtlpRetryAfter, DeltaSeconds) {
  const auto now = std::chrono::system_clock::now();
  EXPECT_EQ(ParseRetryAfter("2", now), milliseconds(2000));
  EXPECT_EQ(ParseRetryAfter("0", now), milliseconds(0));
  EXPECT_EQ(ParseRetryAfter("120", now), milliseconds(120000));
  EXPECT_FALSE(ParseRetryAfter("", now));
  EXPECT_FALSE(ParseRetryAfter("soon", now));
  EXPECT_FALSE(ParseRetryAfter("99999999999999999999", now));  // no overflow
}

TEST(OtlpRetryAfter, HttpDate) {
  // Wed, 21 Oct 2015 07:28:00 GMT = 1445412480.
  const auto at = std::chrono::system_clock::from_time_t(1445412480);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", at - std::chrono::seconds(30)), milliseconds(30000));
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", at + std::chrono::seconds(5)), milliseconds(0));
}

std::string StatusWith(const std::vector<google::protobuf::Message*>& details) {
  google::rpc::Status s;
  s.set_code(14);
  s.set_message("unavailable");
  for (auto* d : details) s.add_details()->PackFrom(*d);
  return s.SerializeAsString();
}

TEST(OtlpGrpcRetryInfo, ReadsRetryDelay) {
  google::rpc::RetryInfo info;
  info.mutable_retry_delay()->set_seconds(3);
  info.mutable_retry_delay()->set_nanos(250000000);
  EXPECT_EQ(GrpcRetryDelay(StatusWith({&info})), milliseconds(3250));
  // Behind another detail.
  google::rpc::Status other;
  other.set_message("not a RetryInfo");
  EXPECT_EQ(GrpcRetryDelay(StatusWith({&other, &info})), milliseconds(3250));
}

TEST(OtlpGrpcRetryInfo, NoneWhenAbsentOrMalformed) {
  EXPECT_FALSE(GrpcRetryDelay(""));
  EXPECT_FALSE(GrpcRetryDelay(StatusWith({})));
  google::rpc::Status other;
  EXPECT_FALSE(GrpcRetryDelay(StatusWith({&other})));
  EXPECT_FALSE(GrpcRetryDelay("\xff\xff\xff garbage"));
  google::rpc::RetryInfo negative;
  negative.mutable_retry_delay()->set_seconds(-5);
  EXPECT_FALSE(GrpcRetryDelay(StatusWith({&negative})));
}

// ---- Encoding ---------------------------------------------------------------------------

std::string ResourceAttr(const pm::ResourceMetrics& rm, const std::string& key) {
  for (const auto& kv : rm.resource().attributes()) {
    if (kv.key() == key) return kv.value().string_value();
  }
  return "";
}

struct Encoded {
  std::vector<ExportRequest> requests;
  // cgroup path -> metric names (in order of arrival)
  std::map<std::string, std::vector<std::string>> metrics;
  uint64_t points = 0;
};

Encoded EncodeWith(const Snapshot& s, size_t limit) {
  OtlpEncoder enc(NodeResource{{{"host.name", "node-a"}}}, {}, limit);
  Encoded e;
  EncodedExport wire;
  enc.Encode(s, &wire);
  for (std::string_view bytes : wire.requests) {
    EXPECT_TRUE(e.requests.emplace_back().ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
    EXPECT_EQ(e.requests.back().ByteSizeLong(), bytes.size()) << "a request parses back to its own size";
  }
  e.points = enc.last_points();
  for (const ExportRequest& r : e.requests) {
    for (const auto& rm : r.resource_metrics()) {
      auto& names = e.metrics[ResourceAttr(rm, "statlet.cgroup.path")];
      for (const auto& sm : rm.scope_metrics()) {
        for (const auto& m : sm.metrics()) names.push_back(m.name());
      }
    }
  }
  return e;
}

TEST(OtlpEncoder, SplitsRequestsUnderTheLimit) {
  const Snapshot s = testing::MakeNodeSnapshot({.pods = 40, .containers_per_pod = 3});
  const Encoded whole = EncodeWith(s, 64 << 20);
  ASSERT_EQ(whole.requests.size(), 1u);
  const size_t total = whole.requests[0].ByteSizeLong();
  const size_t limit = total / 7;
  const Encoded split = EncodeWith(s, limit);
  EXPECT_GE(split.requests.size(), 7u);
  for (const ExportRequest& r : split.requests) EXPECT_LE(r.ByteSizeLong(), limit);
  // Every resource and every metric arrives once, whichever request carries it.
  EXPECT_EQ(split.metrics, whole.metrics);
  EXPECT_EQ(split.points, whole.points);
}

TEST(OtlpEncoder, SplitsAResourceLargerThanTheLimitByMetric) {
  const Snapshot s = testing::MakeNodeSnapshot({.pods = 2, .containers_per_pod = 1});
  const Encoded whole = EncodeWith(s, 64 << 20);
  size_t largest = 0, largest_metric = 0;
  std::string path;
  for (const auto& rm : whole.requests[0].resource_metrics()) {
    if (rm.ByteSizeLong() > largest) {
      largest = rm.ByteSizeLong();
      path = ResourceAttr(rm, "statlet.cgroup.path");
    }
    for (const auto& m : rm.scope_metrics(0).metrics()) largest_metric = std::max(largest_metric, m.ByteSizeLong());
  }
  // Under the largest resource, still above its resource header plus its largest metric.
  const size_t limit = std::max(largest / 3, largest_metric + 1024);
  ASSERT_LT(limit, largest);
  const Encoded split = EncodeWith(s, limit);
  size_t pieces = 0;
  for (const ExportRequest& r : split.requests) {
    EXPECT_LE(r.ByteSizeLong(), limit);
    for (const auto& rm : r.resource_metrics()) {
      if (ResourceAttr(rm, "statlet.cgroup.path") != path) continue;
      ++pieces;
      // Each piece is a whole resource: the same attributes and scope as the original.
      EXPECT_EQ(ResourceAttr(rm, "host.name"), "node-a");
      ASSERT_EQ(rm.scope_metrics_size(), 1);
      EXPECT_EQ(rm.scope_metrics(0).scope().name(), "statlet");
      EXPECT_GT(rm.scope_metrics(0).metrics_size(), 0);
    }
  }
  EXPECT_GE(pieces, 2u);
  EXPECT_EQ(split.metrics, whole.metrics);
  EXPECT_EQ(split.points, whole.points);
}

// k8s.pod.network.*: the pod namespace's interfaces that container_network_* counts.
std::multiset<std::string> PodNetworkInterfaces(const metrics::SampleRules& rules) {
  const Snapshot s = testing::MakeNodeSnapshot({.pods = 2, .containers_per_pod = 1});
  OtlpEncoder enc(NodeResource{}, rules, 64 << 20);
  EncodedExport wire;
  enc.Encode(s, &wire);
  std::multiset<std::string> interfaces;
  for (std::string_view bytes : wire.requests) {
    ExportRequest r;
    EXPECT_TRUE(r.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
    for (const auto& rm : r.resource_metrics()) {
      for (const auto& m : rm.scope_metrics(0).metrics()) {
        if (m.name() != "k8s.pod.network.io" && m.name() != "k8s.pod.network.errors") continue;
        for (const auto& p : m.sum().data_points()) {
          for (const auto& kv : p.attributes()) {
            if (kv.key() == "network.interface.name") interfaces.insert(m.name() + " " + kv.value().string_value());
          }
        }
      }
    }
  }
  return interfaces;
}

TEST(OtlpEncoder, PodNetworkLeavesOutTheInterfacesContainerNetworkLeavesOut) {
  // Each pod's namespace has lo and eth0; two directions, two pods.
  EXPECT_EQ(PodNetworkInterfaces({}),
            (std::multiset<std::string>{"k8s.pod.network.errors eth0", "k8s.pod.network.errors eth0",
                                        "k8s.pod.network.errors eth0", "k8s.pod.network.errors eth0",
                                        "k8s.pod.network.io eth0", "k8s.pod.network.io eth0", "k8s.pod.network.io eth0",
                                        "k8s.pod.network.io eth0"}));
  metrics::SampleRules every;
  every.ignored_interface_prefixes = {};  // --metrics.ignored-interfaces=""
  EXPECT_EQ(PodNetworkInterfaces(every).count("k8s.pod.network.io lo"), 4u);
  metrics::SampleRules no_eth;
  no_eth.ignored_interface_prefixes = {"eth"};
  EXPECT_EQ(PodNetworkInterfaces(no_eth).count("k8s.pod.network.io lo"), 4u);
  EXPECT_EQ(PodNetworkInterfaces(no_eth).count("k8s.pod.network.io eth0"), 0u);
}

TEST(OtlpEncoder, RunQueueLatencyIsAnExplicitBucketHistogram) {
  const Snapshot s = testing::MakeNodeSnapshot({.pods = 3, .containers_per_pod = 1, .with_bpf = true});
  const Encoded e = EncodeWith(s, 64 << 20);
  size_t checked = 0;
  for (const auto& rm : e.requests[0].resource_metrics()) {
    const std::string path = ResourceAttr(rm, "statlet.cgroup.path");
    const CgroupStats* c = nullptr;
    for (const CgroupStats& cg : s.cgroups) {
      if (cg.id.cgroup_path == path) c = &cg;
    }
    ASSERT_NE(c, nullptr) << path;
    for (const auto& m : rm.scope_metrics(0).metrics()) {
      if (m.name() != "statlet.cpu.runqueue.latency") continue;
      ASSERT_TRUE(m.has_histogram()) << m.DebugString();
      EXPECT_EQ(m.unit(), "s");
      EXPECT_EQ(m.histogram().aggregation_temporality(), pm::AGGREGATION_TEMPORALITY_CUMULATIVE);
      ASSERT_EQ(m.histogram().data_points_size(), 1);
      const pm::HistogramDataPoint& p = m.histogram().data_points(0);
      const std::vector<uint64_t>& log2 = c->bpf.runq_latency_log2_us;
      const auto bounds = metrics::RunqueueLatencyBounds();
      // The spec: bucket_counts has one more entry than explicit_bounds, bounds increase.
      ASSERT_EQ(static_cast<size_t>(p.bucket_counts_size()), static_cast<size_t>(p.explicit_bounds_size()) + 1);
      ASSERT_EQ(static_cast<size_t>(p.explicit_bounds_size()), std::min(log2.size() - 1, bounds.size()));
      for (int i = 0; i < p.explicit_bounds_size(); ++i) {
        EXPECT_DOUBLE_EQ(p.explicit_bounds(i), bounds[i]);
        if (i > 0) {
          EXPECT_GT(p.explicit_bounds(i), p.explicit_bounds(i - 1));
        }
      }
      uint64_t total = 0, tail = 0;
      for (size_t i = 0; i < log2.size(); ++i) {
        total += log2[i];
        if (i >= static_cast<size_t>(p.explicit_bounds_size())) {
          tail += log2[i];
        } else {
          EXPECT_EQ(p.bucket_counts(static_cast<int>(i)), log2[i]) << "bucket " << i;
        }
      }
      EXPECT_EQ(p.bucket_counts(p.bucket_counts_size() - 1), tail);
      EXPECT_EQ(p.count(), total);
      EXPECT_GT(total, 0u);
      ASSERT_TRUE(p.has_sum());
      EXPECT_DOUBLE_EQ(p.sum(), static_cast<double>(*c->bpf.runq_latency_sum_ns) / 1e9);
      EXPECT_EQ(p.time_unix_nano(), static_cast<uint64_t>(s.timestamp_ns));
      EXPECT_LE(p.start_time_unix_nano(), p.time_unix_nano());
      ++checked;
    }
  }
  EXPECT_GE(checked, 3u);
}

// ---- The node's metrics ------------------------------------------------------------------

// The pull families of a fixed moment: two pulls in flight, counters, four successful
// pulls in the duration histogram, the status writer's applies.
class FixedPulls final : public metrics::ExtraSource {
 public:
  void Collect(std::vector<metrics::ExtraFamily>* out) const override {
    pulls::PullCounters c;
    c.started = 9;
    c.succeeded = 4;
    c.failed = 1;
    c.joins = 5;
    c.duration_buckets = {1, 2, 2, 2, 3, 3, 3, 3, 3, 4};  // cumulative, as the engine keeps them
    c.duration_sum = 742.5;
    c.duration_count = 4;
    auto pull = [](std::string image, uint64_t offset, uint64_t total) {
      auto v = std::make_shared<pulls::PullView>();
      v->image = std::move(image);
      v->phase = pulls::PullPhase::kDownloading;
      v->offset = offset;
      v->total = total;
      v->subscribers = 1;
      return pulls::PullViewPtr(v);
    };
    const pulls::StatusWriterCounters writes{6, 2};
    pulls::CollectPullFamilies(
        c, {pull("docker.io/library/nginx:1.25", 1234, 5000), pull("registry.example/b:2", 7, 9)}, &writes, out);
  }
};

const pm::Metric* NodeMetric(const pm::ResourceMetrics& rm, const std::string& name) {
  for (const auto& m : rm.scope_metrics(0).metrics()) {
    if (m.name() == name) return &m;
  }
  return nullptr;
}

// A machine with every figure that has a source, one NUMA node of one core.
MachineInfo FullMachine() {
  MachineInfo m;
  m.cpu_cores = m.cpu_physical_cores = m.cpu_sockets = m.cpu_books = m.cpu_drawers = 1;
  m.memory_bytes = m.swap_bytes = 1 << 30;
  m.dimms = {{"DDR4", 1, 1 << 30}};
  MachineNode n;
  n.cores = {{0, 0, {0}, {{32768, 1, "Data"}}, {}}};
  n.memory_bytes = 1 << 30;
  n.hugepages = {{2048, 1}};
  n.distances = {10};
  m.topology = {n};
  return m;
}

TEST(OtlpNodeMetrics, EveryExtraFamilyHasARowOfASuitingInstrument) {
  std::vector<metrics::ExtraFamily> families;
  FixedPulls().Collect(&families);
  pulls::CollectObservedPullFamilies(pulls::ObservedCounters{}, {}, &families);
  const MachineInfo machine = FullMachine();
  metrics::AppendMachineFamilies(&machine, metrics::MetricSelection(), /*identity_labels=*/false, &families);
  ExitTotals exits;
  exits.lifetime_buckets.assign(ExitRecords::LifetimeBounds().size() + 1, 0);
  metrics::AppendExitFamilies(exits, &families);
  metrics::ContainerOomKills().Collect(&families);
  ASSERT_EQ(families.size(), OtlpNodeMetrics().size());
  std::set<std::string_view> names;
  for (const metrics::ExtraFamily& f : families) {
    const OtlpNodeMetric* m = OtlpNodeMetricOf(f.name);
    ASSERT_NE(m, nullptr) << f.name << " has no OTLP name";
    EXPECT_TRUE(SuitsType(m->instrument, f.type)) << f.name;
    EXPECT_TRUE(names.insert(m->name).second) << m->name;
    // statlet's own names, or the semantic conventions' system.* for machine figures.
    const bool semconv = m->name.rfind("system.", 0) == 0 && f.name.rfind("machine_", 0) == 0;
    EXPECT_TRUE(m->name.rfind("statlet.", 0) == 0 || semconv) << m->name;
    size_t attributes = 0;
    for (std::string_view a : m->attributes) attributes += !a.empty();
    EXPECT_EQ(attributes, f.labels.size()) << f.name;
  }
}

// Every request of one Encode, parsed.
std::vector<ExportRequest> EncodeAll(OtlpEncoder& enc, const Snapshot& s) {
  EncodedExport wire;
  enc.Encode(s, &wire);
  std::vector<ExportRequest> out;
  for (std::string_view bytes : wire.requests) {
    EXPECT_TRUE(out.emplace_back().ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  }
  return out;
}

// OOM kills per container name: a monotonic sum on the node's resource, one point per
// name with the semantic conventions' k8s attributes.
TEST(OtlpNodeMetrics, OomKillsPerContainerNameAreAMonotonicSumWithK8sAttributes) {
  const Snapshot s = testing::MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  metrics::ContainerOomKills kills;
  Snapshot fed;
  CgroupStats pod;
  pod.id.kind = CgroupKind::kPod;
  pod.id.pod_uid = "uid-1";
  CgroupStats c;
  c.id.kind = CgroupKind::kContainer;
  c.id.pod_uid = "uid-1";
  c.id.container_id = "c0";
  auto meta = std::make_shared<ContainerMetadata>();
  meta->container_name = "app";
  meta->pod_name = "web-0";
  meta->pod_namespace = "shop";
  c.id.meta = meta;
  c.memory.events.oom_kill = 2;
  fed.cgroups = {pod, c};
  kills.Observe(fed);
  OtlpEncoder enc(NodeResource{{{"host.name", "node-a"}}}, {}, 64 << 20);
  enc.AddFamilies(&kills);
  std::vector<ExportRequest> requests = EncodeAll(enc, s);
  ASSERT_EQ(requests.size(), 1u);
  const pm::Metric* m = nullptr;
  for (const auto& rm : requests[0].resource_metrics()) {
    if (ResourceAttr(rm, "statlet.cgroup.path").empty()) m = NodeMetric(rm, "statlet.container.oom_kills");
  }
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->unit(), "{kill}");
  ASSERT_TRUE(m->has_sum());
  EXPECT_TRUE(m->sum().is_monotonic());
  ASSERT_EQ(m->sum().data_points_size(), 1);
  const pm::NumberDataPoint& p = m->sum().data_points(0);
  EXPECT_EQ(p.as_int(), 2);
  std::map<std::string, std::string> attrs;
  for (const auto& a : p.attributes()) attrs[a.key()] = a.value().string_value();
  EXPECT_EQ(attrs, (std::map<std::string, std::string>{
                       {"k8s.namespace.name", "shop"}, {"k8s.pod.name", "web-0"}, {"k8s.container.name", "app"}}));
}

TEST(OtlpEncoder, NodeMetricsAreOneResourceWithTheNodesAttributes) {
  const Snapshot s = testing::MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  OtlpEncoder enc(NodeResource{{{"host.name", "node-a"}, {"k8s.node.name", "node-a"}}}, {}, 64 << 20);
  FixedPulls pulls;
  enc.AddFamilies(&pulls);
  std::vector<ExportRequest> requests = EncodeAll(enc, s);
  ASSERT_EQ(requests.size(), 1u);
  const pm::ResourceMetrics* node = nullptr;
  for (const auto& rm : requests[0].resource_metrics()) {
    if (ResourceAttr(rm, "statlet.cgroup.path").empty()) {
      EXPECT_EQ(node, nullptr) << "one node resource";
      node = &rm;
    }
  }
  ASSERT_NE(node, nullptr);
  ASSERT_EQ(node->resource().attributes_size(), 2);
  EXPECT_EQ(ResourceAttr(*node, "host.name"), "node-a");
  EXPECT_EQ(ResourceAttr(*node, "k8s.node.name"), "node-a");
  EXPECT_EQ(node->schema_url(), kSchemaUrl);
  ASSERT_EQ(node->scope_metrics_size(), 1);
  EXPECT_EQ(node->scope_metrics(0).scope().name(), "statlet");
  const uint64_t now = static_cast<uint64_t>(s.timestamp_ns);

  const pm::Metric* active = NodeMetric(*node, "statlet.image_pull.active");
  ASSERT_NE(active, nullptr);
  EXPECT_EQ(active->unit(), "{pull}");
  EXPECT_EQ(active->description(), "Image pulls running (one per image).");
  ASSERT_TRUE(active->has_sum());
  EXPECT_FALSE(active->sum().is_monotonic());
  ASSERT_EQ(active->sum().data_points_size(), 1);
  EXPECT_EQ(active->sum().data_points(0).as_int(), 2);

  const pm::Metric* downloaded = NodeMetric(*node, "statlet.image_pull.downloaded");
  ASSERT_NE(downloaded, nullptr);
  ASSERT_EQ(downloaded->sum().data_points_size(), 2);
  const pm::NumberDataPoint& first = downloaded->sum().data_points(0);
  ASSERT_EQ(first.attributes_size(), 1);
  EXPECT_EQ(first.attributes(0).key(), "statlet.image.reference");
  EXPECT_EQ(first.attributes(0).value().string_value(), "docker.io/library/nginx:1.25");
  EXPECT_EQ(first.as_int(), 1234);

  const pm::Metric* completed = NodeMetric(*node, "statlet.image_pull.completed");
  ASSERT_NE(completed, nullptr);
  ASSERT_TRUE(completed->has_sum());
  EXPECT_TRUE(completed->sum().is_monotonic());
  EXPECT_EQ(completed->sum().aggregation_temporality(), pm::AGGREGATION_TEMPORALITY_CUMULATIVE);
  std::map<std::string, int64_t> by_result;
  for (const auto& p : completed->sum().data_points()) {
    ASSERT_EQ(p.attributes_size(), 1);
    EXPECT_EQ(p.attributes(0).key(), "statlet.image_pull.result");
    by_result[p.attributes(0).value().string_value()] = p.as_int();
    EXPECT_EQ(p.time_unix_nano(), now);
    EXPECT_LE(p.start_time_unix_nano(), p.time_unix_nano());
  }
  EXPECT_EQ(by_result,
            (std::map<std::string, int64_t>{{"succeeded", 4}, {"failed", 1}, {"stalled", 0}, {"cancelled", 0}}));

  const pm::Metric* duration = NodeMetric(*node, "statlet.image_pull.duration");
  ASSERT_NE(duration, nullptr);
  EXPECT_EQ(duration->unit(), "s");
  ASSERT_TRUE(duration->has_histogram());
  EXPECT_EQ(duration->histogram().aggregation_temporality(), pm::AGGREGATION_TEMPORALITY_CUMULATIVE);
  ASSERT_EQ(duration->histogram().data_points_size(), 1);
  const pm::HistogramDataPoint& h = duration->histogram().data_points(0);
  // The spec: one more bucket than bounds, each bucket its own count (not cumulative).
  ASSERT_EQ(std::vector<double>(h.explicit_bounds().begin(), h.explicit_bounds().end()), pulls::kDurationBuckets);
  EXPECT_EQ(std::vector<uint64_t>(h.bucket_counts().begin(), h.bucket_counts().end()),
            (std::vector<uint64_t>{1, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
  EXPECT_EQ(h.count(), 4u);
  EXPECT_DOUBLE_EQ(h.sum(), 742.5);
  EXPECT_EQ(h.time_unix_nano(), now);

  // Without sources, no node resource: the snapshot's resources alone.
  OtlpEncoder plain(NodeResource{{{"host.name", "node-a"}}}, {}, 64 << 20);
  std::vector<ExportRequest> only = EncodeAll(plain, s);
  for (const auto& rm : only[0].resource_metrics()) EXPECT_FALSE(ResourceAttr(rm, "statlet.cgroup.path").empty());
}

// The serialized request, decoded by protoc from the opentelemetry-proto test data, reads as
// statlet's own message: same fields, same numbers, nothing unknown.
TEST(OtlpEncoder, NodeMetricsDecodeWithTheUpstreamProtos) {
  const Snapshot s = testing::MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  OtlpEncoder enc(NodeResource{{{"host.name", "node-a"}}}, {}, 64 << 20);
  FixedPulls pulls;
  enc.AddFamilies(&pulls);
  std::vector<ExportRequest> requests = EncodeAll(enc, s);
  ASSERT_EQ(requests.size(), 1u);
  ExportRequest node_only;
  for (const auto& rm : requests[0].resource_metrics()) {
    if (ResourceAttr(rm, "statlet.cgroup.path").empty()) *node_only.add_resource_metrics() = rm;
  }
  ASSERT_EQ(node_only.resource_metrics_size(), 1);
  char path[] = "/tmp/statlet-otlp-node-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    ASSERT_TRUE(node_only.SerializeToOstream(&out));
  }
  const std::string decoded =
      testing::CommandOutput({"sh", "-c",
                              std::string(OTLP_TEST_PROTOC) + " --proto_path=" + OTLP_TEST_PROTO_DIR +
                                  " --decode=opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"
                                  " opentelemetry/proto/collector/metrics/v1/metrics_service.proto < " +
                                  path});
  ::unlink(path);
  std::string own;
  google::protobuf::TextFormat::PrintToString(node_only, &own);
  ASSERT_FALSE(decoded.empty());
  EXPECT_EQ(decoded, own);
  EXPECT_NE(decoded.find("name: \"statlet.image_pull.duration\""), std::string::npos) << decoded;
}

}  // namespace
}  // namespace statlet::otlp
