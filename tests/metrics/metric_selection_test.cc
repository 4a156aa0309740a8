// --metrics.enable / --metrics.disable / --metrics.drop-labels: the selection itself, and one
// snapshot through every edge (/metrics, ListMetricDescriptors and ListPodSandboxMetrics,
// OTLP) with and without it: what a selection leaves out is in none of them, what it keeps
// is in all of them as without it, and no two series collide when `id` goes.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "cri/metric_table.h"
#include "cri/pod_metrics.h"
#include "cri/stats_selection.h"
#include "exporters/otlp/otlp_encoder.h"
#include "exporters/otlp/otlp_mapping.h"
#include "exporters/prometheus_encoder.h"
#include "metrics/metric_selection.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "tests/support/snapshot_builder.h"

namespace statlet {
namespace {

using metrics::MetricGroup;
using metrics::MetricSelection;

std::string Dev(uint32_t a, uint32_t b) { return "/dev/x" + std::to_string(a) + "_" + std::to_string(b); }

MetricSelection Select(std::vector<std::string> enable, std::vector<std::string> disable,
                       std::vector<std::string> drop = {}) {
  auto s = MetricSelection::Make(enable, disable, drop);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : MetricSelection();
}

Snapshot NodeSnapshot() {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 3, .containers_per_pod = 2});
  for (size_t i = 0; i < s.cgroups.size(); i += 2) s.cgroups[i].cpu.quota_us = 20000;
  return s;
}

// Family names and full series keys (name + label block) of a text exposition.
struct Exposition {
  std::set<std::string> families;  // from # TYPE lines
  std::set<std::string> sampled;   // names with a sample
  std::vector<std::string> series;
  std::string text;
};
Exposition Render(const Snapshot& s, metrics::SampleRules rules) {
  PrometheusEncoder enc(std::move(rules), Dev);
  Exposition e;
  enc.Encode(s, ExpositionFormat::kText004, &e.text);
  std::istringstream in(e.text);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("# TYPE ", 0) == 0) {
      e.families.insert(l.substr(7, l.find(' ', 7) - 7));
    } else if (!l.empty() && l[0] != '#') {
      const std::string key = l.substr(0, l.rfind(' '));
      e.series.push_back(key);
      e.sampled.insert(key.substr(0, key.find('{')));
    }
  }
  return e;
}

TEST(MetricSelection, EveryFamilyHasAGroupAndTheDefaultServesAll) {
  const MetricSelection all;
  EXPECT_TRUE(all.all());
  for (const MetricFamily& f : AllMetricFamilies()) {
    EXPECT_TRUE(all.Serves(f.id)) << f.name;
    const MetricGroup g = metrics::GroupOf(f.id);
    if (g != MetricGroup::kAlways) {
      EXPECT_FALSE(metrics::GroupName(g).empty()) << f.name;
    }
  }
  // cAdvisor's groups keep cAdvisor's families (lib/metrics/prometheus.go).
  EXPECT_EQ(metrics::GroupOf(FamilyId::kContainerCpuCfsThrottledSecondsTotal), MetricGroup::kCpu);
  EXPECT_EQ(metrics::GroupOf(FamilyId::kContainerFsReadsBytesTotal), MetricGroup::kDiskIO);
  EXPECT_EQ(metrics::GroupOf(FamilyId::kContainerFsUsageBytes), MetricGroup::kDisk);
  EXPECT_EQ(metrics::GroupOf(FamilyId::kContainerUlimitsSoft), MetricGroup::kProcess);
  EXPECT_EQ(metrics::GroupOf(FamilyId::kContainerOomEventsTotal), MetricGroup::kOomEvent);
  EXPECT_EQ(metrics::GroupOf(FamilyId::kContainerPressureIoStalledSecondsTotal), MetricGroup::kPressure);
  EXPECT_EQ(metrics::GroupOf(FamilyId::kContainerHugetlbFailcnt), MetricGroup::kHugetlb);
  EXPECT_EQ(metrics::GroupOf(FamilyId::kContainerSpecMemoryLimitBytes), MetricGroup::kAlways);
}

TEST(MetricSelection, NamesAreCheckedAndListsCompose) {
  EXPECT_FALSE(MetricSelection::Make({}, {"diskio"}, {}).ok()) << "group names are case-sensitive, as cAdvisor's";
  EXPECT_FALSE(MetricSelection::Make({"container_cpu_usage"}, {}, {}).ok());
  EXPECT_FALSE(MetricSelection::Make({}, {}, {"pod"}).ok()) << "pod tells series apart";
  const Status bad = MetricSelection::CheckName("cpus");
  EXPECT_NE(bad.message().find("cpu_topology"), std::string::npos) << bad.message();
  // cAdvisor's kinds statlet has no family for are accepted, and change nothing.
  EXPECT_TRUE(Select({}, {"sched", "tcp", "udp", "advtcp", "cpuLoad", "perf_event"}).all());

  const MetricSelection only = Select({"memory", "container_cpu_usage_seconds_total"}, {"container_memory_cache"});
  EXPECT_TRUE(only.Serves(FamilyId::kContainerMemoryRss));
  EXPECT_FALSE(only.Serves(FamilyId::kContainerMemoryCache));
  EXPECT_TRUE(only.Serves(FamilyId::kContainerCpuUsageSecondsTotal));
  EXPECT_FALSE(only.Serves(FamilyId::kContainerCpuUserSecondsTotal));
  EXPECT_FALSE(only.Serves(FamilyId::kContainerNetworkReceiveBytesTotal));
  EXPECT_TRUE(only.Serves(FamilyId::kContainerSpecCpuQuota)) << "cAdvisor serves spec families under any flags";
  EXPECT_FALSE(only.ServesGroup(MetricGroup::kPercpu));
  EXPECT_FALSE(only.ServesExtra("statlet_image_pulls_in_flight"));
  EXPECT_TRUE(Select({"pulls"}, {}).ServesExtra("statlet_image_pulls_in_flight"));
  EXPECT_TRUE(Select({"statlet_image_pulls_in_flight"}, {}).ServesExtra("statlet_image_pulls_in_flight"));
  EXPECT_FALSE(Select({}, {"statlet_image_pull_clients"}).ServesExtra("statlet_image_pull_clients"));
  EXPECT_TRUE(Select({}, {"statlet_image_pull_clients"}).ServesExtra("statlet_image_pulls_in_flight"));
  EXPECT_FALSE(Select({}, {"pulls"}).ServesExtra("statlet_image_pulls_in_flight"));
}

TEST(MetricSelection, ReadNeedsFollowTheServedFamilies) {
  const metrics::ReadNeeds all = metrics::ReadNeedsOf(MetricSelection());
  EXPECT_TRUE(all.pressure_files && all.io_files && all.hugetlb_files && all.pids_files && all.process_fds &&
              all.network);
  const metrics::ReadNeeds lean =
      metrics::ReadNeedsOf(Select({}, {"diskIO", "hugetlb", "process", "network", "pressure", "psi", "memory_qos"}));
  EXPECT_FALSE(lean.pressure_files || lean.io_files || lean.hugetlb_files || lean.pids_files || lean.process_fds ||
               lean.network);
  // PSI files stay while anything served reads them: the averages, the memory.high stall view.
  EXPECT_TRUE(metrics::ReadNeedsOf(Select({}, {"pressure"})).pressure_files);
  EXPECT_TRUE(metrics::ReadNeedsOf(Select({}, {"pressure", "psi"})).pressure_files);
  EXPECT_FALSE(metrics::ReadNeedsOf(Select({}, {"pressure", "psi", "memory_qos"})).pressure_files);
  // One family of a file's readers is enough to read it.
  EXPECT_TRUE(metrics::ReadNeedsOf(Select({}, {"process"}, {})).pids_files == false);
  EXPECT_TRUE(metrics::ReadNeedsOf(Select({"container_threads_max"}, {})).pids_files);
  EXPECT_FALSE(metrics::ReadNeedsOf(Select({"container_threads_max"}, {})).process_fds);
}

TEST(MetricSelection, PrometheusLeavesOutDisabledFamiliesAndDroppedLabels) {
  const Snapshot s = NodeSnapshot();
  metrics::SampleRules rules;
  const Exposition full = Render(s, rules);
  rules.selection = Select({}, {"diskIO", "pressure", "container_memory_cache"}, {"id", "image"});
  const Exposition cut = Render(s, rules);

  size_t left_out = 0, kept = 0;
  for (const MetricFamily& f : AllMetricFamilies()) {
    const std::string name(f.name);
    const bool off = !rules.selection.Serves(f.id);
    if (off) {
      EXPECT_FALSE(cut.families.count(name)) << name << ": no metadata either";
      EXPECT_FALSE(cut.sampled.count(name)) << name;
      left_out += full.sampled.count(name);
    } else {
      EXPECT_EQ(cut.families.count(name), full.families.count(name)) << name;
      EXPECT_EQ(cut.sampled.count(name), full.sampled.count(name)) << name;
      kept += full.sampled.count(name);
    }
  }
  EXPECT_GE(left_out, 3u) << "the snapshot has series of the left-out families";
  EXPECT_GT(kept, 20u);
  EXPECT_EQ(full.text.find("image=\"") == std::string::npos, false);
  EXPECT_EQ(cut.text.find("image=\""), std::string::npos);
  // `id` only where nothing else names the cgroup; no two series the same.
  size_t with_id = 0;
  for (const std::string& k : cut.series) {
    if (k.find("{id=\"") == std::string::npos && k.find(",id=\"") == std::string::npos) continue;
    ++with_id;
    EXPECT_EQ(k.find("name=\""), std::string::npos) << k;
  }
  EXPECT_GT(with_id, 0u) << "the root and slices keep id";
  EXPECT_LT(with_id, cut.series.size() / 2);
  std::set<std::string> unique(cut.series.begin(), cut.series.end());
  EXPECT_EQ(unique.size(), cut.series.size()) << "dropping id made two series the same";
}

TEST(MetricSelection, CriDescriptorsAndPodMetricsLeaveOutTheSame) {
  const Snapshot s = NodeSnapshot();
  const cri::CriView view = cri::BuildCriView(s);
  auto answer = [&](const MetricSelection& sel, ::runtime::v1::ListMetricDescriptorsResponse* d,
                    ::runtime::v1::ListPodSandboxMetricsResponse* m) {
    cri::FillMetricDescriptors(d, sel);
    metrics::SampleRules rules;
    rules.selection = sel;
    metrics::SnapshotSamples samples(cri::CriSampleRules(rules), Dev);
    samples.Bind(s);
    for (const cri::PodEntry& p : view.pods) cri::FillPodSandboxMetrics(view, p, samples, m->add_pod_metrics());
  };
  ::runtime::v1::ListMetricDescriptorsResponse d_full, d_cut;
  ::runtime::v1::ListPodSandboxMetricsResponse m_full, m_cut;
  const MetricSelection sel = Select({}, {"diskIO", "memory"}, {"id", "image"});
  answer(MetricSelection(), &d_full, &m_full);
  answer(sel, &d_cut, &m_cut);

  std::map<std::string, int> keys;  // descriptor name -> label key count
  for (const auto& d : d_cut.descriptors()) {
    keys[d.name()] = d.label_keys_size();
    for (const std::string& k : d.label_keys()) EXPECT_TRUE(k != "id" && k != "image") << d.name();
    EXPECT_EQ(d.name().rfind("container_memory_", 0), std::string::npos) << d.name();
    EXPECT_EQ(d.name().rfind("container_fs_reads", 0), std::string::npos) << d.name();
  }
  EXPECT_LT(d_cut.descriptors_size(), d_full.descriptors_size());
  EXPECT_GT(d_cut.descriptors_size(), 10);
  size_t metrics = 0, full_metrics = 0;
  auto check = [&](const google::protobuf::RepeatedPtrField<::runtime::v1::Metric>& ms) {
    for (const auto& m : ms) {
      ++metrics;
      ASSERT_TRUE(keys.count(m.name())) << m.name() << " served without a descriptor";
      EXPECT_EQ(m.label_values_size(), keys[m.name()]) << m.name();
    }
  };
  for (const auto& p : m_cut.pod_metrics()) {
    check(p.metrics());
    for (const auto& c : p.container_metrics()) check(c.metrics());
  }
  for (const auto& p : m_full.pod_metrics()) {
    full_metrics += p.metrics_size();
    for (const auto& c : p.container_metrics()) full_metrics += c.metrics_size();
  }
  EXPECT_GT(metrics, 0u);
  EXPECT_LT(metrics, full_metrics);
}

TEST(MetricSelection, OtlpLeavesOutTheSame) {
  const Snapshot s = NodeSnapshot();
  auto encode = [&](const MetricSelection& sel) {
    metrics::SampleRules rules;
    rules.selection = sel;
    otlp::OtlpEncoder enc(otlp::NodeResource{{{"host.name", "node-a"}}}, rules, size_t{4} << 20, "t", Dev);
    otlp::EncodedExport wire;
    enc.Encode(s, &wire);
    std::vector<opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest> out;
    for (std::string_view bytes : wire.requests) {
      EXPECT_TRUE(out.emplace_back().ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
    }
    std::set<std::string> names, attrs;
    for (const auto& r : out) {
      for (const auto& rm : r.resource_metrics()) {
        for (const auto& a : rm.resource().attributes()) attrs.insert(a.key());
        for (const auto& sm : rm.scope_metrics()) {
          for (const auto& m : sm.metrics()) names.insert(m.name());
        }
      }
    }
    return std::make_pair(names, attrs);
  };
  const auto [full, full_attrs] = encode(MetricSelection());
  const MetricSelection sel = Select({}, {"cpu", "diskIO"}, {"image"});
  const auto [cut, cut_attrs] = encode(sel);
  size_t left_out = 0;
  for (const otlp::OtlpMetric& m : otlp::OtlpMetrics()) {
    bool served = false;
    if (m.derived != otlp::Derived::kNone) served = sel.Serves(otlp::DerivedFamily(m.derived));
    for (size_t p = 0; p < m.part_count; ++p) served |= sel.Serves(m.parts[p].family);
    const std::string name(m.name);
    if (!served) {
      EXPECT_FALSE(cut.count(name)) << name;
      left_out += full.count(name);
    } else {
      EXPECT_EQ(cut.count(name), full.count(name)) << name;
    }
  }
  EXPECT_GE(left_out, 2u);
  EXPECT_TRUE(full_attrs.count("container.image.name"));
  EXPECT_FALSE(cut_attrs.count("container.image.name"));
  EXPECT_TRUE(cut_attrs.count("statlet.cgroup.path"));
}

}  // namespace
}  // namespace statlet
