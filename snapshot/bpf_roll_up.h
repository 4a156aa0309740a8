// One BpfCgroupStats member as the Sampler's roll-up adds it from a cgroup into its nearest
// reported ancestor (collector/sampler.cc): the probes count each cgroup's own tasks, while
// cgroupfs counters are hierarchical. A counter adds when the cgroup has one, a per-CPU or
// histogram vector adds element-wise, a map per key. Each probe's row in the registry
// (bpf/probe_registry.cc) names the members it fills.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "snapshot/snapshot.h"

namespace statlet {

class BpfRollUp {
 public:
  using Counter = Opt<uint64_t> BpfCgroupStats::*;
  using Vector = std::vector<uint64_t> BpfCgroupStats::*;
  using Map = std::map<std::string, uint64_t> BpfCgroupStats::*;

  // Implicit, so that a registry row lists bare members (&BpfCgroupStats::oom_kills).
  constexpr BpfRollUp(Counter m) : member_(m) {}
  constexpr BpfRollUp(Vector m) : member_(m) {}
  constexpr BpfRollUp(Map m) : member_(m) {}

  void Add(const BpfCgroupStats& from, BpfCgroupStats* to) const {
    std::visit([&](auto m) { AddValue(from.*m, &(to->*m)); }, member_);
  }
  bool operator==(const BpfRollUp&) const = default;

 private:
  static void AddValue(const Opt<uint64_t>& v, Opt<uint64_t>* to) {
    if (v) *to = to->value_or(0) + *v;
  }
  static void AddValue(const std::vector<uint64_t>& v, std::vector<uint64_t>* to) {
    if (to->size() < v.size()) to->resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) (*to)[i] += v[i];
  }
  static void AddValue(const std::map<std::string, uint64_t>& v, std::map<std::string, uint64_t>* to) {
    for (const auto& [key, n] : v) (*to)[key] += n;
  }

  std::variant<Counter, Vector, Map> member_;
};

}  // namespace statlet
