// Encoder cost per series (text and OpenMetrics) on a snapshot of ~1,000 containers, with
// and without the eBPF probe families (run-queue histogram, TCP, faults, OOM kills); gzip
// level 1 of the same exposition; and the same container families built and rendered with
// prometheus-cpp (Family/Gauge/Counter + TextSerializer), the packaged alternative.
#include <benchmark/benchmark.h>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <sstream>

#include "exporters/gzip_compressor.h"
#include "exporters/prometheus_encoder.h"
#include "metrics/snapshot_samples.h"
#include "tests/support/snapshot_builder.h"

namespace statlet {
namespace {

std::string Dev(uint32_t a, uint32_t b) { return std::to_string(a) + ":" + std::to_string(b); }

void BM_Encode(benchmark::State& state) {
  const auto format = static_cast<ExpositionFormat>(state.range(1));
  Snapshot s = testing::MakeNodeSnapshot(
      {.pods = static_cast<size_t>(state.range(0)), .containers_per_pod = 3, .with_bpf = state.range(2) != 0});
  PrometheusEncoder enc({}, Dev);
  std::string out;
  enc.Encode(s, format, &out);
  const uint64_t series = enc.last_series();
  for (auto _ : state) {
    enc.Encode(s, format, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * series);
  state.counters["series"] = static_cast<double>(series);
  state.counters["bytes"] = static_cast<double>(out.size());
  state.counters["ns_per_series"] = benchmark::Counter(static_cast<double>(series) * state.iterations(),
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
// 250 pods x (sandbox + 3 containers) = 1,000 container cgroups + pods and parents.
// Args: pods, format (0 text, 1 OpenMetrics), eBPF values (0/1).
BENCHMARK(BM_Encode)
    ->Args({25, 0, 0})
    ->Args({250, 0, 0})
    ->Args({250, 1, 0})
    ->Args({250, 0, 1})
    ->Args({250, 1, 1})
    ->Unit(benchmark::kMicrosecond);

void BM_GzipLevel1(benchmark::State& state) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 250, .containers_per_pod = 3});
  PrometheusEncoder enc({}, Dev);
  std::string text, gz;
  enc.Encode(s, ExpositionFormat::kText004, &text);
  const uint64_t series = enc.last_series();
  GzipCompressor c(1);
  for (auto _ : state) {
    (void)c.Compress(text, &gz);
    benchmark::DoNotOptimize(gz.data());
  }
  state.counters["ns_per_series"] = benchmark::Counter(static_cast<double>(series) * state.iterations(),
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ratio"] = static_cast<double>(text.size()) / static_cast<double>(gz.size());
}
BENCHMARK(BM_GzipLevel1)->Unit(benchmark::kMicrosecond);

// The same cgroup families through prometheus-cpp: every sample of the value path becomes a
// Gauge or Counter with the cgroup labels and the family's own, as an exporter built on the
// library would hold them. Per scrape such an exporter sets each value (a labelled lookup)
// and serializes; range(0) == 1 times that, 0 only Collect + TextSerializer.
class PrometheusCppSink final : public metrics::SampleSink {
 public:
  PrometheusCppSink(prometheus::Registry* r, const Snapshot* s) : registry_(r), snap_(s) {}
  void StartFamily(const MetricFamily& f) {
    family_ = &f;
    if (f.type == MetricType::kCounter) {
      counters_ = &prometheus::BuildCounter().Name(std::string(f.name)).Help(std::string(f.help)).Register(*registry_);
    } else {
      gauges_ = &prometheus::BuildGauge().Name(std::string(f.name)).Help(std::string(f.help)).Register(*registry_);
    }
  }
  void Add(size_t cgroup, const metrics::LabelValues& labels, metrics::Value v) override {
    prometheus::Labels l = CgroupLabels(snap_->cgroups[cgroup]);
    for (size_t k = 0; k < labels.n && k < family_->labels.size(); ++k) {
      l[std::string(family_->labels[k])] = std::string(labels.v[k]);
    }
    if (family_->type == MetricType::kCounter) {
      counters_->Add(l).Increment(v.AsDouble());
    } else {
      gauges_->Add(l).Set(v.AsDouble());
    }
    ++series;
  }
  void AddHistogram(size_t, const metrics::Histogram&) override {}
  void AddEvent(const OomEvent&, const metrics::LabelValues&, metrics::Value) override {}
  size_t series = 0;

 private:
  static prometheus::Labels CgroupLabels(const CgroupStats& c) {
    prometheus::Labels l{{"id", c.id.cgroup_path}};
    if (c.id.meta) {
      if (!c.id.meta->container_name.empty()) l["container"] = c.id.meta->container_name;
      if (!c.id.meta->image.empty()) l["image"] = c.id.meta->image;
      if (!c.id.meta->pod_name.empty()) l["pod"] = c.id.meta->pod_name;
      if (!c.id.meta->pod_namespace.empty()) l["namespace"] = c.id.meta->pod_namespace;
    }
    if (!c.id.container_id.empty()) l["name"] = c.id.container_id;
    return l;
  }
  prometheus::Registry* registry_;
  const Snapshot* snap_;
  const MetricFamily* family_ = nullptr;
  prometheus::Family<prometheus::Counter>* counters_ = nullptr;
  prometheus::Family<prometheus::Gauge>* gauges_ = nullptr;
};

void BM_PrometheusCpp(benchmark::State& state) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 250, .containers_per_pod = 3});
  const bool update = state.range(0) != 0;
  auto fill = [&](prometheus::Registry* r) {
    metrics::SnapshotSamples samples({}, Dev);
    samples.Bind(s);
    PrometheusCppSink sink(r, &s);
    for (const MetricFamily& f : AllMetricFamilies()) {
      if (f.scope != MetricScope::kCgroup || f.type == MetricType::kHistogram) continue;
      sink.StartFamily(f);
      for (size_t i = 0; i < samples.cgroup_count(); ++i) samples.ForEachSample(f.id, i, sink);
    }
    return sink.series;
  };
  auto registry = std::make_shared<prometheus::Registry>();
  const size_t series = fill(registry.get());
  prometheus::TextSerializer serializer;
  std::string out;
  for (auto _ : state) {
    if (update) fill(registry.get());  // existing series: labelled lookups and sets
    std::ostringstream text;
    serializer.Serialize(text, registry->Collect());
    out = text.str();
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["series"] = static_cast<double>(series);
  state.counters["bytes"] = static_cast<double>(out.size());
  state.counters["ns_per_series"] = benchmark::Counter(static_cast<double>(series) * state.iterations(),
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PrometheusCpp)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace statlet

BENCHMARK_MAIN();
