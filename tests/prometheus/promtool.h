// Runs Debian's `promtool check metrics` on an exposition and returns its verdict.
#pragma once

#include <string>
#include <vector>

namespace statlet::testing {

struct PromtoolResult {
  int exit_code = -1;
  std::string output;
  // Lint findings other than the ones statlet keeps on purpose for cAdvisor compatibility
  // (container_memory_failcnt is a counter without "_total", as cAdvisor exposes it).
  std::vector<std::string> unexpected_findings;
};

PromtoolResult PromtoolCheckMetrics(const std::string& exposition);

}  // namespace statlet::testing
