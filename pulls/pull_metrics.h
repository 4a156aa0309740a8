// The image pull families (served on /metrics, exported over OTLP): pulls in flight with
// bytes received and needed per image, pulls started, completed (by result), joined and
// refused, the duration of successful pulls, content store polls that failed, and the
// NodeImagePulls writes. Format-neutral samples (metrics/extra_families.h): the edges
// render them.
#pragma once

#include <vector>

#include "metrics/extra_families.h"
#include "pulls/pull_view.h"

namespace statlet::pulls {

class PullEngine;
class StatusWriter;
struct ObservedCounters;
struct PullCounters;
struct StatusWriterCounters;

// The pull families of one moment: the engine's counters and pulls, and the status
// writer's counters (null: no writer, no family).
void CollectPullFamilies(const PullCounters& counters, const std::vector<PullViewPtr>& pulls,
                         const StatusWriterCounters* writes, std::vector<metrics::ExtraFamily>* out);

// The families of the pulls statlet does not carry (observed in the runtime): in flight by
// state (a stalled one cannot be cancelled from here, only alerted on), bytes per image,
// ended ones by result, stalls and failed polls. Only where pulls are observed.
void CollectObservedPullFamilies(const ObservedCounters& counters, const std::vector<PullViewPtr>& pulls,
                                 std::vector<metrics::ExtraFamily>* out);

class PullMetrics final : public metrics::ExtraSource {
 public:
  // `writer` may be null (no API server writes configured).
  PullMetrics(const PullEngine* engine, const StatusWriter* writer) : engine_(engine), writer_(writer) {}
  void Collect(std::vector<metrics::ExtraFamily>* out) const override;

 private:
  const PullEngine* engine_;
  const StatusWriter* writer_;
};

}  // namespace statlet::pulls
