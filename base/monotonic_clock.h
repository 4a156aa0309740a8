// MonotonicNowNs: CLOCK_MONOTONIC in nanoseconds, the clock of every interval statlet
// measures (a rate's window, a call's latency, a stall): never set back, unlike the wall clock.
#pragma once

#include <time.h>

#include <cstdint>

namespace statlet {

inline int64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace statlet
