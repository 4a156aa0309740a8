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
  // promtool ran and parsed the exposition: 0 (clean) or 3 (lint findings). 1 is a parse
  // error; 127 (or -1) means promtool did not run, which is no verdict at all.
  bool Parsed() const { return exit_code == 0 || exit_code == 3; }
};

PromtoolResult PromtoolCheckMetrics(const std::string& exposition);

}  // namespace statlet::testing
