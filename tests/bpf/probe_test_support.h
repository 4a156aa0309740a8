// Shared pieces of the probe tests: loading the probes and reading one cgroup's values.
#pragma once

#include <unistd.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "bpf/bpf_probes.h"

namespace statlet::testing {

// Loads every probe (mode "on"); fails the test when one does not load.
inline std::unique_ptr<BpfProbes> LoadAllProbes() {
  auto probes = BpfProbes::Create(BpfOptions::WithMode(BpfMode::kOn));
  EXPECT_TRUE(probes.ok()) << probes.status().ToString();
  if (!probes.ok()) return nullptr;
  return std::move(probes).value();
}

// One Collect with `id` live; returns its values and appends OOM events to `ooms`.
inline BpfCgroupStats CollectOne(BpfProbes& probes, uint64_t id, std::vector<OomEvent>* ooms = nullptr) {
  std::unordered_map<uint64_t, BpfCgroupStats> by_id;
  std::vector<OomEvent> ignored;
  probes.Collect({id}, &by_id, ooms ? ooms : &ignored);
  return by_id[id];
}

#define STATLET_REQUIRE_ROOT()                                       \
  do {                                                               \
    if (geteuid() != 0) GTEST_SKIP() << "needs root (real kernel)";  \
  } while (0)

}  // namespace statlet::testing
