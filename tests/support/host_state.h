// What a live test or bench reads of the host beside its own figures: the monotonic clock,
// and the load average to print with a run (its figures depend on it).
#pragma once

#include <time.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace statlet::testing {

inline int64_t MonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// "/proc/loadavg"'s 1, 5 and 15 minute figures, space-separated.
inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

}  // namespace statlet::testing
