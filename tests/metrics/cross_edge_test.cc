// One snapshot through both edges: the Prometheus exposition and ListPodSandboxMetrics must
// carry the same series with the same values for every family they share. Seconds families:
// the CRI value in whole seconds and its `_nanoseconds` sibling exactly equal to the decimal
// seconds /metrics writes.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "cri/metric_table.h"
#include "cri/pod_metrics.h"
#include "cri/stats_selection.h"
#include "exporters/prometheus_encoder.h"
#include "tests/support/prometheus_server.h"
#include "tests/support/snapshot_builder.h"

namespace statlet {
namespace {

namespace v1 = ::runtime::v1;
using testing::DecimalSecondsToNanos;

std::string Dev(uint32_t a, uint32_t b) { return "/dev/x" + std::to_string(a) + "_" + std::to_string(b); }

// A series by what both edges name: family, the cgroup (its path), the pod and namespace,
// and the family's own labels. Network families are the pod's, wherever they hang.
using Key = std::tuple<std::string, std::string, std::string, std::string, std::vector<std::string>>;

struct PromSample {
  std::map<std::string, std::string> labels;
  std::string value;  // as written
};

std::multimap<std::string, PromSample> ParseText(const std::string& text) {
  std::multimap<std::string, PromSample> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.empty() || l[0] == '#') continue;
    const size_t brace = l.find('{'), space = l.rfind(' ');
    PromSample s;
    s.value = l.substr(space + 1);
    if (brace != std::string::npos) {
      std::string body = l.substr(brace + 1, l.rfind('}') - brace - 1);
      size_t pos = 0;
      while (pos < body.size()) {
        size_t eq = body.find('=', pos);
        size_t end = body.find('"', eq + 2);
        s.labels[body.substr(pos, eq - pos)] = body.substr(eq + 2, end - eq - 2);
        pos = end + 2;
      }
    }
    out.emplace(l.substr(0, brace == std::string::npos ? space : brace), std::move(s));
  }
  return out;
}

bool IsNetwork(std::string_view family) { return family.rfind("container_network_", 0) == 0; }

TEST(CrossEdge, MetricsAndListPodSandboxMetricsCarryTheSameSeries) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 3, .containers_per_pod = 2});
  // Some cgroups with a quota, so the CFS families have series on both sides.
  for (size_t i = 0; i < s.cgroups.size(); i += 2) s.cgroups[i].cpu.quota_us = 20000;

  PrometheusEncoder enc({}, Dev);
  std::string text;
  enc.Encode(s, ExpositionFormat::kText004, &text);
  const auto prom = ParseText(text);

  cri::CriView view = cri::BuildCriView(s);
  metrics::SnapshotSamples samples(cri::CriSampleRules({}), Dev);
  samples.Bind(s);
  // CRI ids -> cgroup paths; the cgroups the CRI lists (pods and their app containers).
  std::map<std::string, std::string> path_of_id;
  std::set<std::string> cri_cgroups;
  std::map<std::string, std::string> pod_of_path;  // cgroup path -> pod name
  std::map<std::string, const v1::Metric*> unused;
  std::vector<v1::PodSandboxMetrics> answers;
  for (const cri::PodEntry& p : view.pods) {
    path_of_id[p.id] = p.cgroup->id.cgroup_path;
    cri_cgroups.insert(p.cgroup->id.cgroup_path);
    for (int ci : p.containers) {
      path_of_id[view.containers[ci].id] = view.containers[ci].cgroup->id.cgroup_path;
      cri_cgroups.insert(view.containers[ci].cgroup->id.cgroup_path);
    }
    cri::FillPodSandboxMetrics(view, p, samples, &answers.emplace_back());
  }

  size_t compared = 0;
  for (const cri::CriMetricFamily& f : cri::CriMetricFamilies()) {
    const MetricFamily& fam = Family(f.id);
    // /metrics side.
    std::map<Key, std::string> from_prom;
    auto [lo, hi] = prom.equal_range(f.name);
    for (auto it = lo; it != hi; ++it) {
      const auto& l = it->second.labels;
      const std::string id = l.count("id") ? l.at("id") : "";
      const bool network = IsNetwork(f.name);
      if (!network && !cri_cgroups.count(id)) continue;  // root, QoS, sandboxes: not CRI series
      std::vector<std::string> own;
      for (std::string_view k : fam.labels) own.push_back(l.count(std::string(k)) ? l.at(std::string(k)) : "");
      const std::string pod = l.count("pod") ? l.at("pod") : "";
      if (network && pod.empty()) continue;    // the host's interfaces (root cgroup)
      if (it->second.value == "-1") continue;  // cAdvisor's "unlimited": Metric.value is unsigned
      Key k{f.name, network ? "" : id, pod, l.count("namespace") ? l.at("namespace") : "", own};
      EXPECT_TRUE(from_prom.emplace(k, it->second.value).second) << f.name << " twice for " << id;
    }
    // CRI side (the `_nanoseconds` siblings checked against the same series).
    std::map<Key, std::pair<uint64_t, uint64_t>> from_cri;  // value, exact ns (seconds families)
    auto collect = [&](const google::protobuf::RepeatedPtrField<v1::Metric>& metrics) {
      for (const v1::Metric& m : metrics) {
        const bool sibling = f.seconds && m.name() == cri::NanosecondsName(f.name);
        if (m.name() != f.name && !sibling) continue;
        ASSERT_EQ(static_cast<size_t>(m.label_values_size()), f.label_keys.size()) << m.name();
        std::vector<std::string> own(m.label_values().begin() + cri::kSharedLabelCount, m.label_values().end());
        const std::string path = path_of_id.at(m.label_values(3));
        Key k{f.name, IsNetwork(f.name) ? "" : path, m.label_values(0), m.label_values(1), own};
        auto& v = from_cri[k];
        (sibling ? v.second : v.first) = m.value().value();
      }
    };
    for (const auto& a : answers) {
      collect(a.metrics());
      for (const auto& c : a.container_metrics()) collect(c.metrics());
    }
    // The same series on both sides…
    std::set<Key> prom_keys, cri_keys;
    for (const auto& [k, v] : from_prom) prom_keys.insert(k);
    for (const auto& [k, v] : from_cri) cri_keys.insert(k);
    EXPECT_EQ(prom_keys, cri_keys) << f.name;
    // …with the same values.
    for (const auto& [k, written] : from_prom) {
      auto it = from_cri.find(k);
      if (it == from_cri.end()) continue;
      ++compared;
      if (f.seconds) {
        const uint64_t ns = DecimalSecondsToNanos(written);
        EXPECT_EQ(it->second.second, ns) << f.name << " exact ns vs " << written;
        EXPECT_EQ(it->second.first, ns / 1000000000) << f.name << " whole seconds vs " << written;
      } else {
        EXPECT_EQ(std::to_string(it->second.first), written) << f.name;
      }
    }
  }
  EXPECT_GT(compared, 300u) << "the comparison must cover the node's series";
}

}  // namespace
}  // namespace statlet
