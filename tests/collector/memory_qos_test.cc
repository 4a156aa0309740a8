// The KEP-2570 formula against every row of KEP-2570's tables, the zones, and
// the node-wide "applied" rule.
#include "collector/memory_qos.h"

#include <gtest/gtest.h>

#include <memory>

namespace statlet {
namespace {

constexpr uint64_t kMi = 1024 * 1024;
constexpr uint64_t kNone = 0;  // "not set" for request / limit

MemoryQosPolicy Kep(MemoryHighFormula f, double factor) {
  MemoryQosPolicy p;
  p.formula = f;
  p.throttling_factor = factor;
  p.page_size = kMi;  // KEP-2570's tables assume a 1Mi page
  return p;
}

// KEP-2570 table "limits.memory (1000) | memory throttling factor (0.9)", v1.27 formula.
TEST(MemoryQosFormula, V127TableLimit1000Factor09) {
  struct Row {
    uint64_t request, high;
  };
  // KEP-2570's table once printed 960 for request 800 and 980 for request 900; its own formula gives
  // 800 + 0.9 × 200 = 980 and 900 + 0.9 × 100 = 990 (the printed pair breaks the table's
  // monotonic run 900…970). The formula is what the kubelet computes, so it is asserted.
  const Row rows[] = {{0, 900},   {100, 910}, {200, 920}, {300, 930}, {400, 940},
                      {500, 950}, {600, 960}, {700, 970}, {800, 980}, {900, 990}};
  const MemoryQosPolicy p = Kep(MemoryHighFormula::kV1_27, 0.9);
  for (const Row& r : rows) {
    ExpectedMemoryQos e = ExpectedKnobs(r.request * kMi, 1000 * kMi, std::nullopt, p);
    EXPECT_EQ(e.high_bytes, r.high * kMi) << "request " << r.request;
    EXPECT_EQ(e.min_bytes, r.request * kMi) << "request " << r.request;
  }
  // request 1000 = limit: the table's 1000 is the limit itself; memory.high stays "max".
  ExpectedMemoryQos g = ExpectedKnobs(1000 * kMi, 1000 * kMi, std::nullopt, p);
  EXPECT_EQ(g.high_bytes, kUnlimited);
  EXPECT_EQ(g.min_bytes, 1000 * kMi);
}

// KEP-2570 table "Limit 1000Mi Request, factor": both columns. "no throttling" = memory.high
// left at max. The last row reads "request 500Gi, factor 0.4 … (800 < 400 …)"; its v1.27
// value 700Mi = 500 + 0.4 × 500 fixes it as request 500Mi.
TEST(MemoryQosFormula, V122AndV127ComparisonTable) {
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
  for (const Row& r : rows) {
    const uint64_t request = r.request * kMi, limit = 1000 * kMi;
    ExpectedMemoryQos a = ExpectedKnobs(request, limit, std::nullopt, Kep(MemoryHighFormula::kV1_22, r.factor));
    ExpectedMemoryQos b = ExpectedKnobs(request, limit, std::nullopt, Kep(MemoryHighFormula::kV1_27, r.factor));
    EXPECT_EQ(a.high_bytes, mib(r.v122)) << "v1.22 request " << r.request << " factor " << r.factor;
    EXPECT_EQ(b.high_bytes, mib(r.v127)) << "v1.27 request " << r.request << " factor " << r.factor;
  }
}

// The v1.22 examples in KEP-2570's prose: 50/100 at 0.8 → 80; 85/100 at 0.8 → 80 < 85, no
// throttling; 800/1000 at 0.8 → 800, not above memory.min, so not set ("we set
// memory.high … if memory.high > memory.min").
TEST(MemoryQosFormula, V122ProseExamples) {
  const MemoryQosPolicy p = Kep(MemoryHighFormula::kV1_22, 0.8);
  EXPECT_EQ(ExpectedKnobs(50 * kMi, 100 * kMi, std::nullopt, p).high_bytes, 80 * kMi);
  EXPECT_EQ(ExpectedKnobs(85 * kMi, 100 * kMi, std::nullopt, p).high_bytes, kUnlimited);
  EXPECT_EQ(ExpectedKnobs(800 * kMi, 1000 * kMi, std::nullopt, p).high_bytes, kUnlimited);
}

TEST(MemoryQosFormula, RequestEqualsLimitIsMaxInBothFormulas) {
  for (auto f : {MemoryHighFormula::kV1_22, MemoryHighFormula::kV1_27}) {
    ExpectedMemoryQos e = ExpectedKnobs(256 * kMi, 256 * kMi, 4096 * kMi, Kep(f, 0.9));
    EXPECT_EQ(e.high_bytes, kUnlimited);
    EXPECT_EQ(e.min_bytes, 256 * kMi);
  }
}

// Burstable without a limit (case II) and BestEffort: node allocatable stands in.
TEST(MemoryQosFormula, NoLimitUsesNodeAllocatable) {
  const uint64_t alloc = 2000 * kMi;
  EXPECT_EQ(ExpectedKnobs(500 * kMi, kNone, alloc, Kep(MemoryHighFormula::kV1_27, 0.9)).high_bytes, 1850 * kMi);
  EXPECT_EQ(ExpectedKnobs(500 * kMi, kNone, alloc, Kep(MemoryHighFormula::kV1_22, 0.9)).high_bytes, 1800 * kMi);
  ExpectedMemoryQos be = ExpectedKnobs(kNone, kNone, alloc, Kep(MemoryHighFormula::kV1_27, 0.9));
  EXPECT_EQ(be.high_bytes, 1800 * kMi);
  EXPECT_EQ(be.min_bytes, 0u);
  // Case III: a limit without a request counts the request as 0.
  EXPECT_EQ(ExpectedKnobs(kNone, 1000 * kMi, alloc, Kep(MemoryHighFormula::kV1_27, 0.9)).high_bytes, 900 * kMi);
  // Unknown or unlimited allocatable: nothing to compute memory.high from.
  EXPECT_EQ(ExpectedKnobs(500 * kMi, kNone, std::nullopt, Kep(MemoryHighFormula::kV1_27, 0.9)).high_bytes, kUnlimited);
  EXPECT_EQ(ExpectedKnobs(500 * kMi, kNone, kUnlimited, Kep(MemoryHighFormula::kV1_27, 0.9)).high_bytes, kUnlimited);
}

TEST(MemoryQosFormula, V127RoundsDownToThePage) {
  MemoryQosPolicy p;  // 4 KiB pages, factor 0.9
  // 0.9 × 1,000,000 = 900,000 = 219.7 pages → 219 pages.
  EXPECT_EQ(ExpectedKnobs(kNone, 1000000, std::nullopt, p).high_bytes, 219u * 4096u);
  // 100,000 + 0.9 × 900,000 = 910,000 = 222.2 pages → 222 pages.
  EXPECT_EQ(ExpectedKnobs(100000, 1000000, std::nullopt, p).high_bytes, 222u * 4096u);
  // An exact page multiple stays.
  MemoryQosPolicy half = p;
  half.throttling_factor = 0.5;
  EXPECT_EQ(ExpectedKnobs(kNone, 1000u * 4096u, std::nullopt, half).high_bytes, 500u * 4096u);
  // v1.22 has no page rounding (the kubelet truncated factor × limit to bytes).
  MemoryQosPolicy v122 = p;
  v122.formula = MemoryHighFormula::kV1_22;
  EXPECT_EQ(ExpectedKnobs(kNone, 1000000, std::nullopt, v122).high_bytes, 900000u);
}

TEST(MemoryQosFormula, FormulaNamesRoundTrip) {
  MemoryHighFormula f;
  ASSERT_TRUE(ParseMemoryHighFormula("v1.22", &f));
  EXPECT_EQ(f, MemoryHighFormula::kV1_22);
  ASSERT_TRUE(ParseMemoryHighFormula("v1.27", &f));
  EXPECT_STREQ(MemoryHighFormulaName(f), "v1.27");
  EXPECT_FALSE(ParseMemoryHighFormula("1.27", &f));
}

TEST(MemoryZones, EachZoneFromTheKnobs) {
  MemoryQosPolicy p;
  p.at_limit_margin_bytes = 4 * kMi;
  const Opt<uint64_t> min = 100 * kMi, high = 200 * kMi, max = 300 * kMi, none;
  auto zone = [&](uint64_t usage) { return ZoneOf(usage, min, high, max, none, p); };
  EXPECT_EQ(zone(50 * kMi), MemoryZone::kBelowRequest);
  EXPECT_EQ(zone(100 * kMi), MemoryZone::kAboveRequest);
  EXPECT_EQ(zone(199 * kMi), MemoryZone::kAboveRequest);
  EXPECT_EQ(zone(200 * kMi), MemoryZone::kThrottling);
  EXPECT_EQ(zone(295 * kMi), MemoryZone::kThrottling);
  EXPECT_EQ(zone(296 * kMi), MemoryZone::kAtLimit);
  EXPECT_EQ(zone(300 * kMi), MemoryZone::kAtLimit);
  // Unlimited knobs never throttle; memory.min 0 protects nothing.
  EXPECT_EQ(ZoneOf(5000 * kMi, Opt<uint64_t>(0), kUnlimited, kUnlimited, none, p), MemoryZone::kAboveRequest);
  // cgroup v1: no memory.min; the runtime's request stands in.
  EXPECT_EQ(ZoneOf(50 * kMi, none, none, max, Opt<uint64_t>(100 * kMi), p), MemoryZone::kBelowRequest);
  // Nothing known.
  EXPECT_EQ(ZoneOf(none, min, high, max, none, p), MemoryZone::kUnknown);
  EXPECT_EQ(ZoneOf(50 * kMi, none, none, none, none, p), MemoryZone::kUnknown);
  EXPECT_STREQ(MemoryZoneName(MemoryZone::kThrottling), "throttling");
  EXPECT_STREQ(MemoryZoneName(MemoryZone::kUnknown), "");
}

CgroupStats& AddCgroup(Snapshot* s, const char* path, CgroupKind kind) {
  CgroupStats& c = s->cgroups.emplace_back();
  c.id.cgroup_path = path;
  c.id.kind = kind;
  return c;
}

std::shared_ptr<ContainerMetadata> Meta(Opt<uint64_t> min, Opt<uint64_t> high, Opt<uint64_t> limit) {
  auto m = std::make_shared<ContainerMetadata>();
  m->memory_resources.reported = true;
  m->memory_resources.unified_min_bytes = min;
  m->memory_resources.unified_high_bytes = high;
  m->memory_resources.limit_bytes = limit;
  return m;
}

// cgroup v2 node with the kubelet's knobs: applied, expected values beside the actual ones.
TEST(ApplyMemoryQos, AppliedNodeGetsExpectedKnobs) {
  Snapshot s;
  AddCgroup(&s, "/kubepods", CgroupKind::kKubepods).memory.max_bytes = 2000 * kMi;
  CgroupStats& c = AddCgroup(&s, "/kubepods/burstable/pod1/c1", CgroupKind::kContainer);
  c.id.meta = Meta(500 * kMi, 950 * kMi, 1000 * kMi);
  c.memory.min_bytes = 500 * kMi;
  c.memory.high_bytes = 950 * kMi;
  c.memory.max_bytes = 1000 * kMi;
  c.memory.usage_bytes = 960 * kMi;
  CgroupStats& d = AddCgroup(&s, "/kubepods/burstable/pod1/c2", CgroupKind::kContainer);
  d.id.meta = Meta(200 * kMi, std::nullopt, std::nullopt);  // no limit: node allocatable
  d.memory.min_bytes = 200 * kMi;
  d.memory.usage_bytes = 10 * kMi;
  MemoryQosPolicy p = Kep(MemoryHighFormula::kV1_27, 0.9);
  ApplyMemoryQos(p, &s);
  EXPECT_TRUE(s.memory_qos.applied);
  EXPECT_EQ(s.memory_qos.allocatable_bytes, 2000 * kMi);
  EXPECT_EQ(s.cgroups[1].memory_qos.expected_min_bytes, 500 * kMi);
  EXPECT_EQ(s.cgroups[1].memory_qos.expected_high_bytes, 950 * kMi);
  EXPECT_EQ(s.cgroups[1].memory_qos.zone, MemoryZone::kThrottling);
  EXPECT_EQ(s.cgroups[2].memory_qos.expected_high_bytes, 200 * kMi + 1620 * kMi);
  EXPECT_EQ(s.cgroups[2].memory_qos.zone, MemoryZone::kBelowRequest);
  // Not a container: no view.
  EXPECT_EQ(s.cgroups[0].memory_qos.zone, MemoryZone::kUnknown);
}

// cgroup v1 (no memory.min file) or a runtime that passes no unified knobs: "not applied",
// and no expected numbers at all.
TEST(ApplyMemoryQos, NotAppliedInventsNoNumbers) {
  Snapshot s;
  AddCgroup(&s, "/kubepods", CgroupKind::kKubepods).memory.max_bytes = 2000 * kMi;
  CgroupStats& c = AddCgroup(&s, "/kubepods/burstable/pod1/c1", CgroupKind::kContainer);
  c.id.meta = Meta(std::nullopt, std::nullopt, 1000 * kMi);  // v1: limit only
  c.memory.max_bytes = 1000 * kMi;
  c.memory.usage_bytes = 10 * kMi;
  ApplyMemoryQos(MemoryQosPolicy(), &s);
  EXPECT_FALSE(s.memory_qos.applied);
  EXPECT_FALSE(s.cgroups[1].memory_qos.expected_min_bytes.has_value());
  EXPECT_FALSE(s.cgroups[1].memory_qos.expected_high_bytes.has_value());
  EXPECT_EQ(s.cgroups[1].memory_qos.zone, MemoryZone::kAboveRequest);
  // Knobs in the runtime's answer but no cgroup v2 files (a v1 host): still not applied.
  s.cgroups[1].id.meta = Meta(100 * kMi, 950 * kMi, 1000 * kMi);
  ApplyMemoryQos(MemoryQosPolicy(), &s);
  EXPECT_FALSE(s.memory_qos.applied);
  EXPECT_FALSE(s.cgroups[1].memory_qos.expected_high_bytes.has_value());
  EXPECT_EQ(s.cgroups[1].memory_qos.zone, MemoryZone::kBelowRequest);  // the runtime's request
}

}  // namespace
}  // namespace statlet
