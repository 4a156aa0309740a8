// Quantiles of a test's timed samples, one definition for every test that compares a
// latency with its same-run baseline: the sample at rank q * n (the upper middle one for
// the median of an even count), 0 for no samples.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace statlet::testing {

inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

inline double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

}  // namespace statlet::testing
