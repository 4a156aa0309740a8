// Cost of one OTLP export's encoding next to one /metrics encoding of the same snapshot:
// 25 and 250 pods of a sandbox plus 3 containers (100 and 1,000 containers), with the eBPF
// values. OTLP: the encoder's requests serialized (the gRPC and HTTP body), and that body
// gzipped at the level the HTTP transport uses (6). /metrics: the text exposition, and
// gzipped at the server's level (1). Counters: bytes per export (wire bytes) and requests.
//
//   bench_otlp_encoder --benchmark_repetitions=9 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "exporters/gzip_compressor.h"
#include "exporters/otlp/otlp_encoder.h"
#include "exporters/prometheus_encoder.h"
#include "tests/support/snapshot_builder.h"

namespace statlet {
namespace {

std::string Dev(uint32_t a, uint32_t b) { return std::to_string(a) + ":" + std::to_string(b); }

Snapshot NodeOf(int64_t pods) {
  return testing::MakeNodeSnapshot({.pods = static_cast<size_t>(pods), .containers_per_pod = 3, .with_bpf = true});
}

// Args: pods, gzip (0/1).
void BM_OtlpExport(benchmark::State& state) {
  const Snapshot s = NodeOf(state.range(0));
  const bool gzip = state.range(1) != 0;
  otlp::OtlpEncoder enc(otlp::NodeResource{{{"host.name", "node-a"}, {"service.name", "statlet"}}}, {}, 4 << 20, "",
                        Dev);
  GzipCompressor gz(6);
  otlp::EncodedExport e;
  std::string compressed;
  size_t bytes = 0, n = 0;
  for (auto _ : state) {
    enc.Encode(s, &e);
    bytes = 0;
    for (std::string_view body : e.requests) {
      if (gzip) {
        (void)gz.Compress(body, &compressed);
        bytes += compressed.size();
      } else {
        bytes += body.size();
      }
    }
    n = e.requests.size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["requests"] = static_cast<double>(n);
  state.counters["points"] = static_cast<double>(enc.last_points());
}
BENCHMARK(BM_OtlpExport)->Args({25, 0})->Args({25, 1})->Args({250, 0})->Args({250, 1})->Unit(benchmark::kMillisecond);

// Args: pods, gzip (0/1).
void BM_MetricsText(benchmark::State& state) {
  const Snapshot s = NodeOf(state.range(0));
  const bool gzip = state.range(1) != 0;
  PrometheusEncoder enc({}, Dev);
  GzipCompressor gz(1);
  std::string text, compressed;
  size_t bytes = 0;
  for (auto _ : state) {
    enc.Encode(s, ExpositionFormat::kText004, &text);
    if (gzip) {
      (void)gz.Compress(text, &compressed);
      bytes = compressed.size();
    } else {
      bytes = text.size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["series"] = static_cast<double>(enc.last_series());
}
BENCHMARK(BM_MetricsText)->Args({25, 0})->Args({25, 1})->Args({250, 0})->Args({250, 1})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace statlet

BENCHMARK_MAIN();
