#include "exporters/prometheus_encoder.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "metrics/families.h"
#include "tests/prometheus/promtool.h"
#include "tests/support/snapshot_builder.h"

namespace statlet {
namespace {

using testing::MakeNodeSnapshot;
using testing::SnapshotShape;

std::string FakeDevice(uint32_t major, uint32_t minor) {
  return "/dev/blk" + std::to_string(major) + "_" + std::to_string(minor);
}

std::string Encode(PrometheusEncoder& enc, const Snapshot& s, ExpositionFormat f) {
  std::string out;
  enc.Encode(s, f, &out);
  if (f == ExpositionFormat::kOpenMetrics100) out.append("# EOF\n");
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// The metric name of a sample line.
std::string SampleName(const std::string& line) { return line.substr(0, line.find_first_of("{ ")); }

// The family a sample belongs to: its name, or a histogram's name without the sample suffix.
std::string FamilyOf(const std::string& sample_name) {
  for (const char* suffix : {"_bucket", "_count", "_sum"}) {
    std::string_view n = sample_name, sfx = suffix;
    if (n.size() > sfx.size() && n.substr(n.size() - sfx.size()) == sfx) {
      std::string base(n.substr(0, n.size() - sfx.size()));
      const MetricFamily* f = FindFamily(base);
      if (f != nullptr && f->type == MetricType::kHistogram) return base;
    }
  }
  return sample_name;
}

TEST(PrometheusEncoder, TextHasHelpAndTypeForEveryFamilyBeforeItsSamples) {
  PrometheusEncoder enc({}, FakeDevice);
  std::string text = Encode(enc, MakeNodeSnapshot({}), ExpositionFormat::kText004);
  std::map<std::string, std::string> type_of;
  std::set<std::string> helped;
  for (const std::string& l : Lines(text)) {
    if (l.rfind("# HELP ", 0) == 0) helped.insert(l.substr(7, l.find(' ', 7) - 7));
    else if (l.rfind("# TYPE ", 0) == 0) {
      std::string name = l.substr(7, l.find(' ', 7) - 7);
      EXPECT_EQ(type_of.count(name), 0u) << "second TYPE line for " << name;
      type_of[name] = l.substr(l.rfind(' ') + 1);
    } else {
      std::string name = FamilyOf(SampleName(l));
      EXPECT_TRUE(type_of.count(name)) << "sample before its TYPE: " << l;
    }
  }
  for (const MetricFamily& f : AllMetricFamilies()) {
    EXPECT_TRUE(helped.count(std::string(f.name))) << f.name;
    ASSERT_TRUE(type_of.count(std::string(f.name))) << f.name;
    const char* want = f.type == MetricType::kCounter ? "counter"
                       : f.type == MetricType::kGauge ? "gauge"
                                                      : "histogram";
    EXPECT_EQ(type_of[std::string(f.name)], want) << f.name;
  }
}

TEST(PrometheusEncoder, PromtoolAcceptsTheTextFormat) {
  PrometheusEncoder enc({}, FakeDevice);
  std::string text = Encode(enc, MakeNodeSnapshot({}), ExpositionFormat::kText004);
  testing::PromtoolResult r = testing::PromtoolCheckMetrics(text);
  EXPECT_TRUE(r.Parsed()) << r.exit_code << ": " << r.output;
  EXPECT_TRUE(r.unexpected_findings.empty()) << r.output;
}

TEST(PrometheusEncoder, OpenMetricsFramingTypesAndUnits) {
  PrometheusEncoder enc({}, FakeDevice);
  std::string om = Encode(enc, MakeNodeSnapshot({}), ExpositionFormat::kOpenMetrics100);
  ASSERT_GE(om.size(), 6u);
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
  EXPECT_EQ(om.find("# EOF\n"), om.size() - 6) << "exactly one EOF, at the end";
  // Counter families drop "_total" in metadata; samples keep it.
  EXPECT_NE(om.find("# TYPE container_cpu_usage_seconds counter\n"), std::string::npos);
  EXPECT_NE(om.find("# UNIT container_cpu_usage_seconds seconds\n"), std::string::npos);
  EXPECT_NE(om.find("\ncontainer_cpu_usage_seconds_total{"), std::string::npos);
  // A unit is declared only where the name carries it.
  EXPECT_NE(om.find("# UNIT container_memory_usage_bytes bytes\n"), std::string::npos);
  EXPECT_EQ(om.find("# UNIT container_memory_rss"), std::string::npos);
  // cAdvisor's failcnt counter has no _total: "unknown" keeps the series name unchanged.
  EXPECT_NE(om.find("# TYPE container_memory_failcnt unknown\n"), std::string::npos);
  // OpenMetrics escapes double quotes in HELP; the text format does not need to.
  EXPECT_NE(om.find("cpu=\\\"total\\\""), std::string::npos);
  std::string text = Encode(enc, MakeNodeSnapshot({}), ExpositionFormat::kText004);
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
  EXPECT_EQ(text.find("# UNIT"), std::string::npos);
  // Same samples in both formats.
  EXPECT_EQ(testing::CountSamples(text), testing::CountSamples(om));
}

TEST(PrometheusEncoder, LabelValuesAreEscaped) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  for (auto& c : s.cgroups) {
    if (c.id.meta && !c.id.meta->is_sandbox && c.id.kind == CgroupKind::kContainer) {
      auto m = std::make_shared<ContainerMetadata>(*c.id.meta);
      m->container_name = "we\"ird\\name\nx";
      c.id.meta = m;
    }
  }
  PrometheusEncoder enc({}, FakeDevice);
  std::string text = Encode(enc, s, ExpositionFormat::kText004);
  EXPECT_NE(text.find("container=\"we\\\"ird\\\\name\\nx\""), std::string::npos);
  testing::PromtoolResult r = testing::PromtoolCheckMetrics(text);
  EXPECT_TRUE(r.unexpected_findings.empty()) << r.output;
  EXPECT_TRUE(r.Parsed()) << r.exit_code << ": " << r.output;
}

TEST(PrometheusEncoder, CadvisorLabelsAndValues) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  PrometheusEncoder enc({}, FakeDevice);
  std::string text = Encode(enc, s, ExpositionFormat::kText004);
  const CgroupStats* app = nullptr;
  const CgroupStats* sandbox = nullptr;
  for (const auto& c : s.cgroups) {
    if (c.id.kind != CgroupKind::kContainer) continue;
    (c.id.meta->is_sandbox ? sandbox : app) = &c;
  }
  ASSERT_TRUE(app && sandbox);
  const ContainerMetadata& m = *app->id.meta;
  std::string labels = "{container=\"" + m.container_name + "\",id=\"" + app->id.cgroup_path + "\",image=\"" + m.image +
                       "\",name=\"" + app->id.container_id + "\",namespace=\"default\",pod=\"" + m.pod_name + "\"";
  // ns -> seconds, exactly.
  std::string usage = "container_cpu_usage_seconds_total" + labels + ",cpu=\"total\"} ";
  size_t at = text.find(usage);
  ASSERT_NE(at, std::string::npos) << usage;
  uint64_t ns = *app->cpu.usage_ns;
  std::string expect_value = std::to_string(ns / 1000000000) + ".";
  EXPECT_EQ(text.substr(at + usage.size(), expect_value.size()), expect_value);
  // Fault counters in both scopes, with cAdvisor's label names.
  EXPECT_NE(
      text.find("container_memory_failures_total" + labels + ",failure_type=\"pgmajfault\",scope=\"hierarchy\"} " +
                std::to_string(*app->memory.pgmajfault) + "\n"),
      std::string::npos);
  // Network on the sandbox (pause) container only, and on the pod for statlet's own family.
  EXPECT_NE(text.find("container_network_receive_bytes_total{id=\"" + sandbox->id.cgroup_path), std::string::npos);
  EXPECT_EQ(text.find("\ncontainer_network_receive_bytes_total" + labels), std::string::npos);
  EXPECT_NE(text.find("statlet_pod_network_bytes_total{id=\"" + app->id.parent_path +
                      "\",namespace=\"default\",pod=\"" + m.pod_name + "\",direction=\"receive\",interface=\"eth0\"} "),
            std::string::npos);
  EXPECT_NE(text.find("container_fs_reads_bytes_total" + labels + ",device=\"/dev/blk8_0\"} "), std::string::npos);
  // Unlimited limits as cAdvisor reports them: 0; statlet's own: +Inf.
  EXPECT_NE(text.find("container_spec_memory_swap_limit_bytes" + labels + "} 0\n"), std::string::npos);
  EXPECT_NE(text.find("statlet_memory_high_bytes" + labels + "} +Inf\n"), std::string::npos);
  // statlet's own instrumentation is not the encoder's (exporters/self_metrics.h).
  EXPECT_EQ(text.find("\nstatlet_scrape_joins_total"), std::string::npos);
}

TEST(PrometheusEncoder, CfsSeriesOnlyWithAQuota) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  PrometheusEncoder enc({}, FakeDevice);
  std::string text = Encode(enc, s, ExpositionFormat::kText004);
  for (const auto& c : s.cgroups) {
    bool quota = c.cpu.quota_us && *c.cpu.quota_us != kUnlimited;
    std::string key = "container_cpu_cfs_periods_total{";
    bool found = false;
    for (const std::string& l : Lines(text)) {
      if (l.rfind(key, 0) == 0 && l.find("id=\"" + c.id.cgroup_path + "\"") != std::string::npos) found = true;
    }
    EXPECT_EQ(found, quota) << c.id.cgroup_path;
  }
}

TEST(PrometheusEncoder, PerCpuModeLabelsLikeCadvisor) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 0, .num_cpus = 12});
  PrometheusEncoder enc({.per_cpu = true}, FakeDevice);
  std::string text = Encode(enc, s, ExpositionFormat::kText004);
  EXPECT_NE(text.find(",cpu=\"cpu00\"} "), std::string::npos);
  EXPECT_NE(text.find(",cpu=\"cpu11\"} "), std::string::npos);
  EXPECT_EQ(text.find(",cpu=\"total\"} "), std::string::npos) << "per-CPU mode must not double count";
}

// The families fed by the per-process scan, hugetlb and the runtime's writable layer.
TEST(PrometheusEncoder, ProcessHugetlbFilesystemAndBlkioFamilies) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  CgroupStats* app = nullptr;
  CgroupStats* pod = nullptr;
  for (auto& c : s.cgroups) {
    if (c.id.kind == CgroupKind::kContainer && !c.id.meta->is_sandbox) app = &c;
    if (c.id.kind == CgroupKind::kPod) pod = &c;
  }
  ASSERT_TRUE(app && pod);
  app->process.file_descriptors = 41;
  app->process.sockets = 7;
  app->process.max_open_files_soft = 1048576;
  app->memory.hugetlb.push_back({"2MB", 4194304, 6291456, 8388608, 1});
  app->memory.hugetlb.push_back({"1GB", 0, {}, kUnlimited, 0});
  auto m = std::make_shared<ContainerMetadata>(*app->id.meta);
  m->writable_layer.timestamp_ns = s.timestamp_ns;
  m->writable_layer.mountpoint = "/var/lib/containerd";
  m->writable_layer.device = "/dev/vda1";
  m->writable_layer.used_bytes = 123456789;
  m->writable_layer.capacity_bytes = 107374182400;
  m->writable_layer.inodes_total = 6553600;
  m->writable_layer.inodes_free = 6000001;
  app->id.meta = m;
  pod->process.max_open_files_soft = kUnlimited;  // cAdvisor writes -1

  PrometheusEncoder enc({}, FakeDevice);
  std::string text = Encode(enc, s, ExpositionFormat::kText004);
  std::string labels = "{container=\"" + m->container_name + "\",id=\"" + app->id.cgroup_path + "\",image=\"" +
                       m->image + "\",name=\"" + app->id.container_id + "\",namespace=\"default\",pod=\"" +
                       m->pod_name + "\"";
  for (const std::string& want : {
           "container_file_descriptors" + labels + "} 41\n",
           "container_sockets" + labels + "} 7\n",
           "container_ulimits_soft" + labels + ",ulimit=\"max_open_files\"} 1048576\n",
           "container_hugetlb_usage_bytes" + labels + ",pagesize=\"2MB\"} 4194304\n",
           "container_hugetlb_usage_bytes" + labels + ",pagesize=\"1GB\"} 0\n",
           "container_hugetlb_max_usage_bytes" + labels + ",pagesize=\"2MB\"} 6291456\n",
           "container_fs_usage_bytes" + labels + ",device=\"/dev/vda1\"} 123456789\n",
           "container_fs_limit_bytes" + labels + ",device=\"/dev/vda1\"} 107374182400\n",
           "container_fs_inodes_total" + labels + ",device=\"/dev/vda1\"} 6553600\n",
           "container_fs_inodes_free" + labels + ",device=\"/dev/vda1\"} 6000001\n",
           "container_blkio_device_usage_total" + labels +
               ",device=\"/dev/blk8_0\",major=\"8\",minor=\"0\",operation=\"Read\"} " +
               std::to_string(*app->io.devices[0].read_bytes) + "\n",
           "container_blkio_device_usage_total" + labels +
               ",device=\"/dev/blk8_0\",major=\"8\",minor=\"0\",operation=\"Write\"} " +
               std::to_string(*app->io.devices[0].write_bytes) + "\n",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << want;
  }
  // A value the snapshot lacks has no series: no 1GB peak, no fs series but the app's.
  EXPECT_EQ(text.find("container_hugetlb_max_usage_bytes" + labels + ",pagesize=\"1GB\""), std::string::npos);
  size_t fs_series = 0;
  for (const std::string& l : Lines(text)) fs_series += l.rfind("container_fs_usage_bytes{", 0) == 0;
  EXPECT_EQ(fs_series, 1u);
  EXPECT_NE(text.find("container_ulimits_soft{id=\"" + pod->id.cgroup_path), std::string::npos);
  EXPECT_NE(text.find(",ulimit=\"max_open_files\"} -1\n"), std::string::npos);
  testing::PromtoolResult r = testing::PromtoolCheckMetrics(text);
  EXPECT_TRUE(r.unexpected_findings.empty()) << r.output;
  EXPECT_TRUE(r.Parsed()) << r.exit_code << ": " << r.output;
}

TEST(PrometheusEncoder, StatsOnlyMetadataChangeKeepsTheLabelBlock) {
  Snapshot s = MakeNodeSnapshot({.pods = 2, .containers_per_pod = 1});
  PrometheusEncoder enc({}, FakeDevice);
  Encode(enc, s, ExpositionFormat::kText004);
  const uint64_t rendered = enc.label_blocks_rendered();
  // The runtime client republishes metadata every stats round: same names, new layer.
  for (auto& c : s.cgroups) {
    if (!c.id.meta) continue;
    auto m = std::make_shared<ContainerMetadata>(*c.id.meta);
    m->writable_layer.timestamp_ns += 10;
    m->writable_layer.used_bytes = 99;
    c.id.meta = m;
  }
  std::string text = Encode(enc, s, ExpositionFormat::kText004);
  EXPECT_EQ(enc.label_blocks_rendered(), rendered);
  EXPECT_NE(text.find("container_fs_usage_bytes{"), std::string::npos) << "the new layer is served";
}

TEST(PrometheusEncoder, OutputIsStableAndLabelBlocksRenderOncePerCgroupLifetime) {
  Snapshot s = MakeNodeSnapshot({.pods = 4, .containers_per_pod = 2});
  PrometheusEncoder enc({}, FakeDevice);
  std::string a = Encode(enc, s, ExpositionFormat::kText004);
  EXPECT_EQ(enc.label_blocks_rendered(), s.cgroups.size());
  std::string b = Encode(enc, s, ExpositionFormat::kText004);
  EXPECT_EQ(a, b);
  EXPECT_EQ(enc.label_blocks_rendered(), s.cgroups.size()) << "second encode rendered labels again";

  // New metadata for one container: only its block is rendered again.
  Snapshot s2 = s;
  CgroupStats* target = nullptr;
  for (auto& c : s2.cgroups) {
    if (c.id.kind == CgroupKind::kContainer && !c.id.meta->is_sandbox) {
      target = &c;
      break;
    }
  }
  ASSERT_NE(target, nullptr);
  auto m = std::make_shared<ContainerMetadata>(*target->id.meta);
  m->image = "registry.example/app:2.0";
  target->id.meta = m;
  std::string c = Encode(enc, s2, ExpositionFormat::kText004);
  EXPECT_EQ(enc.label_blocks_rendered(), s.cgroups.size() + 1);
  EXPECT_NE(c.find("image=\"registry.example/app:2.0\""), std::string::npos);

  // A vanished cgroup is evicted; a recreated one (same path, new id) is rendered again.
  Snapshot s3 = s2;
  std::string gone = s3.cgroups.back().id.cgroup_path;
  s3.cgroups.pop_back();
  Encode(enc, s3, ExpositionFormat::kText004);
  EXPECT_EQ(enc.cached_cgroups(), s3.cgroups.size());
  s3.cgroups.front().id.cgroup_id += 1;
  Encode(enc, s3, ExpositionFormat::kText004);
  EXPECT_EQ(enc.label_blocks_rendered(), s.cgroups.size() + 2);
}

// The packed label blocks are reused while the cache is unchanged and repacked when a cgroup
// comes, goes or is relabelled: after any such step the text equals a fresh encoder's.
TEST(PrometheusEncoder, ChurnGivesTheSameTextAsAFreshEncoder) {
  Snapshot s = MakeNodeSnapshot({.pods = 4, .containers_per_pod = 2});
  PrometheusEncoder enc({}, FakeDevice);
  auto fresh = [](const Snapshot& snap) {
    PrometheusEncoder other({}, FakeDevice);
    return Encode(other, snap, ExpositionFormat::kText004);
  };
  Encode(enc, s, ExpositionFormat::kText004);
  Snapshot middle_gone = s;
  middle_gone.cgroups.erase(middle_gone.cgroups.begin() + static_cast<long>(s.cgroups.size() / 2));
  EXPECT_EQ(Encode(enc, middle_gone, ExpositionFormat::kText004), fresh(middle_gone));
  EXPECT_EQ(Encode(enc, s, ExpositionFormat::kText004), fresh(s)) << "the cgroup came back";
  Snapshot relabelled = s;
  for (auto& c : relabelled.cgroups) {
    if (c.id.kind != CgroupKind::kContainer || !c.id.meta) continue;
    auto m = std::make_shared<ContainerMetadata>(*c.id.meta);
    m->image = "registry.example/app:with-a-much-longer-tag-than-before";
    c.id.meta = m;
    break;
  }
  EXPECT_EQ(Encode(enc, relabelled, ExpositionFormat::kText004), fresh(relabelled));
  EXPECT_EQ(Encode(enc, relabelled, ExpositionFormat::kText004), fresh(relabelled)) << "unchanged repeat";
}

TEST(PrometheusEncoder, EncodeReplacesWhateverTheBufferHeld) {
  // The encoder overwrites the caller's buffer in place (a repeat encode fills and grows
  // nothing): what it held before, longer or shorter, must leave no trace.
  Snapshot small = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  Snapshot big = MakeNodeSnapshot({.pods = 40, .containers_per_pod = 3});
  PrometheusEncoder fresh({}, FakeDevice);
  std::string want_small, want_big;
  fresh.Encode(small, ExpositionFormat::kText004, &want_small);
  fresh.Encode(big, ExpositionFormat::kOpenMetrics100, &want_big);
  ASSERT_GT(want_big.size(), 2 * want_small.size());

  // (Compared as booleans: a diff of the two expositions would be megabytes.)
  PrometheusEncoder enc({}, FakeDevice);
  std::string out(want_big.size() + 12345, 'x');
  enc.Encode(small, ExpositionFormat::kText004, &out);
  EXPECT_TRUE(out == want_small) << out.size() << " bytes vs " << want_small.size();
  enc.Encode(big, ExpositionFormat::kOpenMetrics100, &out);  // grows past the old content
  EXPECT_TRUE(out == want_big) << out.size() << " bytes vs " << want_big.size();
  enc.Encode(small, ExpositionFormat::kText004, &out);  // shrinks again
  EXPECT_TRUE(out == want_small) << out.size() << " bytes vs " << want_small.size();
}

TEST(PrometheusEncoder, CardinalityCapDropsAndCounts) {
  Snapshot s = MakeNodeSnapshot({.pods = 2, .containers_per_pod = 1});
  const size_t total = s.cgroups.size();
  PrometheusEncoder enc({.max_cgroups = 3, .max_interfaces = 1}, FakeDevice);
  std::string text = Encode(enc, s, ExpositionFormat::kText004);
  std::set<std::string> ids;
  for (const std::string& l : Lines(text)) {
    if (l.rfind("container_last_seen{", 0) == 0) ids.insert(l);
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(enc.dropped_cgroups(), total - 3);
  size_t dropped_if = 0;
  for (const auto& [inode, ns] : s.netns) dropped_if += ns.interfaces.size() - 1;
  EXPECT_EQ(enc.dropped_interfaces(), dropped_if);
}

TEST(PrometheusEncoder, NoMetadataStillNamesCgroups) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1, .with_metadata = false});
  PrometheusEncoder enc({}, FakeDevice);
  std::string text = Encode(enc, s, ExpositionFormat::kText004);
  EXPECT_NE(text.find("container_last_seen{id=\"/\"} 1700000000\n"), std::string::npos);
  for (const auto& c : s.cgroups) {
    if (c.id.kind == CgroupKind::kContainer) {
      EXPECT_NE(text.find("container_memory_rss{id=\"" + c.id.cgroup_path + "\",name=\"" + c.id.container_id + "\"} "),
                std::string::npos);
      // No runtime names the sandbox: the pod cgroup carries the pod's network, once.
      EXPECT_EQ(text.find("\ncontainer_network_receive_bytes_total{id=\"" + c.id.cgroup_path + "\""),
                std::string::npos);
    }
    if (c.id.kind == CgroupKind::kPod) {
      EXPECT_NE(text.find("container_network_receive_bytes_total{id=\"" + c.id.cgroup_path + "\",interface=\"eth0\"} "),
                std::string::npos);
    }
  }
  for (const std::string& l : Lines(text)) {
    if (l.rfind("container_network_", 0) == 0) {
      EXPECT_EQ(l.find("interface=\"lo\""), std::string::npos) << l;
    }
  }
  testing::PromtoolResult r = testing::PromtoolCheckMetrics(text);
  EXPECT_TRUE(r.Parsed()) << r.exit_code << ": " << r.output;
  EXPECT_TRUE(r.unexpected_findings.empty()) << r.output;
}

}  // namespace
}  // namespace statlet
