// ContainerOomKills: the OOM kills of a pod's container name summed over its instances
// (restarts), each counted once, carried while the pod lives and let go with it.
#include "metrics/container_oom_kills.h"

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "metrics/metric_selection.h"

namespace statlet::metrics {
namespace {

constexpr char kUid[] = "0a1b2c3d-0000-4000-8000-000000000001";

std::shared_ptr<const ContainerMetadata> Meta(const std::string& id, const std::string& name, uint32_t attempt,
                                              const std::string& pod_uid = kUid) {
  auto m = std::make_shared<ContainerMetadata>();
  m->container_id = id;
  m->container_name = name;
  m->attempt = attempt;
  m->pod_name = "web-0";
  m->pod_namespace = "shop";
  m->pod_uid = pod_uid;
  return m;
}

CgroupStats PodCgroup(const std::string& pod_uid = kUid) {
  CgroupStats c;
  c.id.kind = CgroupKind::kPod;
  c.id.pod_uid = pod_uid;
  c.id.cgroup_path = "/kubepods/pod" + pod_uid;
  return c;
}

// A container instance: its id, name (null meta when `name` is empty) and oom_kill count.
CgroupStats Container(const std::string& id, const std::string& name, std::optional<uint64_t> kills,
                      uint32_t attempt = 0, const std::string& pod_uid = kUid) {
  CgroupStats c;
  c.id.kind = CgroupKind::kContainer;
  c.id.container_id = id;
  c.id.pod_uid = pod_uid;
  c.id.cgroup_path = "/kubepods/pod" + pod_uid + "/" + id;
  if (!name.empty()) c.id.meta = Meta(id, name, attempt, pod_uid);
  c.memory.events.oom_kill = kills;
  return c;
}

Snapshot Snap(std::vector<CgroupStats> cgroups) {
  Snapshot s;
  s.cgroups = std::move(cgroups);
  return s;
}

// The total of (shop, web-0, name); -1 when there is no such series.
int64_t TotalOf(const ContainerOomKills& k, const std::string& name) {
  for (const auto& t : k.Totals()) {
    if (t.namespace_ == "shop" && t.pod == "web-0" && t.container == name) return static_cast<int64_t>(t.oom_kills);
  }
  return -1;
}

TEST(ContainerOomKills, APodMissedOnceIsKeptWhenToldTo) {
  ContainerOomKills k({.pod_gone_after = 2});
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 3)}));
  k.Observe(Snap({}));
  EXPECT_EQ(TotalOf(k, "app"), 3);
  k.Observe(Snap({PodCgroup()}));
  k.Observe(Snap({}));
  EXPECT_EQ(TotalOf(k, "app"), 3);
  k.Observe(Snap({}));
  EXPECT_TRUE(k.Totals().empty());
}

TEST(ContainerOomKills, RestartsAddUp) {
  ContainerOomKills k;
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 0)}));
  EXPECT_EQ(TotalOf(k, "app"), 0);  // named: the series starts at 0
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 1);
  // The first instance is gone (no record), the second one runs and is killed too.
  k.Observe(Snap({PodCgroup(), Container("c1", "app", 0, 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 1);
  k.Observe(Snap({PodCgroup(), Container("c1", "app", 1, 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 2);
  // Long after the first instance was folded in, a third one.
  for (int i = 0; i < 5; ++i) k.Observe(Snap({PodCgroup(), Container("c1", "app", 1, 1)}));
  k.Observe(Snap({PodCgroup(), Container("c2", "app", 2, 2)}));
  EXPECT_EQ(TotalOf(k, "app"), 4);
  EXPECT_EQ(k.Totals().size(), 1u);
}

TEST(ContainerOomKills, AnExitRecordSeenAgainIsCountedOnce) {
  ContainerOomKills k;
  // The instance lived past one collection, then exited: its exit record (same id, final
  // value) is in every snapshot of the retention, beside the next instance.
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 0)}));
  for (int i = 0; i < 4; ++i) k.Observe(Snap({PodCgroup(), Container("c0", "app", 1), Container("c1", "app", 0, 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 1);
  // The record expires; the instance is folded in after fold_after collections.
  for (int i = 0; i < 4; ++i) k.Observe(Snap({PodCgroup(), Container("c1", "app", 0, 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 1);
  // Should the folded instance show again (a record late by more than fold_after
  // collections), it is not counted twice.
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 1), Container("c1", "app", 0, 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 1);
}

TEST(ContainerOomKills, ContainerOnlySeenAsAnExitRecordCounts) {
  ContainerOomKills k;
  k.Observe(Snap({PodCgroup()}));
  // Lived between two collections: only its record (oom_kill 1) was ever seen.
  CgroupStats record = Container("c0", "app", 1);
  record.exit = ExitInfo{.exit_ns = 1, .lifetime_ns = 2, .reason = ExitReason::kOomKilled};
  k.Observe(Snap({PodCgroup(), record}));
  EXPECT_EQ(TotalOf(k, "app"), 1);
}

TEST(ContainerOomKills, PodGoneLetsItsNamesGo) {
  ContainerOomKills k;
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 3), Container("s0", "sidecar", 0)}));
  EXPECT_EQ(TotalOf(k, "app"), 3);
  // Its containers gone (folded in), the pod still there: the names stay.
  k.Observe(Snap({PodCgroup()}));
  k.Observe(Snap({PodCgroup()}));
  k.Observe(Snap({PodCgroup()}));
  EXPECT_EQ(TotalOf(k, "app"), 3);
  EXPECT_EQ(TotalOf(k, "sidecar"), 0);
  // The first collection without the pod lets its names go, as its cgroup series go.
  k.Observe(Snap({}));
  EXPECT_TRUE(k.Totals().empty());
  // The containers' exit records, retained after the pod went, do not bring it back.
  CgroupStats record = Container("c0", "app", 3);
  record.exit = ExitInfo{};
  k.Observe(Snap({record}));
  EXPECT_TRUE(k.Totals().empty());
  // A pod of the same name made again (a new uid) starts at 0.
  k.Observe(Snap({PodCgroup("new-uid"), Container("c9", "app", 0, 0, "new-uid")}));
  EXPECT_EQ(TotalOf(k, "app"), 0);
}

// Several pods going in one collection (a namespace deleted): each is let go, and the
// bookkeeping of the others is read while they are (a sanitizer build shows a read of a
// pod's freed key here).
TEST(ContainerOomKills, ManyPodsGoingAtOnce) {
  ContainerOomKills k;
  std::vector<CgroupStats> all;
  for (int i = 0; i < 16; ++i) {
    const std::string uid = "uid-" + std::to_string(i);
    all.push_back(PodCgroup(uid));
    all.push_back(Container("c" + std::to_string(i), "app" + std::to_string(i), 1, 0, uid));
  }
  k.Observe(Snap(all));
  EXPECT_EQ(k.Totals().size(), 16u);
  k.Observe(Snap({}));
  EXPECT_TRUE(k.Totals().empty());
}

// A StatefulSet pod made again (a new uid, the same name) while the old pod's cgroup still
// lingers: one series for the name, which keeps what the old pod counted once it goes.
TEST(ContainerOomKills, TwoPodsOfOneNameAreOneSeries) {
  ContainerOomKills k;
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 2)}));
  k.Observe(
      Snap({PodCgroup(), Container("c0", "app", 2), PodCgroup("new-uid"), Container("c1", "app", 1, 0, "new-uid")}));
  ASSERT_EQ(k.Totals().size(), 1u);
  EXPECT_EQ(TotalOf(k, "app"), 3);
  // The old pod goes: the series does not go back.
  k.Observe(Snap({PodCgroup("new-uid"), Container("c1", "app", 1, 0, "new-uid")}));
  EXPECT_EQ(TotalOf(k, "app"), 3);
  k.Observe(Snap({PodCgroup("new-uid"), Container("c1", "app", 2, 0, "new-uid")}));
  EXPECT_EQ(TotalOf(k, "app"), 4);
  std::vector<ExtraFamily> families;
  k.Collect(&families);
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].series.size(), 1u);
  // The last pod of the name goes: so does the series.
  k.Observe(Snap({}));
  EXPECT_TRUE(k.Totals().empty());
}

// An instance a collection or two did not list (folded in) that shows again: its later kills
// count, its earlier ones not twice.
TEST(ContainerOomKills, AnInstanceBackAfterBeingFoldedCountsItsLaterKills) {
  ContainerOomKills k;
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 1)}));
  k.Observe(Snap({PodCgroup()}));
  k.Observe(Snap({PodCgroup()}));  // folded in
  EXPECT_EQ(TotalOf(k, "app"), 1);
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 1);
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 3)}));
  EXPECT_EQ(TotalOf(k, "app"), 3);
  // Folded again and back again, its cgroup made again meanwhile (a reset).
  k.Observe(Snap({PodCgroup()}));
  k.Observe(Snap({PodCgroup()}));
  EXPECT_EQ(TotalOf(k, "app"), 3);
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 4);
}

TEST(ContainerOomKills, NothingTrackedWhenNotServed) {
  auto off = MetricSelection::Make({}, {"oom_event"}, {});
  ASSERT_TRUE(off.ok());
  ContainerOomKills k({.served = off->ServesExtra(kContainerOomKillsFamily)});
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 2)}));
  EXPECT_TRUE(k.Totals().empty());
}

TEST(ContainerOomKills, ACounterResetKeepsWhatWasCounted) {
  ContainerOomKills k;
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 2)}));
  // The same container id's cgroup made again: its count starts over.
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 0)}));
  EXPECT_EQ(TotalOf(k, "app"), 2);
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 3);
  // A collection without the value (unreadable) changes nothing.
  k.Observe(Snap({PodCgroup(), Container("c0", "app", std::nullopt)}));
  EXPECT_EQ(TotalOf(k, "app"), 3);
}

TEST(ContainerOomKills, NamesComeFromTheRuntime) {
  ContainerOomKills k;
  // Unnamed (the runtime did not list it yet): counted once it is named.
  k.Observe(Snap({PodCgroup(), Container("c0", "", 1)}));
  EXPECT_TRUE(k.Totals().empty());
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 1)}));
  EXPECT_EQ(TotalOf(k, "app"), 1);
  // Containers of two names, and the sandbox (never counted), each apart.
  CgroupStats sandbox = Container("p0", "POD", 0);
  auto meta = std::make_shared<ContainerMetadata>(*sandbox.id.meta);
  meta->is_sandbox = true;
  sandbox.id.meta = meta;
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 1), Container("s0", "sidecar", 2), sandbox}));
  EXPECT_EQ(TotalOf(k, "app"), 1);
  EXPECT_EQ(TotalOf(k, "sidecar"), 2);
  EXPECT_EQ(TotalOf(k, "POD"), -1);
}

// A container the runtime listed before its sandbox has its own name but not its pod's:
// it is not named (its series' labels are fixed then) until the pod's names come.
TEST(ContainerOomKills, AContainerIsNamedOnlyWithItsPodsNames) {
  ContainerOomKills k;
  CgroupStats early = Container("c0", "app", 1);
  auto meta = std::make_shared<ContainerMetadata>(*early.id.meta);
  meta->pod_name.clear();
  meta->pod_namespace.clear();
  early.id.meta = meta;
  k.Observe(Snap({PodCgroup(), early}));
  EXPECT_TRUE(k.Totals().empty());
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 2)}));
  EXPECT_EQ(TotalOf(k, "app"), 2);
  EXPECT_EQ(k.Totals().size(), 1u) << "a series without the pod's names is left behind";
}

TEST(ContainerOomKills, TheLocalCountAndTheProbeAreTheSameRuleAsPerCgroup) {
  ContainerOomKills k;
  CgroupStats c = Container("c0", "app", std::nullopt);
  c.bpf.oom_kills = 4;
  k.Observe(Snap({PodCgroup(), c}));
  EXPECT_EQ(TotalOf(k, "app"), 4);
  c.memory.events_local.oom_kill = 5;
  EXPECT_EQ(OomKillsOf(c), std::optional<uint64_t>(5));
}

TEST(ContainerOomKills, Bounded) {
  ContainerOomKills k({.max_entries = 2, .max_instances = 3, .max_folded = 2, .fold_after = 2});
  k.Observe(Snap({PodCgroup(), Container("c0", "a", 1), Container("c1", "b", 1), Container("c2", "c", 1),
                  Container("c3", "d", 1)}));
  EXPECT_EQ(k.Totals().size(), 2u);  // names a and b; c over max_entries, d over max_instances
  EXPECT_EQ(k.dropped(), 2u);
  k.Observe(Snap({PodCgroup()}));
  k.Observe(Snap({PodCgroup()}));
  EXPECT_EQ(TotalOf(k, "a"), 1);  // c0 folded in; c2, never named, counted under no name
  // Folded ids are remembered up to max_folded: instances churn, memory stays put.
  for (int i = 0; i < 20; ++i) {
    const std::string id = "r" + std::to_string(i);
    k.Observe(Snap({PodCgroup(), Container(id, "a", 1)}));
    k.Observe(Snap({PodCgroup()}));
    k.Observe(Snap({PodCgroup()}));
  }
  EXPECT_EQ(TotalOf(k, "a"), 21);
  EXPECT_EQ(k.dropped(), 2u);
}

TEST(ContainerOomKills, RendersOneCounterPerName) {
  ContainerOomKills k;
  k.Observe(Snap({PodCgroup(), Container("c0", "app", 2)}));
  std::vector<ExtraFamily> families;
  k.Collect(&families);
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "statlet_container_oom_kills_total");
  EXPECT_EQ(families[0].type, ExtraType::kCounter);
  ASSERT_EQ(families[0].series.size(), 1u);
  EXPECT_EQ(families[0].series[0].label_values, (std::vector<std::string>{"shop", "web-0", "app"}));
  EXPECT_EQ(families[0].series[0].value.u, 2u);
}

TEST(ContainerOomKills, InTheOomEventGroup) {
  auto off = MetricSelection::Make({}, {"oom_event"}, {});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->ServesExtra("statlet_container_oom_kills_total"));
  auto only = MetricSelection::Make({"statlet_container_oom_kills_total"}, {}, {});
  ASSERT_TRUE(only.ok()) << only.status().ToString();
  EXPECT_TRUE(only->ServesExtra("statlet_container_oom_kills_total"));
  EXPECT_TRUE(MetricSelection().ServesExtra("statlet_container_oom_kills_total"));
}

}  // namespace
}  // namespace statlet::metrics
