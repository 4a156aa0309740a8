#include "metrics/exit_families.h"

#include <string>
#include <utility>

namespace statlet::metrics {

void AppendExitFamilies(const ExitTotals& t, std::vector<ExtraFamily>* out) {
  ExtraFamily exits;
  exits.name = "statlet_container_exits_total";
  exits.type = ExtraType::kCounter;
  exits.help =
      "Containers whose cgroup emptied, by reason (completed, oom_killed; killed when the runtime reports a "
      "signal).";
  exits.labels = {"reason"};
  for (size_t r = 0; r < kExitReasonCount; ++r) {
    ExtraSeries s;
    s.label_values = {ExitReasonName(static_cast<ExitReason>(r))};
    s.value = Value::Count(t.exits[r]);
    exits.series.push_back(std::move(s));
  }
  out->push_back(std::move(exits));

  ExtraFamily lifetime;
  lifetime.name = "statlet_container_exit_lifetime_seconds";
  lifetime.type = ExtraType::kHistogram;
  lifetime.help = "Lifetimes of the containers that exited: cgroup creation to emptying.";
  lifetime.unit = "seconds";
  lifetime.bounds = ExitRecords::LifetimeBounds();
  ExtraSeries h;
  h.bucket_counts = t.lifetime_buckets;
  h.sum = Value::Double(t.lifetime_sum_seconds);
  lifetime.series.push_back(std::move(h));
  out->push_back(std::move(lifetime));

  ExtraFamily dropped;
  dropped.name = "statlet_container_exit_records_dropped_total";
  dropped.type = ExtraType::kCounter;
  dropped.help = "Exit records let go before their retention ended, to hold the count and byte bounds.";
  dropped.series.push_back({{}, Value::Count(t.dropped), {}, {}});
  out->push_back(std::move(dropped));

  ExtraFamily held;
  held.name = "statlet_container_exit_records";
  held.type = ExtraType::kGauge;
  held.help = "Exit records held now.";
  held.series.push_back({{}, Value::Count(t.records), {}, {}});
  out->push_back(std::move(held));

  ExtraFamily bytes;
  bytes.name = "statlet_container_exit_records_bytes";
  bytes.type = ExtraType::kGauge;
  bytes.help = "Estimated memory the exit records hold.";
  bytes.unit = "bytes";
  bytes.series.push_back({{}, Value::Count(t.bytes), {}, {}});
  out->push_back(std::move(bytes));
}

void ExitFamilies::Collect(std::vector<ExtraFamily>* out) const { AppendExitFamilies(records_->totals(), out); }

}  // namespace statlet::metrics
