// statlet's own instrumentation, kept in a prometheus-cpp Registry and served in the same
// /metrics response as the container families: build info, collection and scrape
// durations, the sampler's single flight, read errors, the cardinality caps, eBPF probe and
// runtime states, CRI calls by method and code, OTLP deliveries, and cAdvisor's container_scrape_error.
//
// Thread-safe: observers are called from the sampler, HTTP and gRPC threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "exporters/exposition_text.h"
#include "metrics/call_observer.h"
#include "snapshot/snapshot.h"
#include "snapshot/snapshot_source.h"

namespace statlet {

struct SelfMetricDescription {
  const char* name;
  const char* type;  // "counter", "gauge", "histogram"
  const char* help;
};
// Every family SelfMetrics registers (docs/metrics.md lists them).
std::span<const SelfMetricDescription> SelfMetricDescriptions();

class SelfMetrics final : public metrics::CallObserver {
 public:
  SelfMetrics(const std::string& version, const std::string& revision);

  prometheus::Registry& registry() { return *registry_; }

  // A collection finished (every collection, whoever asked for it).
  void ObserveCollection(const Snapshot& s);
  // A /metrics scrape was answered (or failed: scrape_error).
  void ObserveScrape(double seconds, bool collection_failed);
  // A call on statlet's CRI socket finished with gRPC status `code` (its canonical name,
  // "OK", "NOT_FOUND"...): statlet_cri_calls_total and statlet_cri_call_duration_seconds.
  void ObserveCall(std::string_view method, std::string_view code, double seconds) override;
  // OTLP export: a request accepted (with the points a partial success rejected), an
  // attempt failed, a batch given up (reason: queue_full, permanent, expired), the queue.
  void ObserveOtlpRequest(uint64_t rejected_points);
  void ObserveOtlpFailure(bool retryable);
  void ObserveOtlpDrop(std::string_view reason);
  void SetOtlpQueueBytes(uint64_t bytes);
  // The exit watcher's state (collector/exit_watcher.h): its thread's policy and nice value,
  // and the containers gone before their final read so far. Never called: no series.
  void SetExitWatcher(bool realtime, int nice, uint64_t missed);
  // Brings the state gauges and cumulative counters up to the snapshot being served and the
  // sampler's counters; `dropped_*`: left out of this snapshot by the cardinality caps.
  void Update(const Snapshot& s, const SamplerStats& sampler, uint64_t dropped_cgroups, uint64_t dropped_interfaces);

  // Appends the registry's families in `format` (OpenMetrics: without "# EOF").
  void AppendExposition(ExpositionFormat format, std::string* out) const;

 private:
  // Sets a prometheus-cpp counter to a cumulative value kept elsewhere.
  static void AdvanceTo(prometheus::Counter& c, double value);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Histogram& collection_duration_;
  prometheus::Histogram& scrape_duration_;
  prometheus::Gauge& scrape_error_;
  prometheus::Gauge& cgroups_tracked_;
  prometheus::Gauge& cgroups_reported_;
  prometheus::Gauge& files_read_;
  prometheus::Gauge& files_cached_;
  prometheus::Counter& collections_;
  prometheus::Counter& joins_;
  prometheus::Counter& reuses_;
  prometheus::Family<prometheus::Counter>& read_errors_;
  prometheus::Family<prometheus::Counter>& dropped_;
  prometheus::Counter& dropped_cgroups_;
  prometheus::Counter& dropped_interfaces_;
  prometheus::Family<prometheus::Gauge>& probe_up_;
  prometheus::Family<prometheus::Counter>& probe_lost_;
  prometheus::Family<prometheus::Gauge>& runtime_up_;
  prometheus::Family<prometheus::Gauge>& runtime_info_;
  prometheus::Family<prometheus::Counter>& cri_calls_;
  prometheus::Family<prometheus::Histogram>& cri_duration_;
  prometheus::Counter& otlp_requests_;
  prometheus::Family<prometheus::Counter>& otlp_failures_;
  prometheus::Family<prometheus::Counter>& otlp_dropped_;
  prometheus::Counter& otlp_rejected_;
  prometheus::Gauge& otlp_queue_bytes_;
  prometheus::Family<prometheus::Gauge>& exit_realtime_;
  prometheus::Family<prometheus::Counter>& exit_missed_;
  prometheus::Family<prometheus::Gauge>& exit_nice_;

  std::mutex mu_;  // Update's bookkeeping
  uint64_t last_sequence_ = UINT64_MAX;
  prometheus::Gauge* runtime_info_series_ = nullptr;
  std::string runtime_info_key_;
};

// Renders prometheus-cpp families as OpenMetrics 1.0 text (prometheus-cpp writes text 0.0.4
// only): counters as `<family>_total`, histograms with `_bucket{le}`, `_count`, `_sum`.
void AppendOpenMetrics(const std::vector<prometheus::MetricFamily>& families, std::string* out);

}  // namespace statlet
