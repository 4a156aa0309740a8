// When one client gets a progress report: KEP-3542's granularity (every N seconds, every N
// bytes, or only at the end) and the value rules for the interval a request carries.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "base/status.h"
#include "pulls/pull_view.h"

namespace statlet::pulls {

enum class Granularity : uint8_t { kTime, kSize, kNone };

struct ReportPolicy {
  Granularity granularity = Granularity::kTime;
  std::chrono::seconds every{1};  // kTime
  uint64_t every_bytes = 0;       // kSize
  bool detailed = false;          // per-layer details
};

// An interval of 0 (or none) asks for the runtime's default: KEP-3542 proposes "every
// Gibibyte downloaded or every 60 seconds". Size intervals below 1 MiB are refused (a
// report per TCP segment is not progress reporting); time intervals are whole seconds.
inline constexpr std::chrono::seconds kDefaultTimeInterval{60};
inline constexpr uint64_t kDefaultSizeInterval = uint64_t{1} << 30;
inline constexpr uint64_t kMinSizeInterval = uint64_t{1} << 20;
inline constexpr uint64_t kMaxTimeIntervalSeconds = 24 * 3600;

StatusOr<ReportPolicy> MakeReportPolicy(Granularity granularity, std::optional<uint64_t> interval, bool detailed);

class ReportScheduler {
 public:
  explicit ReportScheduler(ReportPolicy policy) : policy_(policy) {}
  const ReportPolicy& policy() const { return policy_; }
  // Whether `view` is to be reported at `now`. The first view always is, and (time and size
  // granularity) the first view that knows the image's total: a client learns the size of
  // what it waits for at once, not an interval later. The grid of time reports stays
  // anchored at the first report.
  bool Due(const PullView& view, Clock::time_point now) const;
  void Reported(const PullView& view, Clock::time_point now);

 private:
  ReportPolicy policy_;
  bool reported_ = false;
  bool total_reported_ = false;
  Clock::time_point next_time_;  // kTime: on a fixed grid from the first report, no drift
  uint64_t next_offset_ = 0;     // kSize
};

}  // namespace statlet::pulls
