// Encoder cost per series (text and OpenMetrics) on a snapshot of ~1,000 containers, with
// and without the eBPF probe families (run-queue histogram, TCP, faults, OOM kills), and
// gzip level 1 of the same exposition for comparison.
#include <benchmark/benchmark.h>

#include "exporters/gzip_compressor.h"
#include "exporters/prometheus_encoder.h"
#include "tests/prometheus/test_snapshots.h"

namespace statlet {
namespace {

std::string Dev(uint32_t a, uint32_t b) { return std::to_string(a) + ":" + std::to_string(b); }

void BM_Encode(benchmark::State& state) {
  const auto format = static_cast<ExpositionFormat>(state.range(1));
  Snapshot s = testing::MakeNodeSnapshot(
      {.pods = static_cast<size_t>(state.range(0)), .containers_per_pod = 3, .with_bpf = state.range(2) != 0});
  PrometheusEncoder enc({}, Dev);
  std::string out;
  enc.Encode(s, {}, format, &out);
  const uint64_t series = enc.last_series();
  for (auto _ : state) {
    enc.Encode(s, {}, format, &out);
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
  enc.Encode(s, {}, ExpositionFormat::kText004, &text);
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

}  // namespace
}  // namespace statlet

BENCHMARK_MAIN();
