// Shared pieces of the probe tests: loading the probes and reading one cgroup's values.
#pragma once

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "bpf/bpf_probes.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"

namespace statlet::testing {

// A probe test's cgroup: the unified directory (the probes key by its inode) and, on
// hybrid hosts, the v1 memory one for limits. `tag` names it on the host.
class ProbeCgroup : public LiveCgroup {
 public:
  explicit ProbeCgroup(const std::string& tag)
      : LiveCgroup("/" + UniqueName("statlet-bpf-" + tag), {kUnified, kV1Memory}) {}
};

// Loads every probe, the ones left out of the default set too (mode "on"); fails the test
// when one does not load.
inline std::unique_ptr<BpfProbes> LoadAllProbes() {
  BpfOptions options = BpfOptions::WithMode(BpfMode::kOn);
  options.probes = BpfProbes::ProbeNames();
  auto probes = BpfProbes::Create(options);
  EXPECT_TRUE(probes.ok()) << probes.status().ToString();
  if (!probes.ok()) return nullptr;
  return std::move(probes).value();
}

// One Collect with `id` live; returns its values and appends OOM events to `ooms`.
inline BpfCgroupStats CollectOne(BpfProbes& probes, uint64_t id, std::vector<OomEvent>* ooms = nullptr) {
  std::unordered_map<uint64_t, BpfCgroupStats> by_id;
  std::vector<OomEvent> ignored;
  probes.Collect({id}, &by_id, ooms ? ooms : &ignored, true, true);
  return by_id[id];
}

// The scheduler probes (runqlat, faults) count a task's counters when it leaves a CPU, and
// a child that was just reaped may still be on its way out: its last switch follows the
// wakeup of its parent (the kernel's CPU time too is charged at that switch). Collects
// until `settled(values)` holds or `timeout` passes; returns the last values either way
// (the caller's assertions then fail).
template <typename Settled>
BpfCgroupStats CollectUntil(BpfProbes& probes, uint64_t id, Settled&& settled,
                            std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    BpfCgroupStats s = CollectOne(probes, id);
    if (settled(s) || std::chrono::steady_clock::now() >= deadline) return s;
    sched_yield();
  }
}

inline uint64_t SumOf(const std::vector<uint64_t>& v) { return std::accumulate(v.begin(), v.end(), uint64_t{0}); }

#define STATLET_REQUIRE_ROOT()                                      \
  do {                                                              \
    if (geteuid() != 0) GTEST_SKIP() << "needs root (real kernel)"; \
  } while (0)

}  // namespace statlet::testing
