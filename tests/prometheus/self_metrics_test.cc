// statlet's own instrumentation (prometheus-cpp registry) in both exposition formats.
#include "exporters/self_metrics.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/prometheus/promtool.h"
#include "tests/prometheus/test_snapshots.h"

namespace statlet {
namespace {

using testing::MakeNodeSnapshot;

std::string Text(const SelfMetrics& m, ExpositionFormat f = ExpositionFormat::kText004) {
  std::string out;
  m.AppendExposition(f, &out);
  return out;
}

bool Has(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(SelfMetrics, ProbeAndRuntimeStates) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 0});
  SelfMetrics m("1.2.3", "abc");
  m.Update(s, SamplerStats{5, 3, 1}, 0, 0);
  std::string text = Text(m);
  for (const SourceState& p : s.bpf_probes) {
    EXPECT_TRUE(Has(text, "statlet_bpf_probe_up{probe=\"" + p.name + "\"} " + (p.up ? "1" : "0"))) << p.name << text;
    EXPECT_TRUE(Has(text, "statlet_bpf_lost_events_total{probe=\"" + p.name + "\"} " + std::to_string(p.lost_events)))
        << p.name;
  }
  const std::string endpoint = s.runtime->name;
  EXPECT_TRUE(Has(text, "statlet_runtime_up{endpoint=\"" + endpoint + "\"} 1"));
  const size_t space = s.runtime->detail.find(' ');
  EXPECT_TRUE(Has(text, "statlet_runtime_info{endpoint=\"" + endpoint + "\",runtime=\"" +
                            s.runtime->detail.substr(0, space) + "\",version=\"" + s.runtime->detail.substr(space + 1) +
                            "\"} 1"))
      << text;
  EXPECT_TRUE(Has(text, "statlet_build_info{revision=\"abc\",version=\"1.2.3\"} 1"));
  EXPECT_TRUE(Has(text, "statlet_scrape_joins_total 3"));
  EXPECT_TRUE(Has(text, "statlet_read_errors_total{file=\"memory.stat\",reason=\"parse\"} 2"));
  // A runtime that stopped answering: up 0, no info series.
  s.runtime->up = false;
  s.runtime->detail = "down";
  m.Update(s, SamplerStats{6, 3, 1}, 0, 0);
  text = Text(m);
  EXPECT_TRUE(Has(text, "statlet_runtime_up{endpoint=\"" + endpoint + "\"} 0"));
  EXPECT_EQ(text.find("statlet_runtime_info{"), std::string::npos);
  EXPECT_TRUE(Has(text, "statlet_collections_total 6"));
  testing::PromtoolResult r = testing::PromtoolCheckMetrics(text);
  EXPECT_TRUE(r.unexpected_findings.empty()) << r.output;
  EXPECT_TRUE(r.Parsed()) << r.exit_code << ": " << r.output;
}

TEST(SelfMetrics, CardinalityDropsCountOncePerSnapshot) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  SelfMetrics m("v", "r");
  m.Update(s, {}, 4, 2);
  m.Update(s, {}, 4, 2);  // a second scrape of the same snapshot
  EXPECT_TRUE(Has(Text(m), "statlet_cardinality_dropped_total{kind=\"cgroup\"} 4"));
  s.sequence += 1;
  m.Update(s, {}, 4, 2);
  const std::string text = Text(m);
  EXPECT_TRUE(Has(text, "statlet_cardinality_dropped_total{kind=\"cgroup\"} 8"));
  EXPECT_TRUE(Has(text, "statlet_cardinality_dropped_total{kind=\"interface\"} 4"));
}

TEST(SelfMetrics, DurationsCallsAndScrapeErrorInOpenMetrics) {
  Snapshot s = MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  SelfMetrics m("v", "r");
  m.ObserveCollection(s);  // 1.5 ms
  m.ObserveScrape(0.02, true);
  m.ObserveCriCall("RuntimeService/ListContainerStats", "OK", 0.003);
  m.ObserveCriCall("RuntimeService/ListContainerStats", "OK", 0.004);
  m.ObserveCriCall("ImageService/PullImage", "UNIMPLEMENTED", 0.0001);
  std::string om = Text(m, ExpositionFormat::kOpenMetrics100);
  EXPECT_TRUE(Has(om, "# TYPE statlet_collections counter")) << om;
  EXPECT_TRUE(Has(om, "statlet_collection_duration_seconds_bucket{le=\"0.001\"} 0"));
  EXPECT_TRUE(Has(om, "statlet_collection_duration_seconds_bucket{le=\"0.0025\"} 1"));
  EXPECT_TRUE(Has(om, "statlet_collection_duration_seconds_bucket{le=\"+Inf\"} 1"));
  EXPECT_TRUE(Has(om, "statlet_collection_duration_seconds_count 1"));
  EXPECT_TRUE(Has(om, "# UNIT statlet_collection_duration_seconds seconds"));
  EXPECT_TRUE(Has(om, "statlet_cri_calls_total{code=\"OK\",method=\"RuntimeService/ListContainerStats\"} 2")) << om;
  EXPECT_TRUE(Has(om, "statlet_cri_calls_total{code=\"UNIMPLEMENTED\",method=\"ImageService/PullImage\"} 1"));
  EXPECT_TRUE(Has(om, "container_scrape_error 1"));
  m.ObserveScrape(0.01, false);
  EXPECT_TRUE(Has(Text(m), "container_scrape_error 0"));
  EXPECT_EQ(om.find("# EOF"), std::string::npos) << "the builder terminates the body";
}

}  // namespace
}  // namespace statlet
