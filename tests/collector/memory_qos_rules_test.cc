// Every generation's Memory QoS rules (collector/memory_qos_rules.h): the KEP's v1.22 and
// v1.27 tables, every row of the v1.36 mapping table (the v1.36 blog's table and
// the KEP's mapping rules), v1.37's defaults, and each version's defaults.
#include "collector/memory_qos_rules.h"
#include "tests/support/byte_units.h"

#include <gtest/gtest.h>

namespace statlet {
namespace {

using testing::kMi;
constexpr uint64_t kNone = 0;  // "not set" for request / limit
constexpr auto G = QosClass::kGuaranteed;
constexpr auto B = QosClass::kBurstable;
constexpr auto BE = QosClass::kBestEffort;

MemoryQosRules Rules(MemoryQosGeneration g, std::optional<double> factor,
                     MemoryReservationPolicy p = MemoryReservationPolicy::kMinForEveryRequest, uint64_t page = kMi) {
  MemoryQosRules r;
  r.generation = g;
  r.enabled = true;
  r.throttling_factor = factor;
  r.reservation = p;
  r.page_size = page;  // KEP-2570's tables assume a 1Mi page
  return r;
}

std::optional<uint64_t> High(const MemoryQosRules& r, uint64_t request, uint64_t limit,
                             std::optional<uint64_t> alloc = std::nullopt) {
  return ContainerMemoryHigh(r, request, limit, alloc);
}

// ---------------------------------------------------------------- v1.22 and v1.27 (kept)

// KEP-2570 table "limits.memory (1000) | memory throttling factor (0.9)", v1.27 formula. The
// KEP printed 960 and 980 for requests 800 and 900 until 658b6fdf corrected them to the
// formula's 980 and 990.
TEST(MemoryQosRulesV127, TableLimit1000Factor09) {
  struct Row {
    uint64_t request, high;
  };
  const Row rows[] = {{0, 900},   {100, 910}, {200, 920}, {300, 930}, {400, 940},
                      {500, 950}, {600, 960}, {700, 970}, {800, 980}, {900, 990}};
  const MemoryQosRules r = Rules(MemoryQosGeneration::kV1_27, 0.9);
  for (const Row& row : rows) {
    ExpectedKnobs e = ContainerKnobs(r, B, row.request * kMi, 1000 * kMi, std::nullopt);
    EXPECT_EQ(e.high, row.high * kMi) << "request " << row.request;
    EXPECT_EQ(e.min, row.request * kMi) << "request " << row.request;
    EXPECT_EQ(e.low, 0u);
  }
  // request = limit: memory.high stays "max" (Guaranteed).
  ExpectedKnobs g = ContainerKnobs(r, G, 1000 * kMi, 1000 * kMi, std::nullopt);
  EXPECT_EQ(g.high, kUnlimited);
  EXPECT_EQ(g.min, 1000 * kMi);
}

// KEP-2570 table "Limit 1000Mi Request, factor": both formulas. The KEP's last row reads
// "request 500Gi, factor 0.4" until 658b6fdf; its v1.27 value 700Mi fixes it as 500Mi.
TEST(MemoryQosRulesV127, ComparisonTableWithV122) {
  struct Row {
    uint64_t request;
    double factor;
    uint64_t v122, v127;  // kUnlimited: no throttling / max
  };
  const Row rows[] = {
      {500, 0.6, 600, 800}, {800, 0.6, kUnlimited, 920}, {1024, 0.6, kUnlimited, kUnlimited},
      {500, 0.8, 800, 900}, {850, 0.8, kUnlimited, 970}, {500, 0.4, kUnlimited, 700},
  };
  auto mib = [](uint64_t v) { return v == kUnlimited ? kUnlimited : v * kMi; };
  for (const Row& row : rows) {
    const uint64_t request = row.request * kMi, limit = 1000 * kMi;
    EXPECT_EQ(High(Rules(MemoryQosGeneration::kV1_22, row.factor), request, limit), mib(row.v122))
        << "v1.22 request " << row.request << " factor " << row.factor;
    EXPECT_EQ(High(Rules(MemoryQosGeneration::kV1_27, row.factor), request, limit), mib(row.v127))
        << "v1.27 request " << row.request << " factor " << row.factor;
  }
}

// The v1.22 prose: 50/100 at 0.8 → 80; 85/100 → 80 < 85, not set; 800/1000 → 800, not
// above memory.min, not set.
TEST(MemoryQosRulesV122, ProseExamples) {
  const MemoryQosRules r = Rules(MemoryQosGeneration::kV1_22, 0.8);
  EXPECT_EQ(High(r, 50 * kMi, 100 * kMi), 80 * kMi);
  EXPECT_EQ(High(r, 85 * kMi, 100 * kMi), kUnlimited);
  EXPECT_EQ(High(r, 800 * kMi, 1000 * kMi), kUnlimited);
}

// v1.22: no page rounding, BestEffort gets factor × allocatable, Guaranteed nothing.
TEST(MemoryQosRulesV122, BestEffortAndGuaranteed) {
  const MemoryQosRules r = Rules(MemoryQosGeneration::kV1_22, 0.8, MemoryReservationPolicy::kMinForEveryRequest, 4096);
  EXPECT_EQ(High(r, kNone, kNone, 1000001), 800000u);  // truncated to bytes, no page
  EXPECT_EQ(High(r, 256 * kMi, 256 * kMi, 4096 * kMi), kUnlimited);
  ExpectedKnobs be = ContainerKnobs(r, BE, kNone, kNone, 1000 * kMi);
  EXPECT_EQ(be.min, 0u);
  EXPECT_EQ(be.high, 800 * kMi);
}

// v1.27 to v1.36: no limit → node allocatable (case II); a limit without a request counts
// the request as 0 (case III); BestEffort (request = limit = 0) gets no memory.high
// (kubernetes/kubernetes#137685); unknown allocatable: memory.high cannot be told.
TEST(MemoryQosRulesV127, AllocatableCasesAndBestEffort) {
  for (auto g : {MemoryQosGeneration::kV1_27, MemoryQosGeneration::kV1_36}) {
    const MemoryQosRules r = Rules(g, 0.9);
    EXPECT_EQ(High(r, 500 * kMi, kNone, 2000 * kMi), 1850 * kMi);
    EXPECT_EQ(High(r, kNone, 1000 * kMi, 2000 * kMi), 900 * kMi);
    EXPECT_EQ(High(r, kNone, kNone, 2000 * kMi), kUnlimited) << MemoryQosGenerationName(g);
    EXPECT_EQ(High(r, 500 * kMi, kNone, std::nullopt), std::nullopt);
    EXPECT_EQ(High(r, 500 * kMi, kNone, kUnlimited), std::nullopt);
    // Allocatable below the request: the formula lands under it, nothing set.
    EXPECT_EQ(High(r, 500 * kMi, kNone, 400 * kMi), kUnlimited);
  }
}

TEST(MemoryQosRulesV127, RoundsDownToThePage) {
  const MemoryQosRules r = Rules(MemoryQosGeneration::kV1_27, 0.9, MemoryReservationPolicy::kMinForEveryRequest, 4096);
  EXPECT_EQ(High(r, kNone, 1000000), 219u * 4096u);   // 900,000 = 219.7 pages
  EXPECT_EQ(High(r, 100000, 1000000), 222u * 4096u);  // 910,000 = 222.2 pages
  MemoryQosRules half = r;
  half.throttling_factor = 0.5;
  EXPECT_EQ(High(half, kNone, 1000u * 4096u), 500u * 4096u);
}

// ---------------------------------------------------------------- v1.36

// The v1.36 blog's table under TieredReservation, row by row, with the KEP's mapping rules
// for pods (rule 2), the Burstable QoS cgroup and kubepods (rule 5).
TEST(MemoryQosRulesV136, TieredReservationTable) {
  const MemoryQosRules r = Rules(MemoryQosGeneration::kV1_36, 0.9, MemoryReservationPolicy::kTieredReservation);
  const uint64_t alloc = 4000 * kMi;
  // Guaranteed: memory.min = request, memory.low not set, memory.high not set.
  ExpectedKnobs g = ContainerKnobs(r, G, 512 * kMi, 512 * kMi, alloc);
  EXPECT_EQ(g.min, 512 * kMi);
  EXPECT_EQ(g.low, 0u);
  EXPECT_EQ(g.high, kUnlimited);
  // Burstable: memory.min not set, memory.low = request, memory.high by the formula.
  ExpectedKnobs b = ContainerKnobs(r, B, 200 * kMi, 1000 * kMi, alloc);
  EXPECT_EQ(b.min, 0u);
  EXPECT_EQ(b.low, 200 * kMi);
  EXPECT_EQ(b.high, 920 * kMi);  // 200 + 0.9 × 800
  // Burstable without a limit: the formula over node allocatable.
  EXPECT_EQ(ContainerKnobs(r, B, 200 * kMi, kNone, alloc).high, 3620 * kMi);  // 200 + 0.9 × 3800
  // A Burstable pod's container whose request equals its limit: memory.low, no memory.high.
  ExpectedKnobs bg = ContainerKnobs(r, B, 300 * kMi, 300 * kMi, alloc);
  EXPECT_EQ(bg.low, 300 * kMi);
  EXPECT_EQ(bg.high, kUnlimited);
  // BestEffort: neither; v1.36 still writes no memory.high for it (the blog's "calculated
  // from node allocatable" is the KEP's intent, fixed after v1.36.0).
  ExpectedKnobs be = ContainerKnobs(r, BE, kNone, kNone, alloc);
  EXPECT_EQ(be.min, 0u);
  EXPECT_EQ(be.low, 0u);
  EXPECT_EQ(be.high, kUnlimited);
  // Pods: Guaranteed memory.min = the sum, Burstable memory.low = the sum, BestEffort none.
  ExpectedKnobs pg = PodKnobs(r, G, 1024 * kMi);
  EXPECT_EQ(pg.min, 1024 * kMi);
  EXPECT_EQ(pg.low, 0u);
  EXPECT_FALSE(pg.high);
  ExpectedKnobs pb = PodKnobs(r, B, 700 * kMi);
  EXPECT_EQ(pb.min, 0u);
  EXPECT_EQ(pb.low, 700 * kMi);
  ExpectedKnobs pbe = PodKnobs(r, BE, 0);
  EXPECT_EQ(pbe.min, 0u);
  EXPECT_EQ(pbe.low, 0u);
  // QoS cgroups and kubepods: Burstable memory.low = Burstable sum (memory.min left 0);
  // BestEffort nothing; kubepods memory.min = Guaranteed + Burstable, memory.low not set in
  // v1.36 (kubernetes/kubernetes#140267).
  const ClassRequests sums{1024 * kMi, 700 * kMi};
  ExpectedKnobs qb = QosCgroupKnobs(r, B, sums);
  EXPECT_EQ(qb.min, 0u);
  EXPECT_EQ(qb.low, 700 * kMi);
  ExpectedKnobs qbe = QosCgroupKnobs(r, BE, sums);
  EXPECT_EQ(qbe.min, 0u);
  EXPECT_EQ(qbe.low, 0u);
  ExpectedKnobs kp = KubepodsKnobs(r, sums);
  EXPECT_EQ(kp.min, 1724 * kMi);
  EXPECT_EQ(kp.low, 0u);
  // Which knob protects which class.
  EXPECT_EQ(ProtectingKnob(r, G), ProtectionKnob::kMin);
  EXPECT_EQ(ProtectingKnob(r, B), ProtectionKnob::kLow);
  EXPECT_EQ(ProtectingKnob(r, BE), std::nullopt);
}

// "None (default): no memory.min or memory.low is written. Throttling via memory.high still
// works." (v1.36 blog)
TEST(MemoryQosRulesV136, NonePolicyTable) {
  const MemoryQosRules r = Rules(MemoryQosGeneration::kV1_36, 0.9, MemoryReservationPolicy::kNone);
  const uint64_t alloc = 4000 * kMi;
  for (QosClass q : {G, B, BE}) {
    const uint64_t req = q == BE ? 0 : 512 * kMi, lim = q == G ? 512 * kMi : q == B ? 1024 * kMi : 0;
    ExpectedKnobs c = ContainerKnobs(r, q, req, lim, alloc);
    EXPECT_EQ(c.min, 0u) << QosClassName(q);
    EXPECT_EQ(c.low, 0u) << QosClassName(q);
    ExpectedKnobs p = PodKnobs(r, q, req);
    EXPECT_EQ(p.min, 0u);
    EXPECT_EQ(p.low, 0u);
    EXPECT_EQ(ProtectingKnob(r, q), std::nullopt);
  }
  EXPECT_EQ(ContainerKnobs(r, G, 512 * kMi, 512 * kMi, alloc).high, kUnlimited);
  EXPECT_EQ(ContainerKnobs(r, B, 512 * kMi, 1024 * kMi, alloc).high, 972 * kMi);  // 512 + 0.9 × 512 = 972.8
  EXPECT_EQ(ContainerKnobs(r, BE, 0, 0, alloc).high, kUnlimited);
  const ClassRequests sums{1024 * kMi, 700 * kMi};
  EXPECT_EQ(QosCgroupKnobs(r, B, sums).low, 0u);
  EXPECT_EQ(QosCgroupKnobs(r, B, sums).min, 0u);
  EXPECT_EQ(KubepodsKnobs(r, sums).min, 0u);
  EXPECT_EQ(KubepodsKnobs(r, sums).low, 0u);
}

// Before v1.36 every request is memory.min, at every level.
TEST(MemoryQosRulesV127, MemoryMinEverywhere) {
  const MemoryQosRules r = Rules(MemoryQosGeneration::kV1_27, 0.9);
  EXPECT_EQ(ContainerKnobs(r, B, 200 * kMi, 1000 * kMi, std::nullopt).min, 200 * kMi);
  EXPECT_EQ(PodKnobs(r, G, 1024 * kMi).min, 1024 * kMi);
  EXPECT_EQ(PodKnobs(r, B, 700 * kMi).min, 700 * kMi);
  EXPECT_EQ(PodKnobs(r, B, 700 * kMi).low, 0u);
  const ClassRequests sums{1024 * kMi, 700 * kMi};
  EXPECT_EQ(QosCgroupKnobs(r, B, sums).min, 700 * kMi);
  EXPECT_EQ(QosCgroupKnobs(r, B, sums).low, 0u);
  EXPECT_EQ(KubepodsKnobs(r, sums).min, 1724 * kMi);
  EXPECT_EQ(ProtectingKnob(r, B), ProtectionKnob::kMin);
  EXPECT_EQ(ProtectingKnob(r, G), ProtectionKnob::kMin);
}

// ---------------------------------------------------------------- v1.37

// The defaults: gate on, no factor, policy None: nothing written at all (v1.37 blog).
TEST(MemoryQosRulesV137, DefaultsWriteNothing) {
  const MemoryQosGeneration g = MemoryQosGeneration::kV1_37;
  const MemoryQosRules r = Rules(g, DefaultThrottlingFactor(g), DefaultReservationPolicy(g));
  ASSERT_TRUE(DefaultFeatureGate(g));
  for (QosClass q : {G, B, BE}) {
    ExpectedKnobs c = ContainerKnobs(r, q, q == BE ? 0 : 100 * kMi,
                                     q == B   ? 500 * kMi
                                     : q == G ? 100 * kMi
                                              : 0,
                                     4000 * kMi);
    EXPECT_EQ(c.min, 0u);
    EXPECT_EQ(c.low, 0u);
    EXPECT_EQ(c.high, kUnlimited) << QosClassName(q);
  }
  EXPECT_EQ(KubepodsKnobs(r, {100 * kMi, 100 * kMi}).min, 0u);
}

// With a factor set: BestEffort gets floor(factor × allocatable / page) × page
// (kubernetes/kubernetes#138139), the others as before; TieredReservation also sets
// kubepods memory.low (kubernetes/kubernetes#140267).
TEST(MemoryQosRulesV137, FactorSetAndTiered) {
  const MemoryQosRules r = Rules(MemoryQosGeneration::kV1_37, 0.8, MemoryReservationPolicy::kTieredReservation, 4096);
  EXPECT_EQ(High(r, 0, 0, 1000000), 195u * 4096u);  // 800,000 = 195.3 pages
  EXPECT_EQ(High(r, 0, 0, std::nullopt), std::nullopt);
  EXPECT_EQ(High(r, 64 * kMi, 64 * kMi, 1000000), kUnlimited);
  EXPECT_EQ(High(r, 16 * kMi, 64 * kMi), 54u * kMi + 102u * 4096u);  // 16 + 0.8 × 48 = 54.4 MiB
  const ClassRequests sums{1024 * kMi, 700 * kMi};
  EXPECT_EQ(KubepodsKnobs(r, sums).min, 1724 * kMi);
  EXPECT_EQ(KubepodsKnobs(r, sums).low, 700 * kMi);
  EXPECT_EQ(QosCgroupKnobs(r, B, sums).low, 700 * kMi);
}

// ---------------------------------------------------------------- gate and versions

TEST(MemoryQosRules, GateOffOrUnknownSetsNothing) {
  MemoryQosRules off = Rules(MemoryQosGeneration::kV1_36, 0.9, MemoryReservationPolicy::kTieredReservation);
  off.enabled = false;
  EXPECT_FALSE(ContainerKnobs(off, G, kMi, kMi, kMi).min);
  EXPECT_FALSE(PodKnobs(off, G, kMi).min);
  EXPECT_FALSE(KubepodsKnobs(off, {}).min);
  EXPECT_EQ(ProtectingKnob(off, G), std::nullopt);
  EXPECT_STREQ(MemoryQosRulesLabel(off), "off");
  MemoryQosRules unknown;
  EXPECT_FALSE(unknown.Applies());
  EXPECT_STREQ(MemoryQosRulesLabel(unknown), "unknown");
  MemoryQosRules none = Rules(MemoryQosGeneration::kNone, std::nullopt);
  EXPECT_FALSE(none.Applies());
  EXPECT_STREQ(MemoryQosRulesLabel(none), "off");
  EXPECT_STREQ(MemoryQosRulesLabel(Rules(MemoryQosGeneration::kV1_37, std::nullopt)), "v1.37");
}

TEST(MemoryQosRules, EachVersionsDefaults) {
  struct Row {
    const char* version;
    MemoryQosGeneration g;
    bool gate;
    std::optional<double> factor;
    MemoryReservationPolicy policy;
  };
  using P = MemoryReservationPolicy;
  const Row rows[] = {
      {"v1.21.14", MemoryQosGeneration::kNone, false, std::nullopt, P::kMinForEveryRequest},
      {"v1.22.0", MemoryQosGeneration::kV1_22, false, 0.8, P::kMinForEveryRequest},
      {"v1.26.15", MemoryQosGeneration::kV1_22, false, 0.8, P::kMinForEveryRequest},
      {"v1.27.0", MemoryQosGeneration::kV1_27, false, 0.9, P::kMinForEveryRequest},
      {"v1.28.3", MemoryQosGeneration::kV1_27, false, 0.9, P::kMinForEveryRequest},
      {"v1.35.1", MemoryQosGeneration::kV1_27, false, 0.9, P::kMinForEveryRequest},
      {"v1.36.0", MemoryQosGeneration::kV1_36, false, 0.9, P::kNone},
      {"v1.36.2-eks-1a2b3c", MemoryQosGeneration::kV1_36, false, 0.9, P::kNone},
      {"v1.37.0", MemoryQosGeneration::kV1_37, true, std::nullopt, P::kNone},
      {"1.37.1+k3s1", MemoryQosGeneration::kV1_37, true, std::nullopt, P::kNone},
      {"v1.38.0-alpha.1", MemoryQosGeneration::kV1_37, true, std::nullopt, P::kNone},
  };
  for (const Row& row : rows) {
    const std::optional<int> minor = KubeletMinorVersion(row.version);
    ASSERT_TRUE(minor) << row.version;
    const MemoryQosGeneration g = GenerationOfMinor(*minor);
    EXPECT_EQ(g, row.g) << row.version;
    EXPECT_EQ(DefaultFeatureGate(g), row.gate) << row.version;
    EXPECT_EQ(DefaultThrottlingFactor(g), row.factor) << row.version;
    EXPECT_EQ(DefaultReservationPolicy(g), row.policy) << row.version;
  }
  for (const char* bad : {"", "v2.0.0", "1", "v1.", "vX.Y", "v1.36x", "latest"}) {
    EXPECT_FALSE(KubeletMinorVersion(bad)) << bad;
  }
  MemoryReservationPolicy p;
  ASSERT_TRUE(ParseMemoryReservationPolicy("TieredReservation", &p));
  EXPECT_STREQ(MemoryReservationPolicyName(p), "TieredReservation");
  EXPECT_FALSE(ParseMemoryReservationPolicy("tieredreservation", &p));
  EXPECT_FALSE(ParseMemoryReservationPolicy("HardReservation", &p));
}

}  // namespace
}  // namespace statlet
