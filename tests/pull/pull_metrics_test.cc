// The image pull families on /metrics, byte for byte in both formats, from one fixed state
// of the engine and the status writer: what a scrape shows of pulls in flight, finished
// ones, the counters and the duration histogram. pulls/ gives format-neutral samples;
// exporters/ renders them.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exporters/extra_exposition.h"
#include "pulls/observed_pulls.h"
#include "pulls/pull_engine.h"
#include "pulls/pull_metrics.h"
#include "pulls/status_writer.h"

namespace statlet::pulls {
namespace {

PullViewPtr View(std::string image, PullPhase phase, uint64_t offset, std::optional<uint64_t> total, int subscribers) {
  auto v = std::make_shared<PullView>();
  v->image = std::move(image);
  v->phase = phase;
  v->offset = offset;
  v->total = total;
  v->subscribers = subscribers;
  return v;
}

PullCounters Counters() {
  PullCounters c;
  c.started = 9;
  c.succeeded = 4;
  c.failed = 1;
  c.stalled = 2;
  c.cancelled = 1;
  c.joins = 5;
  c.rejected = 3;
  c.content_errors = 7;
  // Cumulative, as the engine keeps them: pulls of 0.5 s, 2 s, 20 s and 700 s.
  c.duration_buckets = {1, 2, 2, 2, 3, 3, 3, 3, 3, 4};
  c.duration_sum = 742.5;
  c.duration_count = 4;
  return c;
}

std::vector<PullViewPtr> Pulls() {
  return {View("docker.io/library/nginx:1.25", PullPhase::kDownloading, 1234, 987654321, 2),
          View("registry.example/a\"b\\c:1", PullPhase::kResolving, 0, std::nullopt, 1),
          View("docker.io/library/busybox:1.36", PullPhase::kSucceeded, 100, 100, 0),
          View("registry.example/big:2", PullPhase::kUnpacking, 5000, 5000, 1)};
}

// What the pull families were on /metrics before they became format-neutral samples: the
// scrape must stay the same, byte for byte.
constexpr std::string_view kText = R"(# HELP statlet_image_pulls_in_flight Image pulls running (one per image).
# TYPE statlet_image_pulls_in_flight gauge
statlet_image_pulls_in_flight 3
# HELP statlet_image_pull_clients Pull calls following the pulls in flight (PullImage, PullImageWithProgress, PullImageProgress).
# TYPE statlet_image_pull_clients gauge
statlet_image_pull_clients 4
# HELP statlet_image_pull_downloaded_bytes Bytes of the image's layers received by a pull in flight (layers already on the node count in full).
# TYPE statlet_image_pull_downloaded_bytes gauge
statlet_image_pull_downloaded_bytes{image="docker.io/library/nginx:1.25"} 1234
statlet_image_pull_downloaded_bytes{image="registry.example/a\"b\\c:1"} 0
statlet_image_pull_downloaded_bytes{image="registry.example/big:2"} 5000
# HELP statlet_image_pull_size_bytes Sum of the manifest's layer sizes of a pull in flight, once the manifest is known.
# TYPE statlet_image_pull_size_bytes gauge
statlet_image_pull_size_bytes{image="docker.io/library/nginx:1.25"} 987654321
statlet_image_pull_size_bytes{image="registry.example/big:2"} 5000
# HELP statlet_image_pulls_started_total Runtime pulls started (a request joining a pull in flight starts none).
# TYPE statlet_image_pulls_started_total counter
statlet_image_pulls_started_total 9
# HELP statlet_image_pulls_completed_total Runtime pulls ended, by result: succeeded, failed (the runtime's error), stalled (no byte for the no-progress timeout, cancelled), cancelled (every client left, or statlet stopped).
# TYPE statlet_image_pulls_completed_total counter
statlet_image_pulls_completed_total{result="succeeded"} 4
statlet_image_pulls_completed_total{result="failed"} 1
statlet_image_pulls_completed_total{result="stalled"} 2
statlet_image_pulls_completed_total{result="cancelled"} 1
# HELP statlet_image_pull_joins_total Pull requests that joined a pull of the same image already in flight.
# TYPE statlet_image_pull_joins_total counter
statlet_image_pull_joins_total 5
# HELP statlet_image_pull_rejected_total Pull requests refused because --pull.max-pulls or --pull.max-clients was reached.
# TYPE statlet_image_pull_rejected_total counter
statlet_image_pull_rejected_total 3
# HELP statlet_image_pull_progress_errors_total Polls of the runtime's content store that failed (progress and no-progress timeouts pause).
# TYPE statlet_image_pull_progress_errors_total counter
statlet_image_pull_progress_errors_total 7
# HELP statlet_image_pull_duration_seconds Duration of successful runtime pulls, from the first request to the runtime's answer.
# TYPE statlet_image_pull_duration_seconds histogram
statlet_image_pull_duration_seconds_bucket{le="1.0"} 1
statlet_image_pull_duration_seconds_bucket{le="2.5"} 2
statlet_image_pull_duration_seconds_bucket{le="5.0"} 2
statlet_image_pull_duration_seconds_bucket{le="10.0"} 2
statlet_image_pull_duration_seconds_bucket{le="30.0"} 3
statlet_image_pull_duration_seconds_bucket{le="60.0"} 3
statlet_image_pull_duration_seconds_bucket{le="120.0"} 3
statlet_image_pull_duration_seconds_bucket{le="300.0"} 3
statlet_image_pull_duration_seconds_bucket{le="600.0"} 3
statlet_image_pull_duration_seconds_bucket{le="1800.0"} 4
statlet_image_pull_duration_seconds_bucket{le="+Inf"} 4
statlet_image_pull_duration_seconds_sum 742.5
statlet_image_pull_duration_seconds_count 4
# HELP statlet_image_pull_status_writes_total Server-side applies of this node's NodeImagePulls object, by result.
# TYPE statlet_image_pull_status_writes_total counter
statlet_image_pull_status_writes_total{result="ok"} 6
statlet_image_pull_status_writes_total{result="error"} 2
)";

constexpr std::string_view kOpenMetrics = R"(# TYPE statlet_image_pulls_in_flight gauge
# HELP statlet_image_pulls_in_flight Image pulls running (one per image).
statlet_image_pulls_in_flight 3
# TYPE statlet_image_pull_clients gauge
# HELP statlet_image_pull_clients Pull calls following the pulls in flight (PullImage, PullImageWithProgress, PullImageProgress).
statlet_image_pull_clients 4
# TYPE statlet_image_pull_downloaded_bytes gauge
# UNIT statlet_image_pull_downloaded_bytes bytes
# HELP statlet_image_pull_downloaded_bytes Bytes of the image's layers received by a pull in flight (layers already on the node count in full).
statlet_image_pull_downloaded_bytes{image="docker.io/library/nginx:1.25"} 1234
statlet_image_pull_downloaded_bytes{image="registry.example/a\"b\\c:1"} 0
statlet_image_pull_downloaded_bytes{image="registry.example/big:2"} 5000
# TYPE statlet_image_pull_size_bytes gauge
# UNIT statlet_image_pull_size_bytes bytes
# HELP statlet_image_pull_size_bytes Sum of the manifest's layer sizes of a pull in flight, once the manifest is known.
statlet_image_pull_size_bytes{image="docker.io/library/nginx:1.25"} 987654321
statlet_image_pull_size_bytes{image="registry.example/big:2"} 5000
# TYPE statlet_image_pulls_started counter
# HELP statlet_image_pulls_started Runtime pulls started (a request joining a pull in flight starts none).
statlet_image_pulls_started_total 9
# TYPE statlet_image_pulls_completed counter
# HELP statlet_image_pulls_completed Runtime pulls ended, by result: succeeded, failed (the runtime's error), stalled (no byte for the no-progress timeout, cancelled), cancelled (every client left, or statlet stopped).
statlet_image_pulls_completed_total{result="succeeded"} 4
statlet_image_pulls_completed_total{result="failed"} 1
statlet_image_pulls_completed_total{result="stalled"} 2
statlet_image_pulls_completed_total{result="cancelled"} 1
# TYPE statlet_image_pull_joins counter
# HELP statlet_image_pull_joins Pull requests that joined a pull of the same image already in flight.
statlet_image_pull_joins_total 5
# TYPE statlet_image_pull_rejected counter
# HELP statlet_image_pull_rejected Pull requests refused because --pull.max-pulls or --pull.max-clients was reached.
statlet_image_pull_rejected_total 3
# TYPE statlet_image_pull_progress_errors counter
# HELP statlet_image_pull_progress_errors Polls of the runtime's content store that failed (progress and no-progress timeouts pause).
statlet_image_pull_progress_errors_total 7
# TYPE statlet_image_pull_duration_seconds histogram
# UNIT statlet_image_pull_duration_seconds seconds
# HELP statlet_image_pull_duration_seconds Duration of successful runtime pulls, from the first request to the runtime's answer.
statlet_image_pull_duration_seconds_bucket{le="1.0"} 1
statlet_image_pull_duration_seconds_bucket{le="2.5"} 2
statlet_image_pull_duration_seconds_bucket{le="5.0"} 2
statlet_image_pull_duration_seconds_bucket{le="10.0"} 2
statlet_image_pull_duration_seconds_bucket{le="30.0"} 3
statlet_image_pull_duration_seconds_bucket{le="60.0"} 3
statlet_image_pull_duration_seconds_bucket{le="120.0"} 3
statlet_image_pull_duration_seconds_bucket{le="300.0"} 3
statlet_image_pull_duration_seconds_bucket{le="600.0"} 3
statlet_image_pull_duration_seconds_bucket{le="1800.0"} 4
statlet_image_pull_duration_seconds_bucket{le="+Inf"} 4
statlet_image_pull_duration_seconds_sum 742.5
statlet_image_pull_duration_seconds_count 4
# TYPE statlet_image_pull_status_writes counter
# HELP statlet_image_pull_status_writes Server-side applies of this node's NodeImagePulls object, by result.
statlet_image_pull_status_writes_total{result="ok"} 6
statlet_image_pull_status_writes_total{result="error"} 2
)";

std::string Render(ExpositionFormat format, const StatusWriterCounters* writes) {
  std::vector<metrics::ExtraFamily> families;
  CollectPullFamilies(Counters(), Pulls(), writes, &families);
  std::string out;
  AppendExtraFamilies(families, format, &out);
  return out;
}

TEST(PullMetrics, TextFormatIsTheScrapesBytes) {
  const StatusWriterCounters writes{6, 2};
  EXPECT_EQ(Render(ExpositionFormat::kText004, &writes), kText);
}

TEST(PullMetrics, OpenMetricsIsTheScrapesBytes) {
  const StatusWriterCounters writes{6, 2};
  EXPECT_EQ(Render(ExpositionFormat::kOpenMetrics100, &writes), kOpenMetrics);
}

TEST(PullMetrics, NoStatusWriterNoWritesFamily) {
  const std::string out = Render(ExpositionFormat::kText004, nullptr);
  EXPECT_EQ(out, kText.substr(0, kText.find("# HELP statlet_image_pull_status_writes_total")));
}

// Pulls made straight on the runtime: counted apart from statlet's own (which leave them
// out), one bytes series per image across the runtime's namespaces, a nameless pull (its
// manifest not yet read) in the in-flight count only, finished ones in the counters only.
TEST(PullMetrics, ObservedPullsHaveTheirOwnFamilies) {
  auto observed = [](std::string image, PullPhase phase, uint64_t offset, std::optional<uint64_t> total, std::string ns,
                     int64_t finished = 0) {
    auto v = std::make_shared<PullView>(*View(std::move(image), phase, offset, total, 0));
    v->observed = true;
    v->containerd_namespace = std::move(ns);
    v->finished_unix_ns = finished;
    return PullViewPtr(v);
  };
  std::vector<PullViewPtr> pulls = Pulls();
  pulls.push_back(observed("docker.io/library/redis:7", PullPhase::kDownloading, 100, 1000, "k8s.io"));
  pulls.push_back(observed("docker.io/library/redis:7", PullPhase::kStalled, 40, 1000, "default"));
  pulls.push_back(observed("", PullPhase::kResolving, 0, std::nullopt, "k8s.io"));
  pulls.push_back(observed("docker.io/library/done:1", PullPhase::kSucceeded, 5, 5, "k8s.io", 1));
  ObservedCounters c;
  c.seen = 6;
  c.succeeded = 3;
  c.failed = 1;
  c.stalls = 2;
  c.errors = 4;
  std::vector<metrics::ExtraFamily> families;
  CollectPullFamilies(Counters(), pulls, nullptr, &families);
  std::string own;
  AppendExtraFamilies(families, ExpositionFormat::kText004, &own);
  EXPECT_EQ(own, Render(ExpositionFormat::kText004, nullptr)) << "observed pulls counted as statlet's own";
  families.clear();
  CollectObservedPullFamilies(c, pulls, &families);
  std::string out;
  AppendExtraFamilies(families, ExpositionFormat::kText004, &out);
  EXPECT_EQ(
      out,
      R"(# HELP statlet_image_pulls_observed_in_flight Image pulls statlet does not carry (made straight on the runtime) in flight, by state: stalled (no byte for the no-progress timeout; statlet cannot cancel it) or pulling.
# TYPE statlet_image_pulls_observed_in_flight gauge
statlet_image_pulls_observed_in_flight{state="pulling"} 2
statlet_image_pulls_observed_in_flight{state="stalled"} 1
# HELP statlet_image_pull_observed_downloaded_bytes Bytes of the image's layers received by pulls made straight on the runtime, in flight.
# TYPE statlet_image_pull_observed_downloaded_bytes gauge
statlet_image_pull_observed_downloaded_bytes{image="docker.io/library/redis:7"} 140
# HELP statlet_image_pull_observed_size_bytes Sum of the manifest's layer sizes of pulls made straight on the runtime, in flight.
# TYPE statlet_image_pull_observed_size_bytes gauge
statlet_image_pull_observed_size_bytes{image="docker.io/library/redis:7"} 2000
# HELP statlet_image_pulls_observed_completed_total Pulls made straight on the runtime that ended, by result: succeeded (the image was stored) or failed (it ended without one).
# TYPE statlet_image_pulls_observed_completed_total counter
statlet_image_pulls_observed_completed_total{result="succeeded"} 3
statlet_image_pulls_observed_completed_total{result="failed"} 1
# HELP statlet_image_pull_observed_stalls_total Times a pull made straight on the runtime became stalled (it may move again).
# TYPE statlet_image_pull_observed_stalls_total counter
statlet_image_pull_observed_stalls_total 2
# HELP statlet_image_pull_observed_poll_errors_total Polls of a watched runtime namespace that failed (observed pulls' progress pauses).
# TYPE statlet_image_pull_observed_poll_errors_total counter
statlet_image_pull_observed_poll_errors_total 4
)");
}

}  // namespace
}  // namespace statlet::pulls
