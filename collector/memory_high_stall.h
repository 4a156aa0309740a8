// The memory.high livelock detector (KEP-2570's "Latest Update"): a container
// that allocates faster than reclaim frees stays pinned at memory.high, never reaching
// memory.max, never OOM-killed. Flagged when, for a dwell time, its usage stays within a
// margin of memory.high while memory PSI "full" avg10 is above a threshold and
// memory.events high keeps rising. Holds the state across collections (the Sampler feeds
// it every snapshot, in collection order, from the collecting thread only); one log line
// on entry and one on exit.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "snapshot/snapshot.h"

namespace statlet {

struct MemoryHighStallOptions {
  bool enabled = true;
  // Usage counts as "at memory.high" from memory.high × (1 − margin) up.
  double usage_margin_ratio = 0.05;
  // memory.pressure full avg10, in percent (the kernel's unit), at or above which the
  // cgroup counts as stalled on memory.
  double psi_full_avg10_percent = 40.0;
  // How long all conditions must hold before the flag is raised.
  std::chrono::nanoseconds dwell = std::chrono::seconds(10);
  // memory.events high counts as "still rising" for this long after its last rise: two
  // collections closer together than the kernel's throttle sleeps (up to 2 s) may see no
  // new event in a livelock.
  std::chrono::nanoseconds rise_grace = std::chrono::seconds(3);
};

class MemoryHighStallDetector {
 public:
  explicit MemoryHighStallDetector(MemoryHighStallOptions options) : options_(options) {}

  // Evaluates every container of *snap against the previous collections and sets its
  // memory_qos.high_stalled / high_stalled_since_ns. Forgets cgroups that are gone.
  void Update(Snapshot* snap);

  const MemoryHighStallOptions& options() const { return options_; }

 private:
  struct State {
    Opt<int64_t> created_ns;     // the cgroup's identity: a new cgroup at a path starts over
    uint64_t high_events = 0;    // memory.events high at the last collection
    int64_t last_rise_mono = 0;  // when high events last rose (0: not seen rising)
    int64_t onset_mono = 0;      // conditions hold since (0: they do not)
    int64_t onset_wall = 0;
    bool stalled = false;
    uint64_t seen = 0;  // the last Update that saw the cgroup
  };
  MemoryHighStallOptions options_;
  std::unordered_map<std::string, State> by_path_;
  uint64_t updates_ = 0;
};

}  // namespace statlet
