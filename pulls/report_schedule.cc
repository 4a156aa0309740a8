#include "pulls/report_schedule.h"

namespace statlet::pulls {

StatusOr<ReportPolicy> MakeReportPolicy(Granularity granularity, std::optional<uint64_t> interval, bool detailed) {
  ReportPolicy p;
  p.granularity = granularity;
  p.detailed = detailed;
  const uint64_t v = interval.value_or(0);
  switch (granularity) {
    case Granularity::kTime:
      if (v > kMaxTimeIntervalSeconds) {
        return InvalidArgument("interval: at most " + std::to_string(kMaxTimeIntervalSeconds) +
                               " seconds for time granularity");
      }
      p.every = v == 0 ? kDefaultTimeInterval : std::chrono::seconds(v);
      break;
    case Granularity::kSize:
      if (v != 0 && v < kMinSizeInterval) {
        return InvalidArgument("interval: at least " + std::to_string(kMinSizeInterval) +
                               " bytes for size granularity, got " + std::to_string(v));
      }
      p.every_bytes = v == 0 ? kDefaultSizeInterval : v;
      break;
    case Granularity::kNone: break;
  }
  return p;
}

bool ReportScheduler::Due(const PullView& view, Clock::time_point now) const {
  if (!reported_) return true;
  if (!total_reported_ && view.total && policy_.granularity != Granularity::kNone) return true;
  switch (policy_.granularity) {
    case Granularity::kTime: return now >= next_time_;
    case Granularity::kSize: return view.offset >= next_offset_;
    case Granularity::kNone: return false;
  }
  return false;
}

void ReportScheduler::Reported(const PullView& view, Clock::time_point now) {
  if (view.total) total_reported_ = true;
  if (!reported_) {
    reported_ = true;
    next_time_ = now + policy_.every;
  }
  while (next_time_ <= now) next_time_ += policy_.every;
  if (policy_.granularity == Granularity::kSize) next_offset_ = view.offset + policy_.every_bytes;
}

}  // namespace statlet::pulls
