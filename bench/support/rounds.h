// What the in-process benches that alternate their sides in rounds share: this thread's CPU
// time, and a median with its spread.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace statlet::bench {

inline int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Spread {
  double median = 0, min = 0, max = 0;
};

inline Spread SpreadOf(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v.front(), v.back()};
}

}  // namespace statlet::bench
