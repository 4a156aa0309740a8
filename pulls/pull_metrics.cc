#include "pulls/pull_metrics.h"

#include <optional>

namespace statlet::pulls {
namespace {

void Sample(std::string* out, std::string_view name, std::string_view labels, double v) {
  out->append(name);
  out->append(labels);
  out->push_back(' ');
  AppendDouble(out, v);
  out->push_back('\n');
}

void SampleU(std::string* out, std::string_view name, std::string_view labels, uint64_t v) {
  out->append(name);
  out->append(labels);
  out->push_back(' ');
  AppendUint(out, v);
  out->push_back('\n');
}

std::string ImageLabel(const std::string& image) {
  std::string l = "{image=\"";
  AppendEscapedLabelValue(&l, image);
  l += "\"}";
  return l;
}

}  // namespace

void PullMetrics::Append(ExpositionFormat f, std::string* out) const {
  std::optional<StatusWriterCounters> writes;
  if (writer_ != nullptr) writes = writer_->counters();
  AppendPullFamilies(f, engine_->counters(), engine_->Pulls(), writes ? &*writes : nullptr, out);
}

void AppendPullFamilies(ExpositionFormat f, const PullCounters& c, const std::vector<PullViewPtr>& pulls,
                        const StatusWriterCounters* writes, std::string* out) {
  uint64_t in_flight = 0, clients = 0;
  for (const auto& p : pulls) {
    if (PullFinished(p->phase)) continue;
    ++in_flight;
    clients += static_cast<uint64_t>(p->subscribers);
  }
  AppendFamilyHeader(out, f, "statlet_image_pulls_in_flight", "gauge", "Image pulls running (one per image).");
  SampleU(out, "statlet_image_pulls_in_flight", "", in_flight);
  AppendFamilyHeader(out, f, "statlet_image_pull_clients", "gauge",
                     "Pull calls following the pulls in flight (PullImage, PullImageWithProgress, PullImageProgress).");
  SampleU(out, "statlet_image_pull_clients", "", clients);
  AppendFamilyHeader(out, f, "statlet_image_pull_downloaded_bytes", "gauge",
                     "Bytes of the image's layers received by a pull in flight (layers already on the node count in "
                     "full).",
                     "bytes");
  for (const auto& p : pulls) {
    if (!PullFinished(p->phase)) SampleU(out, "statlet_image_pull_downloaded_bytes", ImageLabel(p->image), p->offset);
  }
  AppendFamilyHeader(out, f, "statlet_image_pull_size_bytes", "gauge",
                     "Sum of the manifest's layer sizes of a pull in flight, once the manifest is known.", "bytes");
  for (const auto& p : pulls) {
    if (!PullFinished(p->phase) && p->total) {
      SampleU(out, "statlet_image_pull_size_bytes", ImageLabel(p->image), *p->total);
    }
  }
  AppendFamilyHeader(out, f, "statlet_image_pulls_started_total", "counter",
                     "Runtime pulls started (a request joining a pull in flight starts none).");
  SampleU(out, "statlet_image_pulls_started_total", "", c.started);
  AppendFamilyHeader(out, f, "statlet_image_pulls_completed_total", "counter",
                     "Runtime pulls ended, by result: succeeded, failed (the runtime's error), stalled (no byte for "
                     "the no-progress timeout, cancelled), cancelled (every client left, or statlet stopped).");
  SampleU(out, "statlet_image_pulls_completed_total", "{result=\"succeeded\"}", c.succeeded);
  SampleU(out, "statlet_image_pulls_completed_total", "{result=\"failed\"}", c.failed);
  SampleU(out, "statlet_image_pulls_completed_total", "{result=\"stalled\"}", c.stalled);
  SampleU(out, "statlet_image_pulls_completed_total", "{result=\"cancelled\"}", c.cancelled);
  AppendFamilyHeader(out, f, "statlet_image_pull_joins_total", "counter",
                     "Pull requests that joined a pull of the same image already in flight.");
  SampleU(out, "statlet_image_pull_joins_total", "", c.joins);
  AppendFamilyHeader(out, f, "statlet_image_pull_rejected_total", "counter",
                     "Pull requests refused because --pull.max-pulls or --pull.max-clients was reached.");
  SampleU(out, "statlet_image_pull_rejected_total", "", c.rejected);
  AppendFamilyHeader(out, f, "statlet_image_pull_progress_errors_total", "counter",
                     "Polls of the runtime's content store that failed (progress and no-progress timeouts pause).");
  SampleU(out, "statlet_image_pull_progress_errors_total", "", c.content_errors);
  AppendFamilyHeader(out, f, "statlet_image_pull_duration_seconds", "histogram",
                     "Duration of successful runtime pulls, from the first request to the runtime's answer.",
                     "seconds");
  for (size_t i = 0; i < kDurationBuckets.size(); ++i) {
    std::string le = "{le=\"";
    AppendCanonicalFloat(&le, kDurationBuckets[i]);
    le += "\"}";
    SampleU(out, "statlet_image_pull_duration_seconds_bucket", le, c.duration_buckets[i]);
  }
  SampleU(out, "statlet_image_pull_duration_seconds_bucket", "{le=\"+Inf\"}", c.duration_count);
  Sample(out, "statlet_image_pull_duration_seconds_sum", "", c.duration_sum);
  SampleU(out, "statlet_image_pull_duration_seconds_count", "", c.duration_count);
  if (writes != nullptr) {
    const StatusWriterCounters& w = *writes;
    AppendFamilyHeader(out, f, "statlet_image_pull_status_writes_total", "counter",
                       "Server-side applies of this node's NodeImagePulls object, by result.");
    SampleU(out, "statlet_image_pull_status_writes_total", "{result=\"ok\"}", w.written);
    SampleU(out, "statlet_image_pull_status_writes_total", "{result=\"error\"}", w.failed);
  }
}

}  // namespace statlet::pulls
