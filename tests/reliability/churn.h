// Container churn as a busy node makes it, for the churn tests and the soak: rounds of
// containers made, seen by a scrape, removed, seen gone by a scrape; the daemon's cost
// after the first round and after the last.
#pragma once

#include <string>
#include <vector>

#include "tests/reliability/container_tree.h"
#include "tests/support/statlet_daemon.h"

namespace statlet::testing {

struct ChurnResult {
  ProcessCost warm, end;  // after the first round, after the last
  double seconds = 0;
  int churned = 0;
};

// `rounds` rounds of `per_round` containers, every `with_process_every`-th with a process.
// Failures are reported to gtest as they happen.
ChurnResult Churn(Daemon& d, ContainerTree& tree, int rounds, int per_round, int with_process_every);
void Report(const char* what, const ChurnResult& r);

}  // namespace statlet::testing
