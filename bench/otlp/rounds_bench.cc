// One OTLP export's encoding against one /metrics text encoding of the same snapshot, in
// alternating rounds within one run: nodes of 25 and 250 pods of a sandbox plus 3 containers
// (100 and 1,000 containers) with the eBPF values. Each side encodes the same snapshot over
// and over with its encoder's caches warm (label blocks, resources), as a daemon does between
// cgroup changes; a round measures both sides in turn (the order alternating), this thread's
// CPU time per encode over a batch of encodes. A side's batch has the same number of encodes
// at every node size: as many as take about 40 ms at the largest node. The first encode of
// a batch refills the CPU caches the other side's encode evicted (the text encode writes
// 47 MB at 1,000 containers); batches of equal duration would spread that refill over ~150
// encodes at 100 containers and ~13 at 1,000, and the linearity figure would compare a warm
// encoder with a partly cold one. Reported: medians over rounds with their
// min–max, the ratio OTLP / text as the median of per-round ratios, the cost per OTLP point
// and per text series, and linearity: the cost per point at the larger node over that at
// the smaller one.
//
//   bench_otlp_rounds [--rounds R] [--json FILE] [--pods P]
// --pods P encodes one node of P pods only (for a profiler's view of one size; no
// linearity then).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/support/rounds.h"
#include "exporters/otlp/otlp_encoder.h"
#include "exporters/prometheus_encoder.h"
#include "tests/prometheus/test_snapshots.h"

namespace statlet {
namespace {

std::string Dev(uint32_t a, uint32_t b) { return std::to_string(a) + ":" + std::to_string(b); }

struct Node {
  size_t pods = 0;
  Snapshot snap;
  otlp::OtlpEncoder otlp{
      otlp::NodeResource{{{"host.name", "node-a"}, {"service.name", "statlet"}}}, {}, 4 << 20, "", Dev};
  PrometheusEncoder text{{}, Dev};
  otlp::EncodedExport exported;
  std::string body;
  size_t otlp_batch = 1, text_batch = 1;
  std::vector<double> otlp_ms, text_ms, ratio;

  void EncodeOtlp() { otlp.Encode(snap, &exported); }
  void EncodeText() { text.Encode(snap, ExpositionFormat::kText004, &body); }
};

template <class F>
double PerCallMs(size_t batch, F f) {
  const int64_t t0 = bench::ThreadCpuNs();
  for (size_t n = 0; n < batch; ++n) f();
  return static_cast<double>(bench::ThreadCpuNs() - t0) / 1e6 / static_cast<double>(batch);
}

template <class F>
size_t BatchFor(F f) {
  for (int k = 0; k < 3; ++k) f();  // warm: caches filled, buffers at their size
  const double ms = PerCallMs(4, f);
  return std::max<size_t>(2, static_cast<size_t>(40.0 / ms));
}

int Main(int argc, char** argv) {
  int rounds = 15;
  std::string json;
  std::vector<size_t> sizes = {25, 250};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    if (a == "--json" && i + 1 < argc) json = argv[++i];
    if (a == "--pods" && i + 1 < argc) sizes = {static_cast<size_t>(std::atoi(argv[++i]))};
  }
  std::vector<std::unique_ptr<Node>> nodes;
  for (size_t pods : sizes) {
    auto n = std::make_unique<Node>();
    n->pods = pods;
    n->snap = testing::MakeNodeSnapshot({.pods = pods, .containers_per_pod = 3, .with_bpf = true});
    n->otlp_batch = BatchFor([&] { n->EncodeOtlp(); });
    n->text_batch = BatchFor([&] { n->EncodeText(); });
    nodes.push_back(std::move(n));
  }
  size_t otlp_batch = SIZE_MAX, text_batch = SIZE_MAX;  // the largest node's: the fewest encodes
  for (const auto& n : nodes) {
    otlp_batch = std::min(otlp_batch, n->otlp_batch);
    text_batch = std::min(text_batch, n->text_batch);
  }
  for (auto& n : nodes) {
    n->otlp_batch = otlp_batch;
    n->text_batch = text_batch;
  }
  for (int r = 0; r < rounds; ++r) {
    for (auto& n : nodes) {
      double o, t;
      if (r % 2 == 0) {
        o = PerCallMs(n->otlp_batch, [&] { n->EncodeOtlp(); });
        t = PerCallMs(n->text_batch, [&] { n->EncodeText(); });
      } else {
        t = PerCallMs(n->text_batch, [&] { n->EncodeText(); });
        o = PerCallMs(n->otlp_batch, [&] { n->EncodeOtlp(); });
      }
      n->otlp_ms.push_back(o);
      n->text_ms.push_back(t);
      n->ratio.push_back(o / t);
    }
  }
  std::string js = "{\"rounds\":" + std::to_string(rounds) + ",\"nodes\":[";
  double per_point[2] = {}, per_series[2] = {};
  for (size_t k = 0; k < nodes.size(); ++k) {
    Node& n = *nodes[k];
    size_t otlp_bytes = 0;
    for (std::string_view req : n.exported.requests) otlp_bytes += req.size();
    const bench::Spread o = bench::SpreadOf(n.otlp_ms), t = bench::SpreadOf(n.text_ms), q = bench::SpreadOf(n.ratio);
    const auto points = static_cast<double>(n.otlp.last_points());
    const auto series = static_cast<double>(n.text.last_series());
    per_point[k] = o.median * 1e6 / points;
    per_series[k] = t.median * 1e6 / series;
    std::printf(
        "containers=%zu otlp_ms_p50=%.3f [%.3f-%.3f] text_ms_p50=%.3f [%.3f-%.3f] ratio_p50=%.3f [%.3f-%.3f] "
        "points=%.0f series=%.0f ns_per_point=%.1f ns_per_series=%.1f otlp_bytes=%zu requests=%zu text_bytes=%zu "
        "batch=%zu,%zu\n",
        n.pods * 4, o.median, o.min, o.max, t.median, t.min, t.max, q.median, q.min, q.max, points, series,
        per_point[k], per_series[k], otlp_bytes, n.exported.requests.size(), n.body.size(), n.otlp_batch, n.text_batch);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s{\"containers\":%zu,\"otlp_ms\":[%.4f,%.4f,%.4f],\"text_ms\":[%.4f,%.4f,%.4f],"
                  "\"ratio\":[%.4f,%.4f,%.4f],\"points\":%.0f,\"series\":%.0f,\"otlp_bytes\":%zu,\"requests\":%zu,"
                  "\"text_bytes\":%zu}",
                  k ? "," : "", n.pods * 4, o.median, o.min, o.max, t.median, t.min, t.max, q.median, q.min, q.max,
                  points, series, otlp_bytes, n.exported.requests.size(), n.body.size());
    js += buf;
  }
  if (nodes.size() < 2) return 0;
  std::printf("linearity: ns_per_point 1000/100 = %.2f (target <= 1.2); ns_per_series 1000/100 = %.2f\n",
              per_point[1] / per_point[0], per_series[1] / per_series[0]);
  char buf[160];
  std::snprintf(buf, sizeof buf, "],\"linearity_otlp\":%.4f,\"linearity_text\":%.4f}", per_point[1] / per_point[0],
                per_series[1] / per_series[0]);
  js += buf;
  if (!json.empty()) std::ofstream(json) << js << "\n";
  return 0;
}

}  // namespace
}  // namespace statlet

int main(int argc, char** argv) { return statlet::Main(argc, argv); }
