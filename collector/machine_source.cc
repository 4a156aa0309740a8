#include "collector/machine_source.h"

#include <time.h>

namespace statlet {
namespace {

int64_t ClockNs(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

MachineSource::MachineSource(MachineReadOptions options, std::chrono::nanoseconds refresh,
                             std::function<int64_t()> monotonic, std::function<int64_t()> wall)
    : options_(std::move(options)),
      refresh_ns_(refresh.count()),
      monotonic_(std::move(monotonic)),
      wall_(std::move(wall)) {
  std::lock_guard<std::mutex> lock(mu_);
  ReadLocked();
}

MachineSource::MachineSource(MachineReadOptions options, std::chrono::nanoseconds refresh)
    : MachineSource(
          std::move(options), refresh, [] { return ClockNs(CLOCK_MONOTONIC); },
          [] { return ClockNs(CLOCK_REALTIME); }) {}

void MachineSource::ReadLocked() {
  read_at_ns_ = monotonic_();
  current_ = std::make_shared<const MachineInfo>(ReadMachineInfo(options_, wall_()));
  ++reads_;
}

std::shared_ptr<const MachineInfo> MachineSource::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  if (monotonic_() - read_at_ns_ >= refresh_ns_) ReadLocked();
  return current_;
}

uint64_t MachineSource::reads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reads_;
}

}  // namespace statlet
