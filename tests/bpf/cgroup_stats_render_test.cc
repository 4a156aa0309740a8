// The stats iterator's rendering rules, without a kernel: the user/system split, the
// kernel's index tables, and files the collector's readers parse into the right fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "bpf/cgroup_stats_render.h"
#include "collector/cgroup_files.h"
#include "collector/cgroup_hierarchies.h"
#include "collector/parse/cgroup_parsers.h"

namespace statlet::bpf {
namespace {

// A kernel whose BTF has every member memory.stat's conditions ask for.
const KernelHas kAnyMember = [](const char*, const char*) { return true; };

std::string Render(IterFile f, const statlet_cgroup_stats& e, uint64_t page = 4096) {
  char buf[4096];
  return std::string(buf, RenderIterFile(f, e, page, buf, sizeof(buf)));
}

// Parses `text` with the collector's reader for `file` on a pure v2 host.
CgroupStats Parse(const char* file, const std::string& text) {
  CgroupHierarchies h;
  h.mount[kUnified] = "/sys/fs/cgroup";
  h.v2_cpu = h.v2_memory = h.v2_pids = true;
  CgroupStats s;
  for (const CgroupFileReader* r : BuildReadPlan(h)) {
    if (std::strcmp(r->name, file) == 0) {
      EXPECT_TRUE(ApplyReader(*r, text, &s)) << file << ":\n" << text;
    }
  }
  return s;
}

TEST(AdjustCputime, ScalesTicksToTheTotalAndNeverGoesBack) {
  uint64_t u, s;
  // 3:1 ticks of a 4 ms total.
  AdjustCputime(4'000'000, 30, 10, 0, 0, &u, &s);
  EXPECT_EQ(u, 3'000'000u);
  EXPECT_EQ(s, 1'000'000u);
  // No system tick yet: all user.
  AdjustCputime(5'000, 7, 0, 0, 0, &u, &s);
  EXPECT_EQ(u, 5'000u);
  EXPECT_EQ(s, 0u);
  // The previous split covers the total already: it is shown unchanged.
  AdjustCputime(100, 1, 1, 80, 40, &u, &s);
  EXPECT_EQ(u, 80u);
  EXPECT_EQ(s, 40u);
  // System may not drop below what was shown; user takes the rest.
  AdjustCputime(1'000, 9, 1, 100, 500, &u, &s);
  EXPECT_EQ(s, 500u);
  EXPECT_EQ(u, 500u);
  // Scaling needs 128 bits: ticks times ns overflow 64.
  AdjustCputime(UINT64_MAX / 2, UINT64_MAX / 4, UINT64_MAX / 4, 0, 0, &u, &s);
  EXPECT_EQ(u + s, UINT64_MAX / 2);
  EXPECT_NEAR(static_cast<double>(s), static_cast<double>(UINT64_MAX / 4), 2.0);
}

TEST(DecodeIndexTable, ReadsThePlusOneIntTableOf61) {
  // int mem_cgroup_events_index[6]: items 1, 3 and 4 kept, in slots 2, 0, 1.
  const int32_t table[6] = {0, 3, 0, 1, 2, 0};
  auto slots = DecodeIndexTable(reinterpret_cast<const uint8_t*>(table), sizeof(table), 6, 3);
  ASSERT_TRUE(slots.has_value());
  EXPECT_EQ(*slots, (std::vector<int32_t>{-1, 2, -1, 0, 1, -1}));
}

TEST(DecodeIndexTable, ReadsTheZeroBasedByteTableOfLaterKernels) {
  // u8 with U8_MAX for "not kept", followed by unrelated bytes the copy took along.
  const uint8_t raw[16] = {255, 1, 0, 255, 2, 255, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  auto slots = DecodeIndexTable(raw, sizeof(raw), 6, 3);
  ASSERT_TRUE(slots.has_value());
  EXPECT_EQ(*slots, (std::vector<int32_t>{-1, 1, 0, -1, 2, -1}));
}

TEST(DecodeIndexTable, RefusesTablesThatDoNotMapOneToOne) {
  const int32_t dup[4] = {1, 1, 2, 0};  // slot 0 twice
  EXPECT_FALSE(DecodeIndexTable(reinterpret_cast<const uint8_t*>(dup), sizeof(dup), 4, 2).has_value());
  const int32_t short_of_slots[4] = {1, 0, 0, 0};  // slot 1 never used
  EXPECT_FALSE(DecodeIndexTable(reinterpret_cast<const uint8_t*>(short_of_slots), sizeof(short_of_slots), 4, 2));
  EXPECT_FALSE(DecodeIndexTable(nullptr, 0, 4, 2).has_value());
}

TEST(ResolveMemstatSlots, NeedsDirectStateAndAnEventIndex) {
  statlet_memstat_setup setup{};
  setup.done = 1;
  setup.state_len = setup.nr_stat_items = 50;
  for (int i = 0; i < STATLET_MS_STATE_ITEMS; i++) setup.state_enum[i] = i;
  setup.nr_event_items = 16;
  setup.events_len = 16;  // events indexed by the enum too
  for (int i = 0; i < STATLET_ME_EVENT_ITEMS; i++) setup.event_enum[i] = 15 - i;
  setup.event_enum[STATLET_ME_pgsteal_proactive] = -1;  // not in this kernel: reads 0
  const char* why = "";
  auto slots = ResolveMemstatSlots(setup, kAnyMember, &why);
  ASSERT_TRUE(slots.has_value()) << why;
  EXPECT_EQ(slots->state[STATLET_MS_file_dirty_bytes], STATLET_MS_file_dirty_bytes);
  EXPECT_EQ(slots->events[STATLET_ME_pgmajfault], 15 - STATLET_ME_pgmajfault);
  EXPECT_EQ(slots->events[STATLET_ME_pgsteal_proactive], -1);

  setup.events_len = 3;  // compact, and no table copied
  EXPECT_FALSE(ResolveMemstatSlots(setup, kAnyMember, &why).has_value());
  EXPECT_NE(std::string(why).find("KALLSYMS_ALL"), std::string::npos) << why;

  setup.events_len = 16;
  setup.state_len = 40;  // compact state (6.11+)
  EXPECT_FALSE(ResolveMemstatSlots(setup, kAnyMember, &why).has_value());

  setup.state_len = 50;
  setup.state_enum[STATLET_MS_file_dirty_bytes] = -1;  // a key the kernel shows, missing: the file is read
  EXPECT_FALSE(ResolveMemstatSlots(setup, kAnyMember, &why).has_value());
}

// zswap and zswapped are in memory.stat only when the kernel has zswap (its mem_cgroup then
// has zswap_max): without it the walk does not read them and leaves both keys out.
TEST(ResolveMemstatSlots, ZswapOnlyWhereTheKernelShowsIt) {
  statlet_memstat_setup setup{};
  setup.done = 1;
  setup.state_len = setup.nr_stat_items = 60;
  for (int i = 0; i < STATLET_MS_STATE_ITEMS; i++) setup.state_enum[i] = i;
  setup.nr_event_items = setup.events_len = STATLET_ME_EVENT_ITEMS;
  for (int i = 0; i < STATLET_ME_EVENT_ITEMS; i++) setup.event_enum[i] = i;
  const char* why = "";
  const KernelHas no_zswap = [](const char* type, const char* member) {
    return !(std::string(type) == "mem_cgroup" && std::string(member) == "zswap_max");
  };
  auto with = ResolveMemstatSlots(setup, kAnyMember, &why), without = ResolveMemstatSlots(setup, no_zswap, &why);
  ASSERT_TRUE(with.has_value() && without.has_value()) << why;
  EXPECT_EQ(with->state[STATLET_MS_zswap_bytes], STATLET_MS_zswap_bytes);
  EXPECT_EQ(without->state[STATLET_MS_zswap_bytes], -1);
  EXPECT_EQ(without->state[STATLET_MS_zswapped_bytes], -1);
  EXPECT_EQ(without->state[STATLET_MS_sock_bytes], STATLET_MS_sock_bytes);

  statlet_cgroup_stats e{};
  e.parts = STATLET_PART_MEMORY | STATLET_PART_MEMSTAT;
  e.memstat_state[STATLET_MS_sock_bytes] = 2;       // pages
  e.memstat_state[STATLET_MS_vmalloc_bytes] = 3;    // pages
  e.memstat_state[STATLET_MS_percpu_bytes] = 1000;  // bytes
  e.memstat_state[STATLET_MS_zswap_bytes] = 5000;   // bytes
  e.memstat_state[STATLET_MS_zswapped_bytes] = 4;   // pages
  char buf[4096];
  const std::string shown(buf, RenderIterFile(IterFile::kMemoryStat, e, 4096, buf, sizeof(buf), &*with));
  CgroupStats s = Parse("memory.stat", shown);
  EXPECT_EQ(s.memory.sock_bytes, 8192u);
  EXPECT_EQ(s.memory.vmalloc_bytes, 12288u);
  EXPECT_EQ(s.memory.percpu_bytes, 1000u);
  EXPECT_EQ(s.memory.zswap_bytes, 5000u);
  EXPECT_EQ(s.memory.zswapped_bytes, 16384u);
  const std::string left_out(buf, RenderIterFile(IterFile::kMemoryStat, e, 4096, buf, sizeof(buf), &*without));
  s = Parse("memory.stat", left_out);
  EXPECT_FALSE(s.memory.zswap_bytes.has_value());
  EXPECT_FALSE(s.memory.zswapped_bytes.has_value());
  EXPECT_EQ(s.memory.sock_bytes, 8192u);
}

TEST(RenderIterFile, CpuStatParsesIntoTheCollectorsFields) {
  statlet_cgroup_stats e{};
  e.parts = STATLET_PART_CPU | STATLET_PART_CFS;
  e.sum_exec_ns = 4'000'999;
  e.utime_ns = 3;
  e.stime_ns = 1;
  e.nr_periods = 7;
  e.nr_throttled = 2;
  e.throttled_ns = 12'345'678;
  CgroupStats s = Parse("cpu.stat", Render(IterFile::kCpuStat, e));
  EXPECT_EQ(s.cpu.usage_ns, 4'000'000u);  // the file's microseconds
  EXPECT_EQ(s.cpu.user_ns, 3'000'000u);
  EXPECT_EQ(s.cpu.system_ns, 1'000'000u);
  EXPECT_EQ(s.cpu.nr_periods, 7u);
  EXPECT_EQ(s.cpu.nr_throttled, 2u);
  EXPECT_EQ(s.cpu.throttled_ns, 12'345'000u);
  // Without the cpu controller, only the base stats, as the kernel prints them.
  e.parts = STATLET_PART_CPU;
  EXPECT_FALSE(Parse("cpu.stat", Render(IterFile::kCpuStat, e)).cpu.nr_periods.has_value());
  // The root's cpu.stat does not come from rstat: nothing rendered.
  e.parts = 0;
  EXPECT_EQ(Render(IterFile::kCpuStat, e), "");
}

TEST(RenderIterFile, MemoryFilesParseIntoTheCollectorsFields) {
  statlet_cgroup_stats e{};
  e.parts = STATLET_PART_MEMORY | STATLET_PART_MEMSTAT;
  e.memory_pages = 10;
  e.memory_peak_pages = 12;
  e.memstat_state[STATLET_MS_rss_bytes] = 3;
  e.memstat_state[STATLET_MS_inactive_file] = -2;       // unfolded per-CPU deltas: reads 0
  e.memstat_state[STATLET_MS_slab_reclaimable] = 1000;  // bytes
  e.memstat_state[STATLET_MS_slab_unreclaimable] = 24;
  e.memstat_state[STATLET_MS_workingset_refault_file] = 5;  // events, not pages
  e.memstat_events[STATLET_ME_pgscan_kswapd] = 4;
  e.memstat_events[STATLET_ME_pgscan_direct] = 6;
  e.memstat_events[STATLET_ME_pgfault] = 99;
  e.memory_events[STATLET_MEV_oom_kill] = 2;
  e.memory_events_local[STATLET_MEV_high] = 8;

  EXPECT_EQ(Parse("memory.current", Render(IterFile::kMemoryCurrent, e)).memory.usage_bytes, 40960u);
  EXPECT_EQ(Parse("memory.peak", Render(IterFile::kMemoryPeak, e)).memory.max_usage_bytes, 49152u);
  CgroupStats st = Parse("memory.stat", Render(IterFile::kMemoryStat, e));
  EXPECT_EQ(st.memory.rss_bytes, 12288u);
  EXPECT_EQ(st.memory.inactive_file, 0u);
  EXPECT_EQ(st.memory.slab_bytes, 1024u);
  EXPECT_EQ(st.memory.workingset_refault_file, 5u);
  EXPECT_EQ(st.memory.pgscan, 10u);
  EXPECT_EQ(st.memory.pgscan_kswapd, 4u);
  EXPECT_EQ(st.memory.pgfault, 99u);
  EXPECT_EQ(Parse("memory.events", Render(IterFile::kMemoryEvents, e)).memory.events.oom_kill, 2u);
  EXPECT_EQ(Parse("memory.events.local", Render(IterFile::kMemoryEventsLocal, e)).memory.events_local.high, 8u);
  // memory.stat needs its part: a kernel layout the iterator does not read renders nothing.
  e.parts = STATLET_PART_MEMORY;
  EXPECT_EQ(Render(IterFile::kMemoryStat, e), "");
}

TEST(RenderIterFile, PidsFilesParseIntoTheCollectorsFields) {
  statlet_cgroup_stats e{};
  e.parts = STATLET_PART_PIDS | STATLET_PART_PIDS_EVENTS;
  e.pids_current = 17;
  e.pids_events_max = 3;
  EXPECT_EQ(Parse("pids.current", Render(IterFile::kPidsCurrent, e)).process.pids_current, 17u);
  EXPECT_EQ(Parse("pids.events", Render(IterFile::kPidsEvents, e)).process.pids_events_max, 3u);
}

// The keys of a rendering ("" for a file of one value).
std::set<std::string> KeysOf(const std::string& text) {
  std::set<std::string> keys;
  uint64_t v;
  if (parse::ParseU64(text, &v)) return {""};
  parse::ForEachFlatKeyed(text, [&](std::string_view k, uint64_t) { keys.emplace(k); });
  return keys;
}

// Checks that `rendered` holds every key the collector's readers of `file` in hierarchy
// `h` take, and that they parse it; returns how many readers there were.
int ExpectReadersFindTheirKeys(const std::vector<const CgroupFileReader*>& plan, Hierarchy h, const char* file,
                               const std::string& rendered) {
  int readers = 0;
  const std::set<std::string> keys = KeysOf(rendered);
  for (const CgroupFileReader* r : plan) {
    if (r->hierarchy != h || std::strcmp(r->name, file) != 0) continue;
    readers++;
    CgroupStats s;
    EXPECT_TRUE(ApplyReader(*r, rendered, &s)) << file << ":\n" << rendered;
    for (std::string_view k : KeysRead(*r)) {
      EXPECT_TRUE(keys.count(std::string(k)))
          << file << ": the collector reads \"" << k << "\", the walk does not render it:\n"
          << rendered;
    }
  }
  return readers;
}

// Every file the stats walk stands in for renders every key the collector reads of it, on a
// v2 host and on a hybrid one (whose cgroup2 mount has cpu.stat's user/system split).
TEST(RenderIterFile, RendersEveryKeyTheCollectorReads) {
  statlet_cgroup_stats e{};
  e.parts = STATLET_PART_CPU | STATLET_PART_CFS | STATLET_PART_MEMORY | STATLET_PART_MEMSTAT | STATLET_PART_PIDS |
            STATLET_PART_PIDS_EVENTS;
  CgroupHierarchies v2;
  v2.mount[kUnified] = "/sys/fs/cgroup";
  v2.v2_cpu = v2.v2_memory = v2.v2_pids = v2.v2_io = true;
  CgroupHierarchies hybrid;
  hybrid.mount[kUnified] = "/sys/fs/cgroup/unified";
  hybrid.mount[kV1Cpu] = "/sys/fs/cgroup/cpu";
  hybrid.mount[kV1Cpuacct] = "/sys/fs/cgroup/cpuacct";
  const auto v2_plan = BuildReadPlan(v2), hybrid_plan = BuildReadPlan(hybrid);
  for (int i = 0; i < static_cast<int>(IterFile::kCount); i++) {
    const IterFile f = static_cast<IterFile>(i);
    const std::string text = Render(f, e);
    ASSERT_FALSE(text.empty()) << IterFileName(f);
    EXPECT_EQ(ExpectReadersFindTheirKeys(v2_plan, kUnified, IterFileName(f), text), 1) << IterFileName(f);
    ExpectReadersFindTheirKeys(hybrid_plan, kUnified, IterFileName(f), text);
  }
  // memory.stat leaves out a key whose state item the kernel does not show.
  MemstatSlots slots;
  std::fill(std::begin(slots.state), std::end(slots.state), 0);
  std::fill(std::begin(slots.events), std::end(slots.events), 0);
  slots.state[STATLET_MS_file_dirty_bytes] = -1;
  char buf[4096];
  const std::string without(buf, RenderIterFile(IterFile::kMemoryStat, e, 4096, buf, sizeof(buf), &slots));
  EXPECT_FALSE(KeysOf(without).count("file_dirty"));
  EXPECT_TRUE(KeysOf(without).count("file_writeback"));
}

TEST(RenderIterFile, ATooSmallBufferGivesNothing) {
  statlet_cgroup_stats e{};
  e.parts = STATLET_PART_MEMORY | STATLET_PART_MEMSTAT;
  char buf[64];
  EXPECT_EQ(RenderIterFile(IterFile::kMemoryStat, e, 4096, buf, sizeof(buf)), 0u);
}

// Parses `text` with the collector's reader for `file` of v1 hierarchy `h` on a v1 host.
CgroupStats ParseV1(Hierarchy h, const char* file, const std::string& text) {
  CgroupHierarchies hs;
  hs.mount[kV1Cpu] = "/sys/fs/cgroup/cpu";
  hs.mount[kV1Cpuacct] = "/sys/fs/cgroup/cpuacct";
  hs.mount[kV1Memory] = "/sys/fs/cgroup/memory";
  CgroupStats s;
  int readers = 0;
  for (const CgroupFileReader* r : BuildReadPlan(hs)) {
    if (r->hierarchy == h && std::strcmp(r->name, file) == 0) {
      readers++;
      EXPECT_TRUE(ApplyReader(*r, text, &s)) << file << ":\n" << text;
    }
  }
  EXPECT_EQ(readers, 1) << file;
  return s;
}

std::string RenderV1(V1IterFile f, const statlet_cgroup_v1_stats& e, const std::vector<uint64_t>& per_cpu = {}) {
  char buf[4096];
  return std::string(buf, RenderV1IterFile(f, e, per_cpu.data(), per_cpu.size(), 4096, buf, sizeof(buf)));
}

// Every file the v1 walks stand in for renders every key the collector reads of it.
TEST(RenderV1IterFile, RendersEveryKeyTheCollectorReads) {
  statlet_cgroup_v1_stats e{};
  e.parts = STATLET_V1_CFS | STATLET_V1_CPUACCT | STATLET_V1_MEMORY | STATLET_V1_KMEM | STATLET_V1_OOM_CONTROL |
            STATLET_V1_CPUACCT_TIMES;
  CgroupHierarchies v1;
  v1.mount[kV1Cpu] = "/sys/fs/cgroup/cpu";
  v1.mount[kV1Cpuacct] = "/sys/fs/cgroup/cpuacct";
  v1.mount[kV1Memory] = "/sys/fs/cgroup/memory";
  const auto plan = BuildReadPlan(v1);
  for (int i = 0; i < static_cast<int>(V1IterFile::kCount); i++) {
    const V1IterFile f = static_cast<V1IterFile>(i);
    const std::string name = V1IterFileName(f);
    const Hierarchy h = name.starts_with("cpuacct.") ? kV1Cpuacct : name.starts_with("cpu.") ? kV1Cpu : kV1Memory;
    const std::string text = RenderV1(f, e, {1, 2});
    ASSERT_FALSE(text.empty()) << name;
    EXPECT_EQ(ExpectReadersFindTheirKeys(plan, h, name.c_str(), text), 1) << name;
  }
}

TEST(RenderV1IterFile, CpuFilesAreTheKernelsAndParseIntoTheCollectorsFields) {
  statlet_cgroup_v1_stats e{};
  e.parts = STATLET_V1_CFS | STATLET_V1_CPUACCT;
  e.nr_periods = 10;
  e.nr_throttled = 4;
  e.throttled_ns = 123456789;
  e.nr_bursts = 2;
  e.burst_ns = 5000;
  const std::string stat = RenderV1(V1IterFile::kCpuStat, e);
  EXPECT_EQ(stat, "nr_periods 10\nnr_throttled 4\nthrottled_time 123456789\nnr_bursts 2\nburst_time 5000\n");
  CgroupStats s = ParseV1(kV1Cpu, "cpu.stat", stat);
  EXPECT_EQ(s.cpu.nr_periods, 10u);
  EXPECT_EQ(s.cpu.nr_throttled, 4u);
  EXPECT_EQ(s.cpu.throttled_ns, 123456789u);
  EXPECT_EQ(s.cpu.burst_ns, 5000u);

  // usage_percpu: each CPU's value and a space, then a newline, as the kernel prints it.
  const std::string percpu = RenderV1(V1IterFile::kCpuacctUsagePercpu, e, {7, 0, 18446744073709551615u});
  EXPECT_EQ(percpu, "7 0 18446744073709551615 \n");
  s = ParseV1(kV1Cpuacct, "cpuacct.usage_percpu", percpu);
  EXPECT_EQ(s.cpu.per_cpu_ns, (std::vector<uint64_t>{7, 0, 18446744073709551615u}));
  // No per-CPU values (the walk was not over cpuacct): nothing.
  EXPECT_EQ(RenderV1(V1IterFile::kCpuacctUsagePercpu, e), "");

  // usage_user / usage_sys: one value in ns, only when the walk summed the cgroup's times.
  e.cpuacct_user_ns = 81000000;
  e.cpuacct_system_ns = 4000000;
  EXPECT_EQ(RenderV1(V1IterFile::kCpuacctUsageUser, e), "");
  e.parts |= STATLET_V1_CPUACCT_TIMES;
  EXPECT_EQ(RenderV1(V1IterFile::kCpuacctUsageUser, e), "81000000\n");
  EXPECT_EQ(RenderV1(V1IterFile::kCpuacctUsageSys, e), "4000000\n");
  EXPECT_EQ(ParseV1(kV1Cpuacct, "cpuacct.usage_user", RenderV1(V1IterFile::kCpuacctUsageUser, e)).cpu.user_ns,
            81000000u);
  EXPECT_EQ(ParseV1(kV1Cpuacct, "cpuacct.usage_sys", RenderV1(V1IterFile::kCpuacctUsageSys, e)).cpu.system_ns,
            4000000u);
}

TEST(RenderV1IterFile, MemoryFilesAreTheKernelsAndParseIntoTheCollectorsFields) {
  statlet_cgroup_v1_stats e{};
  e.parts = STATLET_V1_MEMORY | STATLET_V1_KMEM | STATLET_V1_OOM_CONTROL;
  e.memory_pages = 3;
  e.memory_watermark_pages = 5;
  e.memory_failcnt = 2;
  e.kmem_pages = 1;
  e.oom_kill = 4;
  e.under_oom = 1;
  EXPECT_EQ(RenderV1(V1IterFile::kMemoryUsage, e), "12288\n");
  EXPECT_EQ(ParseV1(kV1Memory, "memory.usage_in_bytes", RenderV1(V1IterFile::kMemoryUsage, e)).memory.usage_bytes,
            12288u);
  EXPECT_EQ(
      ParseV1(kV1Memory, "memory.max_usage_in_bytes", RenderV1(V1IterFile::kMemoryMaxUsage, e)).memory.max_usage_bytes,
      20480u);
  EXPECT_EQ(ParseV1(kV1Memory, "memory.failcnt", RenderV1(V1IterFile::kMemoryFailcnt, e)).memory.failcnt, 2u);
  EXPECT_EQ(ParseV1(kV1Memory, "memory.kmem.usage_in_bytes", RenderV1(V1IterFile::kKmemUsage, e)).memory.kernel_bytes,
            4096u);
  const std::string oom = RenderV1(V1IterFile::kOomControl, e);
  EXPECT_EQ(oom, "oom_kill_disable 0\nunder_oom 1\noom_kill 4\n");
  EXPECT_EQ(ParseV1(kV1Memory, "memory.oom_control", oom).memory.events.oom_kill, 4u);
}

TEST(RenderV1IterFile, MissingPartsAndSmallBuffersGiveNothing) {
  statlet_cgroup_v1_stats e{};
  e.parts = STATLET_V1_CFS;  // a root memcg: no page counters
  EXPECT_EQ(RenderV1(V1IterFile::kMemoryUsage, e), "");
  EXPECT_EQ(RenderV1(V1IterFile::kOomControl, e), "");
  e.parts |= STATLET_V1_CPUACCT;
  std::vector<uint64_t> many(512, 18446744073709551615u);
  char buf[256];
  EXPECT_EQ(RenderV1IterFile(V1IterFile::kCpuacctUsagePercpu, e, many.data(), many.size(), 4096, buf, sizeof buf), 0u);
  EXPECT_EQ(RenderV1IterFile(V1IterFile::kCpuStat, e, nullptr, 0, 4096, buf, 16), 0u);
}

}  // namespace
}  // namespace statlet::bpf
