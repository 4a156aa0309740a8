// ExitRecords: the final stats of containers whose cgroup emptied, kept for a retention
// so that every edge still shows them after the cgroup is gone (a container that lived
// less than a scrape interval is otherwise never seen). Bounded by count and by bytes:
// the oldest record goes first, and is counted. Thread-safe: the exit watcher adds, the
// Sampler reads.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "snapshot/snapshot.h"

namespace statlet {

struct ExitRecordOptions {
  int64_t retention_ns = 120'000'000'000;  // --collector.exit-retention
  size_t max_records = 10000;
  size_t max_bytes = 32u << 20;
};

// What the records have counted since start (statlet_container_exits_total and the
// lifetime histogram, metrics/exit_families.h).
struct ExitTotals {
  std::array<uint64_t, kExitReasonCount> exits{};  // by ExitReason
  // Lifetimes: bucket i counts those at most ExitRecords::LifetimeBounds()[i] seconds and
  // above the bound before; the last bucket the longer ones.
  std::vector<uint64_t> lifetime_buckets;
  double lifetime_sum_seconds = 0;
  uint64_t dropped = 0;  // records pushed out by the bounds before their retention ended
  size_t records = 0;    // held now
  size_t bytes = 0;      // their estimated size
};

class ExitRecords {
 public:
  explicit ExitRecords(ExitRecordOptions options = {});

  // Takes the final stats of an exited container (`final_stats.exit` set). `now_ns`:
  // CLOCK_MONOTONIC, against which the retention runs.
  void Add(CgroupStats final_stats, int64_t now_ns);
  // The records younger than the retention at `now_ns` (CLOCK_MONOTONIC), oldest first;
  // older ones are let go.
  std::vector<std::shared_ptr<const CgroupStats>> Live(int64_t now_ns);
  ExitTotals totals() const;

  static std::span<const double> LifetimeBounds();
  // An estimate of the heap a record holds: the struct, its strings and vectors.
  static size_t BytesOf(const CgroupStats& c);

 private:
  struct Record {
    std::shared_ptr<const CgroupStats> stats;
    int64_t added_ns;
    size_t bytes;
  };
  void ExpireLocked(int64_t now_ns);
  void DropOldestLocked();

  const ExitRecordOptions opts_;
  mutable std::mutex mu_;
  std::deque<Record> records_;  // guarded by mu_, oldest first
  ExitTotals totals_;           // guarded by mu_
};

}  // namespace statlet
