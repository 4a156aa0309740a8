// The machine's facts as the snapshots carry them: read once at start and again when a
// collection finds them older than the refresh interval, never on every collection. They
// change only with hardware or CPU/memory hotplug (the identities only with a reboot), while
// reading them costs /proc/cpuinfo plus several sysfs files per CPU; cAdvisor refreshes its
// machine info on the same slow pace (google/cadvisor lib/manager/manager.go,
// --update_machine_info_interval, default 5m).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "collector/machine_reader.h"

namespace statlet {

class MachineSource {
 public:
  static constexpr std::chrono::minutes kDefaultRefresh{5};
  // Clocks in nanoseconds: `monotonic` paces the refresh, `wall` stamps the facts. Reads
  // the machine now.
  MachineSource(MachineReadOptions options, std::chrono::nanoseconds refresh, std::function<int64_t()> monotonic,
                std::function<int64_t()> wall);
  // With the system's clocks.
  MachineSource(MachineReadOptions options, std::chrono::nanoseconds refresh = kDefaultRefresh);

  // The facts as last read, read again first when older than the refresh interval.
  // Thread-safe; the result is shared and immutable.
  std::shared_ptr<const MachineInfo> Current();
  // Reads done since construction (the first included).
  uint64_t reads() const;

 private:
  void ReadLocked();

  const MachineReadOptions options_;
  const int64_t refresh_ns_;
  std::function<int64_t()> monotonic_, wall_;
  mutable std::mutex mu_;
  std::shared_ptr<const MachineInfo> current_;  // guarded by mu_
  int64_t read_at_ns_ = 0;                      // guarded by mu_ (monotonic)
  uint64_t reads_ = 0;                          // guarded by mu_
};

}  // namespace statlet
