#include "collector/exit_records.h"

#include <algorithm>
#include <utility>

namespace statlet {
namespace {

// Seconds: init containers and Jobs live from well under a second to hours.
constexpr double kLifetimeBounds[] = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400};

size_t StringBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

}  // namespace

ExitRecords::ExitRecords(ExitRecordOptions options) : opts_(options) {
  totals_.lifetime_buckets.assign(std::size(kLifetimeBounds) + 1, 0);
}

std::span<const double> ExitRecords::LifetimeBounds() { return kLifetimeBounds; }

size_t ExitRecords::BytesOf(const CgroupStats& c) {
  size_t n = sizeof(CgroupStats) + sizeof(Record);
  n += StringBytes(c.id.cgroup_path) + StringBytes(c.id.container_id) + StringBytes(c.id.pod_uid) +
       StringBytes(c.id.parent_path);
  n += c.cpu.per_cpu_ns.capacity() * sizeof(uint64_t);
  n += c.memory.hugetlb.capacity() * sizeof(MemoryStats::Hugetlb);
  n += c.io.devices.capacity() * sizeof(IoDeviceStats);
  n += c.bpf.per_cpu_ns.capacity() * sizeof(uint64_t);
  return n;
}

void ExitRecords::Add(CgroupStats final_stats, int64_t now_ns) {
  const size_t bytes = BytesOf(final_stats);
  std::lock_guard<std::mutex> lock(mu_);
  if (final_stats.exit) {
    ++totals_.exits[static_cast<size_t>(final_stats.exit->reason)];
    if (final_stats.exit->lifetime_ns) {
      const double s = static_cast<double>(*final_stats.exit->lifetime_ns) / 1e9;
      const auto* it = std::lower_bound(std::begin(kLifetimeBounds), std::end(kLifetimeBounds), s);
      ++totals_.lifetime_buckets[static_cast<size_t>(it - std::begin(kLifetimeBounds))];
      totals_.lifetime_sum_seconds += s;
    }
  }
  ExpireLocked(now_ns);
  records_.push_back({std::make_shared<const CgroupStats>(std::move(final_stats)), now_ns, bytes});
  totals_.bytes += bytes;
  while (records_.size() > 1 && (records_.size() > opts_.max_records || totals_.bytes > opts_.max_bytes)) {
    DropOldestLocked();
  }
  totals_.records = records_.size();
}

std::vector<std::shared_ptr<const CgroupStats>> ExitRecords::Live(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now_ns);
  std::vector<std::shared_ptr<const CgroupStats>> out;
  out.reserve(records_.size());
  for (const Record& r : records_) out.push_back(r.stats);
  return out;
}

ExitTotals ExitRecords::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

void ExitRecords::ExpireLocked(int64_t now_ns) {
  while (!records_.empty() && now_ns - records_.front().added_ns > opts_.retention_ns) {
    totals_.bytes -= records_.front().bytes;
    records_.pop_front();
  }
  totals_.records = records_.size();
}

void ExitRecords::DropOldestLocked() {
  totals_.bytes -= records_.front().bytes;
  records_.pop_front();
  ++totals_.dropped;
}

}  // namespace statlet
