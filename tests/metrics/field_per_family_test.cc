// Every family whose value is one snapshot field (a row of metrics/family_rows.h with a
// value accessor) carries that field and no other, on every edge. This file names, by
// hand, which field each family holds; the test gives each field a value no other field
// has, on one container, and expects it in its family on /metrics (text), in
// ListPodSandboxMetrics and in the OTLP export. A row that reads a neighbouring field shows
// up as another field's value; a row missing from this table fails the test.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "cri/metric_table.h"
#include "cri/pod_metrics.h"
#include "cri/stats_selection.h"
#include "exporters/otlp/otlp_encoder.h"
#include "exporters/otlp/otlp_mapping.h"
#include "exporters/prometheus_encoder.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "tests/support/prometheus_server.h"
#include "tests/support/snapshot_builder.h"

namespace statlet {
namespace {

namespace v1 = ::runtime::v1;
using testing::DecimalSecondsToNanos;

std::string Dev(uint32_t a, uint32_t b) { return "/dev/x" + std::to_string(a) + "_" + std::to_string(b); }

struct FieldOfFamily {
  std::string_view family;
  std::function<Opt<uint64_t>&(CgroupStats&)> field;
  bool nanos = false;  // a duration in ns: seconds on the edges
};

// What each family holds, as its help and cAdvisor define it.
const std::vector<FieldOfFamily>& Table() {
  static const std::vector<FieldOfFamily> t = {
      {"container_cpu_user_seconds_total", [](CgroupStats & c) -> auto& {return c.cpu.user_ns;
}
, true
}  // namespace
, {"container_cpu_system_seconds_total", [](CgroupStats& c) -> auto& {return c.cpu.system_ns;
}  // namespace statlet
, true
}
, {"container_spec_cpu_period", [](CgroupStats& c) -> auto& {return c.cpu.period_us;
}
}
, {"container_spec_cpu_shares", [](CgroupStats& c) -> auto& {return c.cpu.shares;
}
}
, {"container_memory_usage_bytes", [](CgroupStats& c) -> auto& {return c.memory.usage_bytes;
}
}
, {"container_memory_max_usage_bytes", [](CgroupStats& c) -> auto& {return c.memory.max_usage_bytes;
}
}
, {"container_memory_working_set_bytes", [](CgroupStats& c) -> auto& {return c.memory.working_set_bytes;
}
}
, {"container_memory_rss", [](CgroupStats& c) -> auto& {return c.memory.rss_bytes;
}
}
, {"container_memory_cache", [](CgroupStats& c) -> auto& {return c.memory.cache_bytes;
}
}
, {"container_memory_mapped_file", [](CgroupStats& c) -> auto& {return c.memory.mapped_file_bytes;
}
}
, {"container_memory_swap", [](CgroupStats& c) -> auto& {return c.memory.swap_bytes;
}
}
, {"container_memory_kernel_usage", [](CgroupStats& c) -> auto& {return c.memory.kernel_bytes;
}
}
, {"container_memory_total_active_file_bytes", [](CgroupStats& c) -> auto& {return c.memory.active_file;
}
}
, {"container_memory_total_inactive_file_bytes", [](CgroupStats& c) -> auto& {return c.memory.inactive_file;
}
}
, {"container_memory_file_dirty_bytes", [](CgroupStats& c) -> auto& {return c.memory.file_dirty_bytes;
}
}
, {"container_memory_file_writeback_bytes", [](CgroupStats& c) -> auto& {return c.memory.file_writeback_bytes;
}
}
, {"container_memory_failcnt", [](CgroupStats& c) -> auto& {return c.memory.failcnt;
}
}
, {"container_memory_pgscan_total", [](CgroupStats& c) -> auto& {return c.memory.pgscan;
}
}
, {"container_memory_pgsteal_total", [](CgroupStats& c) -> auto& {return c.memory.pgsteal;
}
}
, {"container_memory_workingset_refault_anon_total",
   [](CgroupStats& c) -> auto& {return c.memory.workingset_refault_anon;
}
}
, {"container_memory_workingset_refault_file_total",
   [](CgroupStats& c) -> auto& {return c.memory.workingset_refault_file;
}
}
, {"container_memory_events_high_total", [](CgroupStats& c) -> auto& {return c.memory.events.high;
}
}
, {"container_memory_events_max_total", [](CgroupStats& c) -> auto& {return c.memory.events.max;
}
}
, {"container_processes", [](CgroupStats& c) -> auto& {return c.process.processes;
}
}
, {"container_file_descriptors", [](CgroupStats& c) -> auto& {return c.process.file_descriptors;
}
}
, {"container_sockets", [](CgroupStats& c) -> auto& {return c.process.sockets;
}
}
, {"statlet_memory_sock_bytes", [](CgroupStats& c) -> auto& {return c.memory.sock_bytes;
}
}
, {"statlet_memory_vmalloc_bytes", [](CgroupStats& c) -> auto& {return c.memory.vmalloc_bytes;
}
}
, {"statlet_memory_percpu_bytes", [](CgroupStats& c) -> auto& {return c.memory.percpu_bytes;
}
}
, {"statlet_memory_zswap_bytes", [](CgroupStats& c) -> auto& {return c.memory.zswap_bytes;
}
}
, {"statlet_memory_zswapped_bytes", [](CgroupStats& c) -> auto& {return c.memory.zswapped_bytes;
}
}
, {"statlet_pids_current", [](CgroupStats& c) -> auto& {return c.process.pids_current;
}
}
, {"statlet_pids_limit_hits_total", [](CgroupStats& c) -> auto& {return c.process.pids_events_max;
}
}
, {"statlet_tcp_retransmits_total", [](CgroupStats& c) -> auto& {return c.bpf.tcp_retransmits;
}
}
, {"statlet_oom_kills_total", [](CgroupStats& c) -> auto& {return c.bpf.oom_kills;
}
}
, {"statlet_container_network_receive_bytes_total", [](CgroupStats& c) -> auto& {return c.bpf.net_rx_bytes;
}
}
, {"statlet_container_network_receive_packets_total", [](CgroupStats& c) -> auto& {return c.bpf.net_rx_packets;
}
}
, {"statlet_container_network_transmit_bytes_total", [](CgroupStats& c) -> auto& {return c.bpf.net_tx_bytes;
}
}
, {"statlet_container_network_transmit_packets_total", [](CgroupStats& c) -> auto& {return c.bpf.net_tx_packets;
}
}
,
}
;
return t;
}

// The i-th field's value: apart from every other field's and from the fixture's values,
// and with a fraction of a second as a duration.
uint64_t DistinctValue(size_t i) { return 7'000'000'000ULL + 1'000'003ULL * (i + 1) + 17 * i; }

// /metrics samples of one cgroup: family -> value as written (families without labels).
std::map<std::string, std::string> MetricsOf(const std::string& text, const std::string& cgroup_id) {
  std::map<std::string, std::string> out;
  const std::string id_label = "id=\"" + cgroup_id + "\"";
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.empty() || l[0] == '#') continue;
    const size_t brace = l.find('{'), space = l.rfind(' ');
    if (brace == std::string::npos || l.find(id_label, brace) == std::string::npos) continue;
    out[l.substr(0, brace)] = l.substr(space + 1);
  }
  return out;
}

TEST(FieldPerFamily, EveryFieldRowIsInThisTable) {
  std::set<std::string_view> named;
  for (const FieldOfFamily& f : Table()) {
    EXPECT_TRUE(named.insert(f.family).second) << f.family << " twice";
    const MetricFamily* fam = FindFamily(f.family);
    ASSERT_NE(fam, nullptr) << f.family << " is no family";
    EXPECT_TRUE(fam->value.set()) << f.family << " no longer has a field row: move it out of this table";
    EXPECT_EQ(fam->value.kind == FieldValue::Kind::kNanos, f.nanos) << f.family << ": nanoseconds or not";
  }
  for (const MetricFamily& fam : AllMetricFamilies()) {
    if (fam.value.set()) {
      EXPECT_TRUE(named.count(fam.name)) << fam.name << " has a field row this table does not name";
    }
  }
}

TEST(FieldPerFamily, EachFieldReachesItsFamilyOnEveryEdge) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 1, .containers_per_pod = 1});
  // The container: the last cgroup of the pod, of kind container.
  CgroupStats* target = nullptr;
  for (CgroupStats& c : s.cgroups) {
    if (c.id.kind == CgroupKind::kContainer) target = &c;
  }
  ASSERT_NE(target, nullptr);
  std::map<std::string_view, uint64_t> want;
  for (size_t i = 0; i < Table().size(); ++i) {
    Table()[i].field(*target) = DistinctValue(i);
    want[Table()[i].family] = DistinctValue(i);
  }
  const std::string path = target->id.cgroup_path;

  // /metrics.
  PrometheusEncoder enc({}, Dev);
  std::string text;
  enc.Encode(s, ExpositionFormat::kText004, &text);
  const auto prom = MetricsOf(text, path);

  // ListPodSandboxMetrics: the container's metrics.
  const cri::CriView view = cri::BuildCriView(s);
  metrics::SnapshotSamples samples(cri::CriSampleRules({}), Dev);
  samples.Bind(s);
  std::map<std::string, uint64_t> cri_values;
  bool container_seen = false;
  for (const cri::PodEntry& p : view.pods) {
    v1::PodSandboxMetrics answer;
    cri::FillPodSandboxMetrics(view, p, samples, &answer);
    for (const v1::ContainerMetrics& c : answer.container_metrics()) {
      for (int ci : p.containers) {
        if (view.containers[ci].id != c.container_id() || view.containers[ci].cgroup->id.cgroup_path != path) continue;
        container_seen = true;
        for (const v1::Metric& m : c.metrics()) cri_values[m.name()] = m.value().value();
      }
    }
  }
  ASSERT_TRUE(container_seen) << "ListPodSandboxMetrics has no metrics of " << path;

  // OTLP: the points on the container's resource.
  otlp::OtlpEncoder otlp_enc(otlp::NodeResource{{{"host.name", "node-a"}}}, {}, size_t{64} << 20, "", Dev);
  otlp::EncodedExport wire;
  otlp_enc.Encode(s, &wire);
  std::vector<opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest> requests;
  for (std::string_view bytes : wire.requests) {
    ASSERT_TRUE(requests.emplace_back().ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  }
  std::map<std::string, const opentelemetry::proto::metrics::v1::NumberDataPoint*> otlp_points;
  for (const auto& r : requests) {
    for (const auto& rm : r.resource_metrics()) {
      bool mine = false;
      for (const auto& kv : rm.resource().attributes()) {
        mine |= kv.key() == "statlet.cgroup.path" && kv.value().string_value() == path;
      }
      if (!mine) continue;
      for (const auto& sm : rm.scope_metrics()) {
        for (const auto& m : sm.metrics()) {
          const auto& points = m.has_sum() ? m.sum().data_points() : m.gauge().data_points();
          if (points.size() == 1) otlp_points[m.name()] = &points[0];
        }
      }
    }
  }
  ASSERT_FALSE(otlp_points.empty()) << "no OTLP resource for " << path;

  size_t on_cri = 0, on_otlp = 0;
  for (const FieldOfFamily& f : Table()) {
    const uint64_t v = want[f.family];
    const MetricFamily& fam = *FindFamily(f.family);
    SCOPED_TRACE(std::string(f.family) + " (its field set to " + std::to_string(v) + ")");
    // /metrics.
    auto it = prom.find(std::string(f.family));
    ASSERT_NE(it, prom.end()) << "not on /metrics";
    if (f.nanos) {
      EXPECT_EQ(DecimalSecondsToNanos(it->second), v) << "/metrics wrote " << it->second;
    } else {
      EXPECT_EQ(it->second, std::to_string(v)) << "/metrics";
    }
    // ListPodSandboxMetrics.
    if (const cri::CriMetricFamily* cf = cri::CriFamily(fam.id)) {
      ++on_cri;
      auto c = cri_values.find(cf->name);
      ASSERT_NE(c, cri_values.end()) << "not in ListPodSandboxMetrics";
      if (cf->seconds) {
        EXPECT_EQ(c->second, v / 1000000000) << "ListPodSandboxMetrics whole seconds";
        auto ns = cri_values.find(cri::NanosecondsName(cf->name));
        ASSERT_NE(ns, cri_values.end()) << "no _nanoseconds sibling in ListPodSandboxMetrics";
        EXPECT_EQ(ns->second, v) << "ListPodSandboxMetrics nanoseconds";
      } else {
        EXPECT_EQ(c->second, v) << "ListPodSandboxMetrics";
      }
    }
    // OTLP: the metrics made of this family's samples alone.
    for (const otlp::OtlpMetric& m : otlp::OtlpMetrics()) {
      if (m.part_count != 1 || m.parts[0].family != fam.id || m.derived != otlp::Derived::kNone ||
          m.parts[0].filter_label >= 0 || m.resource != otlp::ResourceKind::kContainer) {
        continue;
      }
      ++on_otlp;
      auto p = otlp_points.find(std::string(m.name));
      ASSERT_NE(p, otlp_points.end()) << "OTLP " << m.name << " has no point on the container";
      if (m.is_double) {
        const double expected = f.nanos ? static_cast<double>(v) / 1e9 : static_cast<double>(v);
        EXPECT_DOUBLE_EQ(p->second->as_double(), expected) << "OTLP " << m.name;
      } else {
        EXPECT_EQ(p->second->as_int(), static_cast<int64_t>(v)) << "OTLP " << m.name;
      }
    }
  }
  std::printf("figure: %zu field families checked on /metrics, %zu in ListPodSandboxMetrics, %zu OTLP metrics\n",
              Table().size(), on_cri, on_otlp);
  EXPECT_GT(on_cri, 20u);
  EXPECT_GT(on_otlp, 5u);
}

}  // namespace
}  // namespace statlet
