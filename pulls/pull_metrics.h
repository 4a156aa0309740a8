// The image pull families on /metrics: pulls in flight with bytes received and needed per
// image, pulls started, completed (by result), joined and refused, the duration of
// successful pulls, content store polls that failed, and the NodeImagePulls writes.
#pragma once

#include "exporters/extra_families.h"

namespace statlet::pulls {

class PullEngine;
class StatusWriter;

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
