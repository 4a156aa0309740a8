// The families fed by the eBPF probes and the optional sources: the run-queue latency
// histogram, TCP and fault counters, the recent OOM kills, probe and runtime states.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "exporters/prometheus_encoder.h"
#include "tests/prometheus/promtool.h"
#include "tests/prometheus/test_snapshots.h"

namespace statlet {
namespace {

using testing::MakeNodeSnapshot;

std::string FakeDevice(uint32_t major, uint32_t minor) {
  return "/dev/blk" + std::to_string(major) + "_" + std::to_string(minor);
}

std::string Encode(PrometheusEncoder& enc, const Snapshot& s, ExpositionFormat f = ExpositionFormat::kText004) {
  std::string out;
  enc.Encode(s, f, &out);
  if (f == ExpositionFormat::kOpenMetrics100) out.append("# EOF\n");
  return out;
}

// Sample lines starting with `prefix` (a name followed by '{' or ' ').
std::vector<std::string> Samples(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind(prefix, 0) == 0) out.push_back(l);
  }
  return out;
}

// Of the cgroup with this id label.
std::vector<std::string> SamplesOf(const std::string& text, const std::string& prefix, const std::string& id) {
  std::vector<std::string> out;
  for (const std::string& l : Samples(text, prefix)) {
    if (l.find("id=\"" + id + "\"") != std::string::npos) out.push_back(l);
  }
  return out;
}

std::string LabelValue(const std::string& line, const std::string& label) {
  for (const char* sep : {"{", ","}) {
    size_t at = line.find(sep + label + "=\"");
    if (at == std::string::npos) continue;
    at += label.size() + 3;
    return line.substr(at, line.find('"', at) - at);
  }
  return "";
}

std::string Value(const std::string& line) { return line.substr(line.rfind(' ') + 1); }
uint64_t UintValue(const std::string& line) { return std::stoull(Value(line)); }

const CgroupStats& FirstApp(const Snapshot& s) {
  for (const auto& c : s.cgroups) {
    if (c.id.kind == CgroupKind::kContainer && c.id.meta && !c.id.meta->is_sandbox) return c;
  }
  std::abort();
}

// The label block every family gives this cgroup, read off container_last_seen.
std::string CgroupBlock(const std::string& text, const std::string& id) {
  auto lines = SamplesOf(text, "container_last_seen{", id);
  if (lines.size() != 1) return "<none>";
  const std::string& l = lines[0];
  return l.substr(l.find('{'), l.find('}') - l.find('{'));
}

TEST(BpfFamilies, RunqueueHistogramIsCumulativeInSecondsWithOpenLastBucket) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  PrometheusEncoder enc({}, FakeDevice);
  const std::string text = Encode(enc, s);
  for (const CgroupStats& c : s.cgroups) {
    const auto& b = c.bpf.runq_latency_log2_us;
    ASSERT_FALSE(b.empty());
    auto buckets = SamplesOf(text, "statlet_cpu_runqueue_latency_seconds_bucket{", c.id.cgroup_path);
    // One bucket per finite bound 2^(i+1) us except the last (open-ended) one, plus +Inf.
    ASSERT_EQ(buckets.size(), b.size()) << c.id.cgroup_path;
    uint64_t running = 0;
    for (size_t i = 0; i + 1 < b.size(); ++i) {
      running += b[i];
      const std::string le = LabelValue(buckets[i], "le");
      EXPECT_EQ(std::strtod(le.c_str(), nullptr), static_cast<double>(uint64_t{2} << i) / 1e6) << le;
      EXPECT_EQ(UintValue(buckets[i]), running) << buckets[i];
    }
    const uint64_t total = std::accumulate(b.begin(), b.end(), uint64_t{0});
    EXPECT_EQ(LabelValue(buckets.back(), "le"), "+Inf");
    EXPECT_EQ(UintValue(buckets.back()), total);
    if (b.back() > 0) {
      EXPECT_LT(UintValue(buckets[b.size() - 2]), total) << "last bucket counted below +Inf";
    }
    auto count = SamplesOf(text, "statlet_cpu_runqueue_latency_seconds_count{", c.id.cgroup_path);
    auto sum = SamplesOf(text, "statlet_cpu_runqueue_latency_seconds_sum{", c.id.cgroup_path);
    ASSERT_EQ(count.size(), 1u);
    ASSERT_EQ(sum.size(), 1u);
    EXPECT_EQ(UintValue(count[0]), total);
    EXPECT_DOUBLE_EQ(std::strtod(Value(sum[0]).c_str(), nullptr), *c.bpf.runq_latency_sum_ns / 1e9);
    // Same labels as every other family of the cgroup, then `le`.
    const std::string block = CgroupBlock(text, c.id.cgroup_path);
    EXPECT_EQ(buckets[0].rfind("statlet_cpu_runqueue_latency_seconds_bucket" + block + ",le=\"", 0), 0u) << buckets[0];
  }
  // Bounds from 2 us to 2^26 us (~67 s), rendered as OpenMetrics' canonical numbers.
  EXPECT_NE(text.find(",le=\"2e-06\"} "), std::string::npos);
  EXPECT_NE(text.find(",le=\"6.4e-05\"} "), std::string::npos);
  EXPECT_NE(text.find(",le=\"0.000128\"} "), std::string::npos);
  EXPECT_NE(text.find(",le=\"67.108864\"} "), std::string::npos);
  EXPECT_EQ(text.find(",le=\"134.217728\""), std::string::npos);
}

TEST(BpfFamilies, HistogramInOpenMetricsHasTypeUnitAndCountBeforeSum) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  PrometheusEncoder enc({}, FakeDevice);
  const std::string om = Encode(enc, s, ExpositionFormat::kOpenMetrics100);
  EXPECT_NE(om.find("# TYPE statlet_cpu_runqueue_latency_seconds histogram\n"
                    "# UNIT statlet_cpu_runqueue_latency_seconds seconds\n"),
            std::string::npos);
  const std::string id = FirstApp(s).id.cgroup_path;
  size_t inf = om.find("_bucket" + CgroupBlock(om, id) + ",le=\"+Inf\"} ");
  size_t count = om.find("statlet_cpu_runqueue_latency_seconds_count" + CgroupBlock(om, id) + "} ");
  size_t sum = om.find("statlet_cpu_runqueue_latency_seconds_sum" + CgroupBlock(om, id) + "} ");
  ASSERT_NE(inf, std::string::npos);
  EXPECT_LT(inf, count);
  EXPECT_LT(count, sum);
  const std::string text = Encode(enc, s);
  EXPECT_NE(text.find("# TYPE statlet_cpu_runqueue_latency_seconds histogram\n"), std::string::npos);
  EXPECT_EQ(testing::CountSamples(text), testing::CountSamples(om));
}

TEST(BpfFamilies, HistogramWithoutSumHasNoCount) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 0});
  for (auto& c : s.cgroups) c.bpf.runq_latency_sum_ns.reset();
  PrometheusEncoder enc({}, FakeDevice);
  const std::string text = Encode(enc, s);
  EXPECT_FALSE(Samples(text, "statlet_cpu_runqueue_latency_seconds_bucket{").empty());
  EXPECT_TRUE(Samples(text, "statlet_cpu_runqueue_latency_seconds_count{").empty());
  EXPECT_TRUE(Samples(text, "statlet_cpu_runqueue_latency_seconds_sum{").empty());
}

TEST(BpfFamilies, CountersCarryTheCgroupLabels) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 2});
  PrometheusEncoder enc({}, FakeDevice);
  const std::string text = Encode(enc, s);
  for (const CgroupStats& c : s.cgroups) {
    const std::string block = CgroupBlock(text, c.id.cgroup_path);
    const BpfCgroupStats& b = c.bpf;
    auto has = [&](const std::string& line) { EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos) << line; };
    has("statlet_tcp_retransmits_total" + block + "} " + std::to_string(*b.tcp_retransmits));
    has("statlet_page_faults_total" + block + ",type=\"minor\"} " + std::to_string(*b.minor_faults));
    has("statlet_page_faults_total" + block + ",type=\"major\"} " + std::to_string(*b.major_faults));
    has("statlet_oom_kills_total" + block + "} " + std::to_string(*b.oom_kills));
    auto drops = SamplesOf(text, "statlet_tcp_drops_total{", c.id.cgroup_path);
    ASSERT_EQ(drops.size(), b.tcp_drop_reasons.size()) << c.id.cgroup_path;
    uint64_t sum = 0;
    for (const auto& [reason, n] : b.tcp_drop_reasons) {
      has("statlet_tcp_drops_total" + block + ",reason=\"" + reason + "\"} " + std::to_string(n));
      sum += n;
    }
    EXPECT_EQ(sum, *b.tcp_drops);
  }
}

TEST(BpfFamilies, AbsentProbeValuesHaveNoSeries) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1, .with_bpf = false});
  PrometheusEncoder enc({}, FakeDevice);
  const std::string text = Encode(enc, s);
  for (const char* name :
       {"statlet_cpu_runqueue_latency_seconds", "statlet_tcp_retransmits_total", "statlet_tcp_drops_total",
        "statlet_page_faults_total", "statlet_oom_kills_total", "statlet_oom_kill_timestamp_seconds"}) {
    EXPECT_TRUE(Samples(text, name).empty()) << name;
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " "), std::string::npos) << name;
  }
  // One probe up, the others with nothing to say: only its fields are served.
  s.cgroups[0].bpf.tcp_retransmits = 0;
  const std::string one = Encode(enc, s);
  EXPECT_EQ(Samples(one, "statlet_tcp_retransmits_total{").size(), 1u);
  EXPECT_TRUE(Samples(one, "statlet_page_faults_total{").empty());
}

TEST(BpfFamilies, RecentOomKillsAreLabelledFromTheEventAndUnique) {
  Snapshot s = MakeNodeSnapshot({.pods = 2, .containers_per_pod = 2});
  PrometheusEncoder enc({}, FakeDevice);
  std::string text = Encode(enc, s);
  auto series = Samples(text, "statlet_oom_kill_timestamp_seconds{");
  ASSERT_EQ(series.size(), s.recent_ooms.size());
  for (size_t i = 0; i < s.recent_ooms.size(); ++i) {
    const OomEvent& e = s.recent_ooms[i];
    const std::string& l = series[i];
    EXPECT_EQ(LabelValue(l, "pid"), std::to_string(e.pid)) << l;
    EXPECT_EQ(LabelValue(l, "comm"), e.comm) << l;
    EXPECT_EQ(LabelValue(l, "constraint"), e.constraint_memcg ? "memcg" : "global") << l;
    EXPECT_DOUBLE_EQ(std::strtod(Value(l).c_str(), nullptr), e.timestamp_ns / 1e9) << l;
    if (e.cgroup && s.FindByPath(e.cgroup_path) != nullptr) {
      // A victim still in the snapshot: exactly the labels of its other series.
      EXPECT_EQ(l.rfind("statlet_oom_kill_timestamp_seconds" + CgroupBlock(text, e.cgroup_path) + ",comm=\"", 0), 0u)
          << l;
    } else if (e.cgroup) {
      // Gone since: still named from the identity the Sampler kept.
      EXPECT_EQ(LabelValue(l, "id"), e.cgroup_path) << l;
      EXPECT_EQ(LabelValue(l, "name"), e.cgroup->container_id) << l;
    } else {
      EXPECT_EQ(LabelValue(l, "id"), "") << l;
    }
  }
  // The same victim twice (pid reuse): one series, the newer kill.
  OomEvent again = s.recent_ooms.front();
  again.timestamp_ns = s.timestamp_ns;
  s.recent_ooms.push_back(again);
  text = Encode(enc, s);
  series = Samples(text, "statlet_oom_kill_timestamp_seconds{");
  ASSERT_EQ(series.size(), s.recent_ooms.size() - 1);
  std::set<std::string> label_sets;
  for (const std::string& l : series) EXPECT_TRUE(label_sets.insert(l.substr(0, l.rfind(' '))).second) << l;
  EXPECT_DOUBLE_EQ(std::strtod(Value(series.back()).c_str(), nullptr), s.timestamp_ns / 1e9);
  testing::PromtoolResult r = testing::PromtoolCheckMetrics(text);
  EXPECT_TRUE(r.unexpected_findings.empty()) << r.output;
  EXPECT_TRUE(r.Parsed()) << r.exit_code << ": " << r.output;
}

// cgroup v2 has no per-CPU file: the Sampler fills CpuStats.per_cpu_ns from the cpu probe.
TEST(BpfFamilies, PerCpuUsageFromTheProbe) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1, .num_cpus = 4});
  std::map<std::string, std::vector<uint64_t>> want;
  for (auto& c : s.cgroups) {
    c.cpu.per_cpu_ns = {0, 2'500'000'001, 0, 7'000'000'000};
    c.cpu.per_cpu_from_bpf = true;
    want[c.id.cgroup_path] = c.cpu.per_cpu_ns;
  }
  PrometheusEncoder enc({.per_cpu = true}, FakeDevice);
  const std::string text = Encode(enc, s);
  for (const auto& [id, ns] : want) {
    auto lines = SamplesOf(text, "container_cpu_usage_seconds_total{", id);
    ASSERT_EQ(lines.size(), 2u) << id << ": zero CPUs left out, no total";
    EXPECT_EQ(LabelValue(lines[0], "cpu"), "cpu01");
    EXPECT_EQ(Value(lines[0]), "2.500000001");
    EXPECT_EQ(LabelValue(lines[1], "cpu"), "cpu03");
    EXPECT_EQ(Value(lines[1]), "7");
  }
}

}  // namespace
}  // namespace statlet
