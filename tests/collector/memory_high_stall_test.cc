// The memory.high stall detector's state machine, fed synthetic snapshots one second apart.
#include "collector/memory_high_stall.h"
#include "tests/support/byte_units.h"

#include <gtest/gtest.h>

namespace statlet {
namespace {

using testing::kMi;
constexpr int64_t kSec = 1000000000;
constexpr const char* kPath = "/kubepods/burstable/pod1/c1";

struct Reading {
  uint64_t usage = 0;
  double full10 = 0;
  uint64_t high_events = 0;
};

class Feeder {
 public:
  explicit Feeder(MemoryHighStallOptions o) : det_(o) {}
  // One collection at t seconds; returns the container's view.
  MemoryQosView At(int64_t t, const Reading& r, int64_t created = 1) {
    Snapshot s;
    s.monotonic_ns = t * kSec;
    s.timestamp_ns = 1700000000 * kSec + t * kSec;
    CgroupStats& c = s.cgroups.emplace_back();
    c.id.cgroup_path = kPath;
    c.id.kind = CgroupKind::kContainer;
    c.id.created_ns = created;
    c.memory.usage_bytes = r.usage;
    c.memory.high_bytes = 100 * kMi;
    c.memory.max_bytes = 1000 * kMi;
    c.memory.events.high = r.high_events;
    c.memory.psi.full = PsiLine{r.full10, 0, 0, 0};
    c.memory.psi.some = PsiLine{r.full10, 0, 0, 0};
    det_.Update(&s);
    return s.cgroups[0].memory_qos;
  }
  void Empty(int64_t t) {
    Snapshot s;
    s.monotonic_ns = t * kSec;
    det_.Update(&s);
  }

 private:
  MemoryHighStallDetector det_;
};

MemoryHighStallOptions Opts() {
  MemoryHighStallOptions o;
  o.dwell = std::chrono::seconds(5);
  o.psi_full_avg10_percent = 40;
  o.usage_margin_ratio = 0.05;
  o.rise_grace = std::chrono::milliseconds(1500);
  return o;
}

TEST(MemoryHighStall, LivelockFlaggedAfterDwellAndClearedWhenEventsStop) {
  Feeder f(Opts());
  uint64_t ev = 10;
  // t=0: first sight (no rise known yet); t=1 the conditions hold: onset.
  EXPECT_FALSE(f.At(0, {99 * kMi, 80, ev}).high_stalled);
  for (int64_t t = 1; t <= 5; ++t) {
    ev += 300;
    MemoryQosView v = f.At(t, {99 * kMi, 80, ev});
    EXPECT_TRUE(v.high_stall_evaluated);
    EXPECT_FALSE(v.high_stalled) << "t=" << t << ": dwell not over";
  }
  ev += 300;
  MemoryQosView v = f.At(6, {99 * kMi, 80, ev});
  EXPECT_TRUE(v.high_stalled);
  EXPECT_EQ(v.high_stalled_since_ns, (1700000000 + 1) * kSec);  // the onset
  ev += 300;
  EXPECT_TRUE(f.At(7, {100 * kMi, 85, ev}).high_stalled);
  // The allocator stops: events stop rising (PSI avg10 decays slowly and is still high);
  // within the grace the flag holds, after it the flag clears.
  EXPECT_TRUE(f.At(8, {100 * kMi, 75, ev}).high_stalled);
  v = f.At(9, {100 * kMi, 60, ev});
  EXPECT_FALSE(v.high_stalled);
  EXPECT_EQ(v.high_stalled_since_ns, 0);
}

TEST(MemoryHighStall, NearHighWithLowPressureIsNotFlagged) {
  Feeder f(Opts());
  uint64_t ev = 0;
  for (int64_t t = 0; t < 30; ++t) {
    ev += 50;  // normal throttling: events rise, tasks still run
    EXPECT_FALSE(f.At(t, {99 * kMi, 5, ev}).high_stalled) << "t=" << t;
  }
}

TEST(MemoryHighStall, PressureFarBelowHighIsNotFlagged) {
  Feeder f(Opts());
  uint64_t ev = 0;
  for (int64_t t = 0; t < 30; ++t) {
    ev += 50;
    EXPECT_FALSE(f.At(t, {60 * kMi, 90, ev}).high_stalled) << "t=" << t;
  }
}

TEST(MemoryHighStall, FlatEventsAreNotALivelock) {
  Feeder f(Opts());
  for (int64_t t = 0; t < 30; ++t) EXPECT_FALSE(f.At(t, {100 * kMi, 90, 7}).high_stalled) << "t=" << t;
}

TEST(MemoryHighStall, ABreakRestartsTheDwell) {
  Feeder f(Opts());
  uint64_t ev = 0;
  for (int64_t t = 0; t <= 4; ++t) EXPECT_FALSE(f.At(t, {99 * kMi, 80, ev += 100}).high_stalled);
  EXPECT_FALSE(f.At(5, {99 * kMi, 10, ev += 100}).high_stalled);  // pressure dipped
  for (int64_t t = 6; t <= 10; ++t) EXPECT_FALSE(f.At(t, {99 * kMi, 80, ev += 100}).high_stalled) << t;
  EXPECT_TRUE(f.At(11, {99 * kMi, 80, ev += 100}).high_stalled);
}

TEST(MemoryHighStall, ARecreatedCgroupStartsOverAndAGoneOneIsForgotten) {
  Feeder f(Opts());
  uint64_t ev = 0;
  for (int64_t t = 0; t <= 6; ++t) f.At(t, {99 * kMi, 80, ev += 100});
  EXPECT_TRUE(f.At(7, {99 * kMi, 80, ev += 100}).high_stalled);
  // Same path, new cgroup (created later): no history, no flag; it stalls after its own dwell.
  EXPECT_FALSE(f.At(8, {99 * kMi, 80, ev += 100}, /*created=*/2).high_stalled);
  for (int64_t t = 9; t <= 13; ++t) f.At(t, {99 * kMi, 80, ev += 100}, 2);
  EXPECT_TRUE(f.At(14, {99 * kMi, 80, ev += 100}, 2).high_stalled);
  // Gone from a snapshot, it is forgotten: seen again, it has no history (kept, the stall
  // would still be flagged).
  f.Empty(15);
  EXPECT_FALSE(f.At(16, {99 * kMi, 80, ev += 100}, 2).high_stalled);
}

TEST(MemoryHighStall, DisabledDetectorLeavesTheViewAlone) {
  MemoryHighStallOptions o = Opts();
  o.enabled = false;
  Feeder f(o);
  uint64_t ev = 0;
  for (int64_t t = 0; t < 20; ++t) {
    MemoryQosView v = f.At(t, {100 * kMi, 90, ev += 100});
    EXPECT_FALSE(v.high_stalled);
    EXPECT_FALSE(v.high_stall_evaluated);
  }
}

}  // namespace
}  // namespace statlet
