// The probe registry (bpf/probe_registry.cc) and what follows from it, without a kernel:
// every BpfCgroupStats member is some row's, and the Sampler adds up exactly those; every
// row has a probe state, a line in --help, a name --bpf.probes takes and a line in
// bpf/README.md. (tests/prometheus/bpf_serving_test.cc checks statlet_bpf_probe_up has a
// series per row on a live daemon.)
#include "bpf/probe_registry.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "bpf/bpf_probes.h"
#include "cmd/daemon_options.h"
#include "collector/sampler.h"

namespace statlet {
namespace {

using bpf::ProbeInfo;
using bpf::ProbeRegistry;

// How many members an aggregate has: the most initializers it accepts.
struct AnyMember {
  template <typename T>
  operator T() const;
};
template <typename T, typename... A>
constexpr size_t CountMembers() {
  if constexpr (requires { T{A{}..., AnyMember{}}; }) {
    return CountMembers<T, A..., AnyMember>();
  } else {
    return sizeof...(A);
  }
}

// A value in every member, scaled by k so that sums tell the cgroups apart.
BpfCgroupStats Seed(uint64_t k) {
  static_assert(CountMembers<BpfCgroupStats>() == 13,
                "a new BpfCgroupStats member: give it a value here and a check in ExpectSum");
  BpfCgroupStats s;
  s.per_cpu_ns = {1 * k, 2 * k};
  s.minor_faults = 3 * k;
  s.major_faults = 4 * k;
  s.oom_kills = 5 * k;
  s.tcp_retransmits = 6 * k;
  s.tcp_drops = 7 * k;
  s.tcp_drop_reasons = {{"NOT_SPECIFIED", 8 * k}};
  s.runq_latency_log2_us = {9 * k, 10 * k, 11 * k};
  s.runq_latency_sum_ns = 12 * k;
  s.net_rx_bytes = 13 * k;
  s.net_rx_packets = 14 * k;
  s.net_tx_bytes = 15 * k;
  s.net_tx_packets = 16 * k;
  return s;
}

// `got` holds Seed(k) in every member.
void ExpectSum(const BpfCgroupStats& got, uint64_t k, const std::string& where) {
  BpfCgroupStats want = Seed(k);
  EXPECT_EQ(got.per_cpu_ns, want.per_cpu_ns) << where;
  EXPECT_EQ(got.minor_faults, want.minor_faults) << where;
  EXPECT_EQ(got.major_faults, want.major_faults) << where;
  EXPECT_EQ(got.oom_kills, want.oom_kills) << where;
  EXPECT_EQ(got.tcp_retransmits, want.tcp_retransmits) << where;
  EXPECT_EQ(got.tcp_drops, want.tcp_drops) << where;
  EXPECT_EQ(got.tcp_drop_reasons, want.tcp_drop_reasons) << where;
  EXPECT_EQ(got.runq_latency_log2_us, want.runq_latency_log2_us) << where;
  EXPECT_EQ(got.runq_latency_sum_ns, want.runq_latency_sum_ns) << where;
  EXPECT_EQ(got.net_rx_bytes, want.net_rx_bytes) << where;
  EXPECT_EQ(got.net_rx_packets, want.net_rx_packets) << where;
  EXPECT_EQ(got.net_tx_bytes, want.net_tx_bytes) << where;
  EXPECT_EQ(got.net_tx_packets, want.net_tx_packets) << where;
}

std::vector<BpfRollUp> AllRollUps() {
  std::vector<BpfRollUp> out;
  for (const ProbeInfo& p : ProbeRegistry()) out.insert(out.end(), p.rolls_up.begin(), p.rolls_up.end());
  return out;
}

TEST(ProbeRegistry, RowsAreNamedOnceAndDescribed) {
  std::set<std::string_view> names;
  size_t defaults = 0;
  for (const ProbeInfo& p : ProbeRegistry()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_FALSE(p.name.empty());
    EXPECT_EQ(p.name.find_first_of(", "), std::string_view::npos) << p.name << ": --bpf.probes splits at commas";
    EXPECT_FALSE(p.help.empty()) << p.name;
    EXPECT_NE(p.loader, nullptr) << p.name;
    defaults += p.on_by_default;
  }
  EXPECT_GT(defaults, 0u);
  std::vector<std::string> want, want_defaults;
  for (const ProbeInfo& p : ProbeRegistry()) {
    want.emplace_back(p.name);
    if (p.on_by_default) want_defaults.emplace_back(p.name);
  }
  EXPECT_EQ(BpfProbes::ProbeNames(), want);
  EXPECT_EQ(BpfProbes::DefaultProbeNames(), want_defaults);
}

// A member no row names would never be added up (a pod would show only its own tasks).
TEST(ProbeRegistry, EveryBpfCgroupStatsMemberIsOneRowsRollUp) {
  std::vector<BpfRollUp> all = AllRollUps();
  EXPECT_EQ(all.size(), CountMembers<BpfCgroupStats>()) << "a BpfCgroupStats member that no registry row rolls up";
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i + 1; j < all.size(); ++j) EXPECT_FALSE(all[i] == all[j]) << "rolled up twice: " << i << ", " << j;
  }
  EXPECT_TRUE(BpfProbes::Create(BpfOptions::WithMode(BpfMode::kOff)).value()->RollUps() == all)
      << "BpfProbes::RollUps is not the registry's";
}

// A collector that returns one fixed tree: a pod, its two containers, a sibling.
class FixedTree : public Collector {
 public:
  StatusOr<Snapshot> Collect(CollectParts parts) override {
    Snapshot s;
    s.parts = parts;
    uint64_t id = 100;
    for (const char* path : {"/", "/kubepods", "/kubepods/pod1", "/kubepods/pod1/a", "/kubepods/pod1/b", "/other"}) {
      CgroupStats c;
      c.id.cgroup_path = path;
      c.id.cgroup_id = ++id;
      s.cgroups.push_back(std::move(c));
    }
    return s;
  }
  const char* CgroupMode() const override { return "v2"; }
};

// The kernel side as the probes give it: every live cgroup's own values, Seed(k) with k
// its position in the tree (so /kubepods/pod1 = 3 adds up to 3 + 4 + 5 = 12).
class SeededProbes : public BpfSource {
 public:
  void Collect(const std::vector<uint64_t>& live, std::unordered_map<uint64_t, BpfCgroupStats>* by_id,
               std::vector<OomEvent>*, bool, bool) override {
    for (uint64_t id : live) (*by_id)[id] = Seed(id - 100);
  }
  std::vector<SourceState> ProbeStates() const override { return probes_->ProbeStates(); }
  std::vector<BpfRollUp> RollUps() const override { return probes_->RollUps(); }

 private:
  std::unique_ptr<BpfProbes> probes_ = BpfProbes::Create(BpfOptions::WithMode(BpfMode::kOff)).value();
};

TEST(ProbeRegistry, TheSamplerAddsUpEveryRowsMembers) {
  SeededProbes probes;
  Sampler sampler(std::make_unique<FixedTree>(), nullptr, &probes);
  auto snap = sampler.Get(std::chrono::nanoseconds(0));
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  const Snapshot& s = **snap;
  ExpectSum(s.FindByPath("/kubepods/pod1/a")->bpf, 4, "a leaf keeps its own");
  ExpectSum(s.FindByPath("/kubepods/pod1")->bpf, 3 + 4 + 5, "a pod adds its containers");
  ExpectSum(s.FindByPath("/kubepods")->bpf, 2 + 3 + 4 + 5, "and its pods");
  ExpectSum(s.FindByPath("/")->bpf, 1 + 2 + 3 + 4 + 5 + 6, "the root adds everything");
  // Every row has its state, in the registry's order, whatever is loaded.
  ASSERT_EQ(s.bpf_probes.size(), ProbeRegistry().size());
  for (size_t i = 0; i < s.bpf_probes.size(); ++i) {
    EXPECT_EQ(s.bpf_probes[i].name, ProbeRegistry()[i].name);
    EXPECT_FALSE(s.bpf_probes[i].up);
    EXPECT_EQ(s.bpf_probes[i].detail, "disabled");
  }
}

TEST(ProbeRegistry, FlagsTakeEveryRowAndHelpDescribesIt) {
  std::string usage = DaemonUsage();
  std::string defaults;
  for (const ProbeInfo& p : ProbeRegistry()) {
    // "        <name>  <help>" with the names padded to one column.
    size_t at = usage.find("\n        " + std::string(p.name) + " ");
    ASSERT_NE(at, std::string::npos) << p.name << usage;
    at = usage.find_first_not_of(' ', at + 9 + p.name.size());
    EXPECT_EQ(usage.compare(at, p.help.size(), p.help), 0) << p.name << usage;
    DaemonOptions o;
    Status s = ParseDaemonOptions({"--bpf.probes=" + std::string(p.name)}, &o);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(o.bpf.probes, std::vector<std::string>{std::string(p.name)});
    if (p.on_by_default) defaults += (defaults.empty() ? "" : ",") + std::string(p.name);
  }
  EXPECT_NE(usage.find("Default: " + defaults + " "), std::string::npos) << usage;
  DaemonOptions o;
  Status s = ParseDaemonOptions({"--bpf.probes=cpu,nope"}, &o);
  EXPECT_FALSE(s.ok());
  for (const ProbeInfo& p : ProbeRegistry()) EXPECT_NE(s.message().find(p.name), std::string::npos) << s.message();
}

TEST(ProbeRegistry, ReadmeHasARowForEachProbe) {
  std::ifstream in(STATLET_SOURCE_DIR "/bpf/README.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  for (const ProbeInfo& p : ProbeRegistry()) {
    EXPECT_NE(text.str().find("\n| `" + std::string(p.name) + "` |"), std::string::npos) << p.name;
  }
}

}  // namespace
}  // namespace statlet
