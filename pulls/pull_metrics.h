// The image pull families on /metrics: pulls in flight with bytes received and needed per
// image, pulls started, completed (by result), joined and refused, the duration of
// successful pulls, content store polls that failed, and the NodeImagePulls writes.
#pragma once

#include <vector>

#include "exporters/extra_families.h"
#include "pulls/pull_engine.h"
#include "pulls/status_writer.h"

namespace statlet::pulls {

// The pull families of one moment: the engine's counters and pulls, and the status
// writer's counters (null: no writer, no family).
void AppendPullFamilies(ExpositionFormat format, const PullCounters& c, const std::vector<PullViewPtr>& pulls,
                        const StatusWriterCounters* writes, std::string* out);

class PullMetrics final : public ExtraFamilies {
 public:
  // `writer` may be null (no API server writes configured).
  PullMetrics(const PullEngine* engine, const StatusWriter* writer) : engine_(engine), writer_(writer) {}
  void Append(ExpositionFormat format, std::string* out) const override;

 private:
  const PullEngine* engine_;
  const StatusWriter* writer_;
};

}  // namespace statlet::pulls
