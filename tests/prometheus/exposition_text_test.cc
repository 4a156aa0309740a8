#include "exporters/exposition_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "exporters/content_negotiation.h"
#include "exporters/gzip_compressor.h"
#include "metrics/families.h"

namespace statlet {
namespace {

std::string Scaled(uint64_t v, int d) {
  std::string s;
  AppendScaledUint(&s, v, d);
  return s;
}

TEST(ExpositionText, ScaledIntegersAreExactDecimals) {
  EXPECT_EQ(Scaled(0, 9), "0");
  EXPECT_EQ(Scaled(1, 9), "0.000000001");
  EXPECT_EQ(Scaled(1500000000, 9), "1.5");
  EXPECT_EQ(Scaled(123456789012345678, 9), "123456789.012345678");
  EXPECT_EQ(Scaled(UINT64_MAX, 9), "18446744073.709551615");
  EXPECT_EQ(Scaled(2500000, 6), "2.5");
}

TEST(ExpositionText, DoublesAndSpecialValues) {
  std::string s;
  AppendDouble(&s, 0.015);
  EXPECT_EQ(s, "0.015");
  s.clear();
  AppendDouble(&s, std::numeric_limits<double>::infinity());
  EXPECT_EQ(s, "+Inf");
  s.clear();
  AppendDouble(&s, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(s, "-Inf");
  s.clear();
  AppendDouble(&s, std::nan(""));
  EXPECT_EQ(s, "NaN");
}

TEST(ExpositionText, EscapesPerSpec) {
  std::string s;
  AppendEscapedLabelValue(&s, "a\"b\\c\nd\te");
  EXPECT_EQ(s, "a\\\"b\\\\c\\nd\te");
  s.clear();
  AppendEscapedHelp(&s, "say \"hi\"\\\n", ExpositionFormat::kText004);
  EXPECT_EQ(s, "say \"hi\"\\\\\\n");
  s.clear();
  AppendEscapedHelp(&s, "say \"hi\"", ExpositionFormat::kOpenMetrics100);
  EXPECT_EQ(s, "say \\\"hi\\\"");
}

TEST(ContentNegotiation, OpenMetricsOnlyWhenAsked) {
  EXPECT_EQ(NegotiateFormat(""), ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateFormat("text/plain;version=0.0.4"), ExpositionFormat::kText004);
  // Prometheus 2.x's scrape Accept header.
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                            "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            ExpositionFormat::kOpenMetrics100);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text"), ExpositionFormat::kOpenMetrics100);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text; version=0.0.1"), ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateFormat("text/plain;q=1,application/openmetrics-text;q=0.5"), ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateFormat("Application/OpenMetrics-Text;q=0"), ExpositionFormat::kText004);
}

TEST(ContentNegotiation, Gzip) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, gzip;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("*, gzip;q=0"));
}

TEST(Gzip, RoundTripsAndReusesTheCompressor) {
  GzipCompressor gz(1);
  std::string in;
  for (int i = 0; i < 20000; ++i) in += "container_memory_rss{id=\"/x/" + std::to_string(i % 97) + "\"} 123\n";
  std::string out;
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(gz.Compress(in, &out).ok());
    EXPECT_LT(out.size(), in.size() / 5);
    auto back = GunzipForTest(out);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, in);
  }
  ASSERT_TRUE(gz.Compress("", &out).ok());
  EXPECT_EQ(*GunzipForTest(out), "");
}

// OpenMetrics' canonical `le` rendering: the spec's own examples.
// A /metrics body shared by many scrapes (head) with a per-scrape ending (tail): head bytes
// plus any tail's bytes are one complete gzip stream of head + tail.
TEST(Gzip, OneHeadManyTailsEachFormOneStream) {
  std::string head;
  for (int i = 0; i < 20000; ++i)
    head += "container_memory_rss{id=\"/kubepods/pod" + std::to_string(i % 97) + "\"} 4096\n";
  GzipCompressor gz(1);
  std::string head_bytes, tail_bytes;
  ASSERT_TRUE(gz.CompressHead(head, &head_bytes).ok());
  for (const std::string tail : {"statlet_collections_total 1\n# EOF\n", "statlet_collections_total 2\n", ""}) {
    ASSERT_TRUE(gz.FinishTail(tail, &tail_bytes).ok());
    auto back = GunzipForTest(head_bytes + tail_bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, head + tail);
  }
  EXPECT_LT(head_bytes.size(), head.size() / 10) << "the head is compressed";
  std::string fresh;
  GzipCompressor other(1);
  EXPECT_FALSE(other.FinishTail("x", &fresh).ok()) << "a tail needs its head";
}

TEST(ExpositionText, CanonicalFloatsFollowTheOpenMetricsExamples) {
  auto render = [](double v) {
    std::string s;
    AppendCanonicalFloat(&s, v);
    return s;
  };
  const std::pair<double, const char*> examples[] = {
      {0.0, "0.0"},       {0.001, "0.001"},       {0.002, "0.002"},
      {0.01, "0.01"},     {0.1, "0.1"},           {0.9, "0.9"},
      {0.95, "0.95"},     {0.99, "0.99"},         {0.999, "0.999"},
      {1.0, "1.0"},       {1.7, "1.7"},           {10.0, "10.0"},
      {1e-10, "1e-10"},   {1e-09, "1e-09"},       {1e-05, "1e-05"},
      {0.0001, "0.0001"}, {100000.0, "100000.0"}, {1e+06, "1e+06"},
      {1e+10, "1e+10"},   {1.1e+23, "1.1e+23"},   {__builtin_inf(), "+Inf"}};
  for (const auto& [v, want] : examples) EXPECT_EQ(render(v), want) << want;
}

TEST(MetricFamilies, TableIsConsistent) {
  std::set<std::string_view> names;
  for (const MetricFamily& f : AllMetricFamilies()) {
    EXPECT_TRUE(names.insert(f.name).second) << "duplicate " << f.name;
    EXPECT_EQ(&Family(f.id), &f);
    EXPECT_EQ(FindFamily(f.name), &f);
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_EQ(f.help.find('\n'), std::string_view::npos) << f.name;
    const bool prefixed = f.name.rfind("container_", 0) == 0 || f.name.rfind("statlet_", 0) == 0;
    EXPECT_TRUE(prefixed) << f.name;
    EXPECT_EQ(f.cadvisor, f.name.rfind("container_", 0) == 0) << f.name;
    if (f.type == MetricType::kHistogram) {
      EXPECT_EQ(f.scope, MetricScope::kCgroup) << f.name;
      ASSERT_FALSE(f.labels.empty()) << f.name;
      EXPECT_EQ(f.labels.back(), "le") << f.name;
    }
    if (!f.cadvisor && f.type == MetricType::kCounter) {
      EXPECT_TRUE(f.name.size() > 6 && f.name.substr(f.name.size() - 6) == "_total") << f.name;
    }
    for (std::string_view l : f.labels) {
      for (std::string_view base : kCgroupLabels) EXPECT_NE(l, base) << f.name;
    }
  }
  EXPECT_EQ(OpenMetricsFamilyName(Family(FamilyId::kContainerCpuUsageSecondsTotal)), "container_cpu_usage_seconds");
  EXPECT_EQ(OpenMetricsUnit(Family(FamilyId::kContainerCpuUsageSecondsTotal)), "seconds");
  EXPECT_EQ(OpenMetricsUnit(Family(FamilyId::kContainerMemoryRss)), "");
  EXPECT_EQ(OpenMetricsType(Family(FamilyId::kContainerMemoryFailcnt)), "unknown");
  EXPECT_EQ(OpenMetricsType(Family(FamilyId::kStatletCpuRunqueueLatencySeconds)), "histogram");
  EXPECT_EQ(OpenMetricsUnit(Family(FamilyId::kStatletCpuRunqueueLatencySeconds)), "seconds");
  EXPECT_EQ(OpenMetricsFamilyName(Family(FamilyId::kStatletCpuRunqueueLatencySeconds)),
            "statlet_cpu_runqueue_latency_seconds");
}

}  // namespace
}  // namespace statlet
