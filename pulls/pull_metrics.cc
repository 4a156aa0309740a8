#include "pulls/pull_metrics.h"

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "pulls/pull_engine.h"
#include "pulls/status_writer.h"

namespace statlet::pulls {
namespace {

using metrics::ExtraFamily;
using metrics::ExtraSeries;
using metrics::ExtraType;
using metrics::Value;

ExtraFamily Family(std::string_view name, ExtraType type, std::string_view help, std::string_view unit = {},
                   std::vector<std::string_view> labels = {}) {
  ExtraFamily f;
  f.name = name;
  f.type = type;
  f.help = help;
  f.unit = unit;
  f.labels = std::move(labels);
  return f;
}

void Add(ExtraFamily* f, uint64_t v, std::vector<std::string> label_values = {}) {
  ExtraSeries s;
  s.label_values = std::move(label_values);
  s.value = Value::Count(v);
  f->series.push_back(std::move(s));
}

// The engine keeps cumulative bucket counts (pulls at most each bound long); a series
// holds each bucket's own.
ExtraSeries DurationSeries(const PullCounters& c) {
  ExtraSeries s;
  uint64_t below = 0;
  for (size_t i = 0; i < kDurationBuckets.size(); ++i) {
    const uint64_t upto = i < c.duration_buckets.size() ? c.duration_buckets[i] : below;
    s.bucket_counts.push_back(upto - below);
    below = upto;
  }
  s.bucket_counts.push_back(c.duration_count - below);
  s.sum = Value::Double(c.duration_sum);
  return s;
}

}  // namespace

void CollectPullFamilies(const PullCounters& c, const std::vector<PullViewPtr>& pulls,
                         const StatusWriterCounters* writes, std::vector<ExtraFamily>* out) {
  uint64_t in_flight = 0, clients = 0;
  for (const auto& p : pulls) {
    if (p->observed || !InFlight(*p)) continue;
    ++in_flight;
    clients += static_cast<uint64_t>(p->subscribers);
  }
  ExtraFamily f = Family("statlet_image_pulls_in_flight", ExtraType::kGauge, "Image pulls running (one per image).");
  Add(&f, in_flight);
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_clients", ExtraType::kGauge,
             "Pull calls following the pulls in flight (PullImage, PullImageWithProgress, PullImageProgress).");
  Add(&f, clients);
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_downloaded_bytes", ExtraType::kGauge,
             "Bytes of the image's layers received by a pull in flight (layers already on the node count in full).",
             "bytes", {"image"});
  for (const auto& p : pulls) {
    if (!p->observed && InFlight(*p)) Add(&f, p->offset, {p->image});
  }
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_size_bytes", ExtraType::kGauge,
             "Sum of the manifest's layer sizes of a pull in flight, once the manifest is known.", "bytes", {"image"});
  for (const auto& p : pulls) {
    if (!p->observed && InFlight(*p) && p->total) Add(&f, *p->total, {p->image});
  }
  out->push_back(std::move(f));

  f = Family("statlet_image_pulls_started_total", ExtraType::kCounter,
             "Runtime pulls started (a request joining a pull in flight starts none).");
  Add(&f, c.started);
  out->push_back(std::move(f));

  f = Family("statlet_image_pulls_completed_total", ExtraType::kCounter,
             "Runtime pulls ended, by result: succeeded, failed (the runtime's error), stalled (no byte for the "
             "no-progress timeout, cancelled), cancelled (every client left, or statlet stopped).",
             {}, {"result"});
  Add(&f, c.succeeded, {"succeeded"});
  Add(&f, c.failed, {"failed"});
  Add(&f, c.stalled, {"stalled"});
  Add(&f, c.cancelled, {"cancelled"});
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_joins_total", ExtraType::kCounter,
             "Pull requests that joined a pull of the same image already in flight.");
  Add(&f, c.joins);
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_rejected_total", ExtraType::kCounter,
             "Pull requests refused because --pull.max-pulls or --pull.max-clients was reached.");
  Add(&f, c.rejected);
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_progress_errors_total", ExtraType::kCounter,
             "Polls of the runtime's content store that failed (progress and no-progress timeouts pause).");
  Add(&f, c.content_errors);
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_duration_seconds", ExtraType::kHistogram,
             "Duration of successful runtime pulls, from the first request to the runtime's answer.", "seconds");
  f.bounds = kDurationBuckets;
  f.series.push_back(DurationSeries(c));
  out->push_back(std::move(f));

  if (writes != nullptr) {
    f = Family("statlet_image_pull_status_writes_total", ExtraType::kCounter,
               "Server-side applies of this node's NodeImagePulls object, by result.", {}, {"result"});
    Add(&f, writes->written, {"ok"});
    Add(&f, writes->failed, {"error"});
    out->push_back(std::move(f));
  }
}

void CollectObservedPullFamilies(const ObservedCounters& c, const std::vector<PullViewPtr>& pulls,
                                 std::vector<ExtraFamily>* out) {
  uint64_t pulling = 0, stalled = 0;
  // One series per image: the same image pulled in two of the runtime's namespaces adds up.
  std::map<std::string, std::pair<uint64_t, uint64_t>> bytes;  // image → (received, size)
  for (const auto& p : pulls) {
    if (!p->observed || !InFlight(*p)) continue;
    ++(p->phase == PullPhase::kStalled ? stalled : pulling);
    if (p->image.empty()) continue;  // its manifest has not arrived: no name yet
    auto& [received, size] = bytes[p->image];
    received += p->offset;
    size += p->total.value_or(0);
  }
  ExtraFamily f = Family("statlet_image_pulls_observed_in_flight", ExtraType::kGauge,
                         "Image pulls statlet does not carry (made straight on the runtime) in flight, by state: "
                         "stalled (no byte for the no-progress timeout; statlet cannot cancel it) or pulling.",
                         {}, {"state"});
  Add(&f, pulling, {"pulling"});
  Add(&f, stalled, {"stalled"});
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_observed_downloaded_bytes", ExtraType::kGauge,
             "Bytes of the image's layers received by pulls made straight on the runtime, in flight.", "bytes",
             {"image"});
  for (const auto& [image, b] : bytes) Add(&f, b.first, {image});
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_observed_size_bytes", ExtraType::kGauge,
             "Sum of the manifest's layer sizes of pulls made straight on the runtime, in flight.", "bytes", {"image"});
  for (const auto& [image, b] : bytes) {
    if (b.second) Add(&f, b.second, {image});
  }
  out->push_back(std::move(f));

  f = Family("statlet_image_pulls_observed_completed_total", ExtraType::kCounter,
             "Pulls made straight on the runtime that ended, by result: succeeded (the image was stored) or failed "
             "(it ended without one).",
             {}, {"result"});
  Add(&f, c.succeeded, {"succeeded"});
  Add(&f, c.failed, {"failed"});
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_observed_stalls_total", ExtraType::kCounter,
             "Times a pull made straight on the runtime became stalled (it may move again).");
  Add(&f, c.stalls);
  out->push_back(std::move(f));

  f = Family("statlet_image_pull_observed_poll_errors_total", ExtraType::kCounter,
             "Polls of a watched runtime namespace that failed (observed pulls' progress pauses).");
  Add(&f, c.errors);
  out->push_back(std::move(f));
}

void PullMetrics::Collect(std::vector<ExtraFamily>* out) const {
  std::optional<StatusWriterCounters> writes;
  if (writer_ != nullptr) writes = writer_->counters();
  const std::vector<PullViewPtr> pulls = engine_->Pulls();
  CollectPullFamilies(engine_->counters(), pulls, writes ? &*writes : nullptr, out);
  if (engine_->observing()) CollectObservedPullFamilies(engine_->observed_counters(), pulls, out);
}

}  // namespace statlet::pulls
