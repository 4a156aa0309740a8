// One fixed snapshot rendered by every edge that formats the value path — /metrics (text
// 0.0.4 and OpenMetrics), ListMetricDescriptors + ListPodSandboxMetrics, and OTLP — compared
// byte for byte with the renderings kept in tests/metrics/golden/. A change of the code
// behind the edges (where a value is declared, how a family finds it) must leave these
// identical; a change of a value rule updates them on purpose, in the same commit:
//   STATLET_UPDATE_GOLDEN=1 build/release/tests/metrics/metrics_edge_golden_test
// The protobuf answers are kept in text format (a readable diff); OTLP's wire bytes are
// decoded with the protos' generated classes first.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cri/pod_metrics.h"
#include "cri/stats_selection.h"
#include "exporters/otlp/otlp_encoder.h"
#include "exporters/prometheus_encoder.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "tests/prometheus/test_snapshots.h"

namespace statlet {
namespace {

std::string Dev(uint32_t a, uint32_t b) { return "/dev/x" + std::to_string(a) + "_" + std::to_string(b); }

std::string GoldenPath(const std::string& name) { return std::string(STATLET_GOLDEN_DIR) + "/" + name; }

// Compares `got` with the kept file (or rewrites it under STATLET_UPDATE_GOLDEN=1).
void ExpectGolden(const std::string& name, const std::string& got) {
  const std::string path = GoldenPath(name);
  if (std::getenv("STATLET_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << got;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path << " is missing (STATLET_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  ASSERT_FALSE(got.empty());
  if (got == want.str()) return;
  // The first differing line, for a readable failure.
  std::istringstream g(got), w(want.str());
  std::string gl, wl;
  for (int line = 1;; ++line) {
    const bool gok = static_cast<bool>(std::getline(g, gl)), wok = static_cast<bool>(std::getline(w, wl));
    if (!gok && !wok) break;
    if (gl != wl || gok != wok) {
      ADD_FAILURE() << name << " differs at line " << line << ":\n  kept: " << wl << "\n  now:  " << gl;
      return;
    }
  }
  ADD_FAILURE() << name << " differs (same lines, different bytes)";
}

std::string Text(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::TextFormat::PrintToString(m, &out);
  return out;
}

// Every field filled, eBPF values, runtime metadata, OOM events; and quotas on some cgroups
// so the CFS families have series, and memory.stat's sock, vmalloc, percpu, zswap and
// zswapped on every cgroup.
Snapshot GoldenSnapshot() {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 2, .containers_per_pod = 1});
  for (size_t i = 0; i < s.cgroups.size(); i += 2) s.cgroups[i].cpu.quota_us = 20000;
  for (size_t i = 0; i < s.cgroups.size(); ++i) {
    MemoryStats& m = s.cgroups[i].memory;
    m.sock_bytes = 4096 * (i + 1);
    m.vmalloc_bytes = 8192 * (i + 1);
    m.percpu_bytes = 1000 * (i + 1);
    m.zswap_bytes = 0;
    m.zswapped_bytes = 0;
  }
  return s;
}

TEST(EdgeGolden, MetricsTextAndOpenMetrics) {
  const Snapshot s = GoldenSnapshot();
  PrometheusEncoder enc({}, Dev);
  std::string text, om;
  enc.Encode(s, ExpositionFormat::kText004, &text);
  enc.Encode(s, ExpositionFormat::kOpenMetrics100, &om);
  ExpectGolden("metrics.txt", text);
  ExpectGolden("metrics.openmetrics.txt", om);
}

TEST(EdgeGolden, ListMetricDescriptorsAndListPodSandboxMetrics) {
  const Snapshot s = GoldenSnapshot();
  ::runtime::v1::ListMetricDescriptorsResponse descriptors;
  cri::FillMetricDescriptors(&descriptors);
  ExpectGolden("list_metric_descriptors.textproto", Text(descriptors));

  const cri::CriView view = cri::BuildCriView(s);
  metrics::SnapshotSamples samples(cri::CriSampleRules({}), Dev);
  samples.Bind(s);
  ::runtime::v1::ListPodSandboxMetricsResponse resp;
  for (const cri::PodEntry& p : view.pods) cri::FillPodSandboxMetrics(view, p, samples, resp.add_pod_metrics());
  ASSERT_GT(resp.pod_metrics_size(), 0);
  ExpectGolden("list_pod_sandbox_metrics.textproto", Text(resp));
}

TEST(EdgeGolden, OtlpExport) {
  const Snapshot s = GoldenSnapshot();
  otlp::OtlpEncoder enc(otlp::NodeResource{{{"host.name", "node-a"}, {"k8s.node.name", "node-a"}}}, {}, size_t{4} << 20,
                        "0.0.0-golden", Dev);
  otlp::EncodedExport wire;
  enc.Encode(s, &wire);
  ASSERT_FALSE(wire.requests.empty());
  std::string all;
  for (size_t i = 0; i < wire.requests.size(); ++i) {
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
    ASSERT_TRUE(request.ParseFromArray(wire.requests[i].data(), static_cast<int>(wire.requests[i].size())));
    all += "# request " + std::to_string(i) + "\n";
    all += Text(request);
  }
  ExpectGolden("otlp_export.textproto", all);
}

}  // namespace
}  // namespace statlet
