// statlet top's pure parts: rates from two samples, filter and sort, the renderer's lines,
// and the two sources' conversions (a snapshot, a CRI answer) into samples.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/human_bytes.h"
#include "cmd/top_model.h"
#include "cmd/top_render.h"
#include "cmd/top_source.h"
#include "proto/api.pb.h"

namespace statlet::top {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

Entry Cg(const std::string& key, const std::string& parent, int64_t ts, uint64_t cpu_ns, uint64_t mem) {
  Entry e;
  e.key = key;
  e.parent = parent;
  e.name = key;
  e.timestamp_ns = ts;
  e.cpu_ns = cpu_ns;
  e.working_set_bytes = mem;
  return e;
}

std::vector<std::string> Names(const std::vector<Row>& rows) {
  std::vector<std::string> out;
  for (const Row& r : rows) out.push_back(std::string(static_cast<size_t>(r.depth) * 2, ' ') + r.name);
  return out;
}

const Row* Find(const std::vector<Row>& rows, const std::string& key) {
  for (const Row& r : rows) {
    if (r.key == key) return &r;
  }
  return nullptr;
}

TEST(TopModel, RatesBetweenTwoSamples) {
  Entry a = Cg("/a", "", 10 * kSecond, 1'000'000'000, 100);
  a.user_ns = 600'000'000;
  a.system_ns = 400'000'000;
  a.periods = 100;
  a.throttled_periods = 10;
  a.throttled_ns = 0;
  a.rx_bytes = 1000;
  a.tx_bytes = 5000;
  Entry b = a;
  b.timestamp_ns = 12 * kSecond;  // a 2 s window
  b.cpu_ns = 2'500'000'000;       // 1.5 s of CPU: 75 % of one CPU
  b.user_ns = 1'600'000'000;      // 1 s: 50 %
  b.system_ns = 900'000'000;      // 0.5 s: 25 %
  b.periods = 120;
  b.throttled_periods = 15;      // 5 of 20 periods: 25 %
  b.throttled_ns = 300'000'000;  // 0.15 s per s
  b.rx_bytes = 3000;             // 1000 B/s
  b.tx_bytes = 5000;
  b.working_set_bytes = 4096;
  Sample s1{{a}}, s2{{b}};
  std::vector<Row> rows = BuildRows(&s1, s2);
  ASSERT_EQ(rows.size(), 1u);
  const Row& r = rows[0];
  EXPECT_DOUBLE_EQ(*r.cpu_percent, 75.0);
  EXPECT_DOUBLE_EQ(*r.user_percent, 50.0);
  EXPECT_DOUBLE_EQ(*r.system_percent, 25.0);
  EXPECT_DOUBLE_EQ(*r.throttled_percent, 25.0);
  EXPECT_DOUBLE_EQ(*r.throttled_seconds_per_second, 0.15);
  EXPECT_DOUBLE_EQ(*r.rx_bytes_per_second, 1000.0);
  EXPECT_DOUBLE_EQ(*r.tx_bytes_per_second, 0.0);
  EXPECT_EQ(*r.working_set_bytes, 4096u);  // a gauge: the newer sample's
}

TEST(TopModel, NoRatesWithoutABaseline) {
  Sample s{{Cg("/a", "", kSecond, 5, 7)}};
  std::vector<Row> rows = BuildRows(nullptr, s);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].cpu_percent);
  EXPECT_EQ(*rows[0].working_set_bytes, 7u);
  // A cgroup new in the second sample has no rate either.
  Sample later{{Cg("/a", "", 2 * kSecond, 10, 7), Cg("/new", "", 2 * kSecond, 10, 7)}};
  rows = BuildRows(&s, later);
  EXPECT_TRUE(Find(rows, "/a")->cpu_percent);
  EXPECT_FALSE(Find(rows, "/new")->cpu_percent);
}

TEST(TopModel, CounterThatWentBackwardsOrNoTimeGivesNoRate) {
  Sample s1{{Cg("/a", "", kSecond, 5'000'000'000, 1), Cg("/b", "", kSecond, 1, 1)}};
  // /a recreated under the same path: its counter restarted.
  Sample s2{{Cg("/a", "", 2 * kSecond, 1'000, 1), Cg("/b", "", kSecond, 100, 1)}};
  std::vector<Row> rows = BuildRows(&s1, s2);
  EXPECT_FALSE(Find(rows, "/a")->cpu_percent);
  EXPECT_FALSE(Find(rows, "/b")->cpu_percent);  // the same timestamp: no window
}

TEST(TopModel, ThrottlingWithoutElapsedPeriodsIsZero) {
  Entry a = Cg("/a", "", kSecond, 0, 1);
  a.periods = 7;
  a.throttled_periods = 3;
  Entry b = a;
  b.timestamp_ns = 2 * kSecond;
  Sample s1{{a}}, s2{{b}};
  EXPECT_EQ(BuildRows(&s1, s2)[0].throttled_percent, 0.0);
  // No CFS counters at all (no cpu controller): unknown, not zero.
  Sample u1{{Cg("/u", "", kSecond, 0, 1)}}, u2{{Cg("/u", "", 2 * kSecond, 0, 1)}};
  EXPECT_FALSE(BuildRows(&u1, u2)[0].throttled_percent);
}

// Two pods with containers, and a container whose pod is not in the sample.
std::vector<Row> PodRows() {
  Sample s1{{Cg("p1", "", 0, 0, 0), Cg("c1a", "p1", 0, 0, 0), Cg("c1b", "p1", 0, 0, 0), Cg("p2", "", 0, 0, 0),
             Cg("c2a", "p2", 0, 0, 0), Cg("orphan", "gone", 0, 0, 0)}};
  // Over one second: CPU in ms of the window = percent * 10.
  Sample s2{{Cg("p1", "", kSecond, 300'000'000, 500), Cg("c1a", "p1", kSecond, 100'000'000, 100),
             Cg("c1b", "p1", kSecond, 200'000'000, 400), Cg("p2", "", kSecond, 900'000'000, 50),
             Cg("c2a", "p2", kSecond, 900'000'000, 50), Cg("orphan", "gone", kSecond, 400'000'000, 9000)}};
  std::vector<Row> rows = BuildRows(&s1, s2);
  rows[0].name = "default/web";
  rows[1].name = "nginx";
  rows[2].name = "sidecar";
  rows[3].name = "kube-system/dns";
  rows[4].name = "coredns";
  rows[5].name = "lonely";
  return rows;
}

TEST(TopModel, SortKeepsContainersUnderTheirPod) {
  View v;
  v.sort = Column::kCpu;
  EXPECT_EQ(Names(Arrange(PodRows(), v)), (std::vector<std::string>{"kube-system/dns", "  coredns", "lonely",
                                                                    "default/web", "  sidecar", "  nginx"}));
  v.sort = Column::kMemory;
  EXPECT_EQ(Names(Arrange(PodRows(), v)), (std::vector<std::string>{"lonely", "default/web", "  sidecar", "  nginx",
                                                                    "kube-system/dns", "  coredns"}));
  v.sort = Column::kName;
  EXPECT_EQ(Names(Arrange(PodRows(), v)), (std::vector<std::string>{"default/web", "  nginx", "  sidecar",
                                                                    "kube-system/dns", "  coredns", "lonely"}));
  v.reverse = true;
  EXPECT_EQ(Names(Arrange(PodRows(), v)), (std::vector<std::string>{"lonely", "kube-system/dns", "  coredns",
                                                                    "default/web", "  sidecar", "  nginx"}));
  v.sort = Column::kCpu;
  EXPECT_EQ(Names(Arrange(PodRows(), v)), (std::vector<std::string>{"default/web", "  nginx", "  sidecar", "lonely",
                                                                    "kube-system/dns", "  coredns"}));
}

TEST(TopModel, UnknownValuesSortLast) {
  std::vector<Row> rows = PodRows();
  rows[5].cpu_percent.reset();  // lonely: the busiest by memory, unknown CPU
  rows[3].cpu_percent.reset();  // kube-system/dns
  View v;
  EXPECT_EQ(Names(Arrange(rows, v)), (std::vector<std::string>{"default/web", "  sidecar", "  nginx", "kube-system/dns",
                                                               "  coredns", "lonely"}));
  v.reverse = true;  // reversed: still last
  EXPECT_EQ(Names(Arrange(rows, v)).back(), "lonely");
}

TEST(TopModel, FilterKeepsPodsOfMatchesAndContainersOfMatchingPods) {
  View v;
  v.sort = Column::kName;
  v.filter = "NGINX";  // case-insensitive: the container, under its pod
  EXPECT_EQ(Names(Arrange(PodRows(), v)), (std::vector<std::string>{"default/web", "  nginx"}));
  v.filter = "kube-system";  // a pod: with its containers
  EXPECT_EQ(Names(Arrange(PodRows(), v)), (std::vector<std::string>{"kube-system/dns", "  coredns"}));
  v.filter = "c2";  // keys match too
  EXPECT_EQ(Names(Arrange(PodRows(), v)), (std::vector<std::string>{"kube-system/dns", "  coredns"}));
  v.filter = "no such thing";
  EXPECT_TRUE(Arrange(PodRows(), v).empty());
  v.filter = "";
  EXPECT_EQ(Arrange(PodRows(), v).size(), 6u);
}

TEST(TopModel, DeeperTreesAndCyclesEnd) {
  std::vector<Row> rows(4);
  rows[0].key = rows[0].name = "/";
  rows[1].key = "/a", rows[1].name = "a", rows[1].parent = "/";
  rows[2].key = "/a/b", rows[2].name = "b", rows[2].parent = "/a";
  rows[3].key = "x", rows[3].name = "x", rows[3].parent = "x";  // its own parent
  View v;
  v.sort = Column::kName;
  EXPECT_EQ(Names(Arrange(rows, v)), (std::vector<std::string>{"/", "  a", "    b", "x"}));
  rows[0].parent = "/a/b";  // a cycle: / -> /a/b -> /a -> /
  std::vector<Row> out = Arrange(rows, v);
  EXPECT_EQ(out.size(), 4u);
  v.filter = "b";
  EXPECT_EQ(Arrange(rows, v).size(), 3u);
}

TEST(TopModel, ColumnNamesRoundTrip) {
  for (int i = 0; i < kColumnCount; ++i) {
    auto c = static_cast<Column>(i);
    EXPECT_EQ(ColumnByName(ColumnName(c)), c) << ColumnName(c);
  }
  EXPECT_EQ(ColumnByName("mem"), Column::kMemory);
  EXPECT_FALSE(ColumnByName("bogus"));
}

// ---------------------------------------------------------------------------- renderer

Frame SomeFrame() {
  Frame f;
  f.source = "in-process";
  f.clock = "12:00:00";
  f.interval = "1s";
  return f;
}

TEST(TopRender, LinesFitTheScreen) {
  View v;
  std::vector<Row> rows = Arrange(PodRows(), v);
  for (int width : {20, 40, 80, 120, 160, 300}) {
    for (int height : {1, 3, 5, 9, 40}) {
      Screen s = Render(rows, SomeFrame(), width, height);
      EXPECT_LE(s.lines.size(), static_cast<size_t>(height));
      for (const std::string& l : s.lines) EXPECT_LE(l.size(), static_cast<size_t>(width)) << width << ": " << l;
    }
  }
}

TEST(TopRender, HeaderMarksTheSortColumnAndRowsFollowIt) {
  View v;
  v.sort = Column::kMemory;
  std::vector<Row> rows = Arrange(PodRows(), v);
  Frame f = SomeFrame();
  f.view = v;
  Screen s = Render(rows, f, 160, 40);
  ASSERT_EQ(s.header_line, 2);
  ASSERT_EQ(s.lines.size(), 3 + rows.size());
  EXPECT_NE(s.lines[0].find("sort: memory"), std::string::npos) << s.lines[0];
  EXPECT_NE(s.lines[2].find("*WORKING SET"), std::string::npos) << s.lines[2];
  EXPECT_EQ(s.lines[2].find("*CPU"), std::string::npos);
  EXPECT_EQ(s.lines[3].rfind("lonely ", 0), 0u) << s.lines[3];
  EXPECT_EQ(s.lines[5].rfind("  sidecar ", 0), 0u) << s.lines[5];
  // lonely: 40.0 % CPU, 8.8KiB of memory; values line up under their labels.
  const std::string& header = s.lines[2];
  const std::string& line = s.lines[3];
  size_t cpu_end = header.find("CPU%") + 4;
  EXPECT_EQ(line.substr(cpu_end - 4, 4), "40.0") << line;
  size_t mem_end = header.find("*WORKING SET") + 12;
  EXPECT_EQ(line.substr(mem_end - 7, 7), "8.8KiB ") << line;  // its Memory QoS zone unknown: no mark
}

// The MEM column marks each container's Memory QoS zone; the title says which rules judged
// the zones.
TEST(TopRender, MemoryColumnMarksTheZoneAndTheTitleTheRules) {
  std::vector<Row> rows = Arrange(PodRows(), View());
  for (Row& r : rows) r.memory_zone = r.name == "lonely" ? "throttling" : r.name == "sidecar" ? "below_request" : "";
  Frame f = SomeFrame();
  f.memory_qos = DescribeMemoryQos("v1.36", "TieredReservation", "0.9", "v1.36.2");
  Screen s = Render(rows, f, 200, 40);
  EXPECT_NE(s.lines[0].find("MEM < protected ^ throttling ! at limit (memqos v1.36 TieredReservation factor 0.9, "
                            "kubelet v1.36.2)"),
            std::string::npos)
      << s.lines[0];
  const size_t mem_end = s.lines[2].find("WORKING SET") + 11;
  for (size_t i = 3; i < s.lines.size(); ++i) {
    const std::string& line = s.lines[i];
    const char mark = line[mem_end - 1];
    if (line.find("lonely") != std::string::npos) {
      EXPECT_EQ(mark, '^') << line;
    } else if (line.find("sidecar") != std::string::npos) {
      EXPECT_EQ(mark, '<') << line;
    }
  }
  EXPECT_EQ(MemoryZoneMark("at_limit"), '!');
  EXPECT_EQ(MemoryZoneMark("above_request"), ' ');
  EXPECT_EQ(DescribeMemoryQos("unknown", "", "", ""), "memqos rules unknown");
  EXPECT_EQ(DescribeMemoryQos("off", "None", "0.9", "v1.37.0"), "memqos off, kubelet v1.37.0");
  EXPECT_EQ(DescribeMemoryQos("v1.37", "None", "none", "v1.37.0"), "memqos v1.37 None factor none, kubelet v1.37.0");
  EXPECT_EQ(DescribeMemoryQos("", "", "", ""), "");
  Screen plain = Render(rows, SomeFrame(), 200, 40);
  EXPECT_EQ(plain.lines[0].find("MEM <"), std::string::npos);
}

TEST(TopRender, NarrowScreensDropColumnsNotNames) {
  std::vector<Column> wide = VisibleColumns(200);
  EXPECT_EQ(wide.size(), static_cast<size_t>(kColumnCount));
  std::vector<Column> narrow = VisibleColumns(60);
  EXPECT_LT(narrow.size(), wide.size());
  EXPECT_NE(std::find(narrow.begin(), narrow.end(), Column::kCpu), narrow.end());
  EXPECT_NE(std::find(narrow.begin(), narrow.end(), Column::kMemory), narrow.end());
  EXPECT_EQ(std::find(narrow.begin(), narrow.end(), Column::kMemoryPsi), narrow.end());
  std::vector<Column> tiny = VisibleColumns(10);
  EXPECT_EQ(tiny, (std::vector<Column>{Column::kName, Column::kCpu, Column::kMemory}));
}

TEST(TopRender, OverflowSaysHowManyRowsAreHidden) {
  View v;
  std::vector<Row> rows = Arrange(PodRows(), v);
  Screen s = Render(rows, SomeFrame(), 160, 6);  // 3 lines of header: room for 3
  ASSERT_EQ(s.lines.size(), 6u);
  EXPECT_NE(s.lines[5].find("4 more"), std::string::npos) << s.lines[5];
}

TEST(TopRender, LongNamesKeepTheirEnd) {
  std::vector<Row> rows(1);
  rows[0].key = rows[0].name = "/a/very/long/path/of/cgroups/that/does/not/fit/the-interesting-leaf.scope";
  Screen s = Render(rows, SomeFrame(), 60, 10);
  ASSERT_EQ(s.lines.size(), 4u);
  EXPECT_NE(s.lines[3].find("leaf.scope"), std::string::npos) << s.lines[3];
  EXPECT_EQ(s.lines[3].rfind("..", 0), 0u) << s.lines[3];
}

TEST(TopRender, PromptReplacesTheHelp) {
  Frame f = SomeFrame();
  f.prompt = "filter: ngi";
  Screen s = Render({}, f, 100, 10);
  EXPECT_EQ(s.lines[1], "filter: ngi_");
  f.prompt.clear();
  f.view.filter = "ngi";
  s = Render({}, f, 100, 10);
  EXPECT_EQ(s.lines[1].rfind("filter: ngi  keys:", 0), 0u) << s.lines[1];
}

TEST(TopRender, Bytes) {
  EXPECT_EQ(HumanBytes(0), "0B");
  EXPECT_EQ(HumanBytes(1023), "1023B");
  EXPECT_EQ(HumanBytes(1536), "1.5KiB");
  EXPECT_EQ(HumanBytes(64.0 * 1024 * 1024), "64.0MiB");
  EXPECT_EQ(HumanBytes(3.0 * 1024 * 1024 * 1024), "3.0GiB");
  EXPECT_EQ(HumanBytes(1536, " "), "1.5 KiB");
}

// ---------------------------------------------------------------------------- sources

CgroupStats MakeCgroup(const std::string& path, CgroupKind kind, uint64_t cpu) {
  CgroupStats c;
  c.id.cgroup_path = path;
  c.id.kind = kind;
  c.cpu.usage_ns = cpu;
  c.memory.working_set_bytes = cpu * 2;
  c.memory.max_bytes = kUnlimited;
  c.host_network = true;
  return c;
}

TEST(TopSource, BareHostCgroupsNestUnderTheirNearestAncestor) {
  Snapshot s;
  s.monotonic_ns = 42;
  s.cgroups.push_back(MakeCgroup("/", CgroupKind::kRoot, 100));
  s.cgroups.push_back(MakeCgroup("/system.slice", CgroupKind::kOther, 50));
  s.cgroups.push_back(MakeCgroup("/system.slice/a/b.service", CgroupKind::kOther, 20));
  s.cgroups.push_back(MakeCgroup("/user.slice", CgroupKind::kOther, 10));
  s.cgroups[2].memory.max_bytes = 1 << 20;
  s.cgroups[2].cpu.psi.some = PsiLine{1.5, 0, 0, 0};
  Sample out = SampleFromSnapshot(s);
  ASSERT_EQ(out.entries.size(), 4u);
  EXPECT_EQ(out.entries[0].parent, "");
  EXPECT_EQ(out.entries[1].parent, "/");
  EXPECT_EQ(out.entries[1].name, "system.slice");
  EXPECT_EQ(out.entries[2].parent, "/system.slice");
  EXPECT_EQ(out.entries[2].name, "a/b.service");
  EXPECT_EQ(out.entries[2].kind, EntryKind::kCgroup);
  EXPECT_EQ(out.entries[2].timestamp_ns, 42);
  EXPECT_EQ(*out.entries[2].cpu_ns, 20u);
  EXPECT_EQ(*out.entries[2].memory_limit_bytes, 1u << 20);
  EXPECT_FALSE(out.entries[1].memory_limit_bytes);  // "max"
  EXPECT_EQ(*out.entries[2].cpu_psi_some_avg10, 1.5);
  EXPECT_FALSE(out.entries[2].rx_bytes);  // the host's namespace is not the cgroup's
}

TEST(TopSource, PodsAndContainersFromASnapshot) {
  Snapshot s;
  s.cgroups.push_back(MakeCgroup("/", CgroupKind::kRoot, 100));
  s.cgroups.push_back(MakeCgroup("/kubepods", CgroupKind::kKubepods, 90));
  CgroupStats pod = MakeCgroup("/kubepods/podu1", CgroupKind::kPod, 80);
  pod.id.pod_uid = "u1";
  pod.host_network = false;
  pod.netns_inode = 7;
  NetInterfaceStats lo, eth0;
  lo.name = "lo";
  lo.rx_bytes = lo.tx_bytes = 999;
  eth0.name = "eth0";
  eth0.rx_bytes = 10;
  eth0.tx_bytes = 20;
  s.netns[7].interfaces = {lo, eth0};
  s.cgroups.push_back(pod);
  CgroupStats ctr = MakeCgroup("/kubepods/podu1/abc", CgroupKind::kContainer, 70);
  ctr.id.pod_uid = "u1";
  ctr.id.container_id = "abcdef0123456789abcdef";
  s.cgroups.push_back(ctr);
  CgroupStats pause = MakeCgroup("/kubepods/podu1/fff", CgroupKind::kContainer, 1);
  pause.id.pod_uid = "u1";
  pause.id.container_id = "fff";
  auto meta = std::make_shared<ContainerMetadata>();
  meta->is_sandbox = true;
  pause.id.meta = meta;
  s.cgroups.push_back(pause);
  Sample out = SampleFromSnapshot(s);
  ASSERT_EQ(out.entries.size(), 2u);  // the pod and its one application container
  EXPECT_EQ(out.entries[0].kind, EntryKind::kPod);
  EXPECT_EQ(out.entries[0].name, "podu1");
  EXPECT_EQ(*out.entries[0].rx_bytes, 10u);  // loopback left out
  EXPECT_EQ(*out.entries[0].tx_bytes, 20u);
  EXPECT_EQ(out.entries[1].kind, EntryKind::kContainer);
  EXPECT_EQ(out.entries[1].parent, out.entries[0].key);
  EXPECT_EQ(out.entries[1].name, "abcdef0123456");
  EXPECT_FALSE(out.entries[1].rx_bytes);  // network is the pod's
}

// A node running pods and services: the pods under one section with the kubepods cgroup's
// totals, everything else under another with the node's totals less the pods'.
TEST(TopSource, MixedHostShowsPodsAndTheRestInTwoSections) {
  Snapshot s;
  s.monotonic_ns = 9;
  s.cgroups.push_back(MakeCgroup("/", CgroupKind::kRoot, 100));
  s.cgroups.push_back(MakeCgroup("/kubepods", CgroupKind::kKubepods, 60));
  s.cgroups.push_back(MakeCgroup("/kubepods/burstable", CgroupKind::kQos, 50));
  CgroupStats pod = MakeCgroup("/kubepods/burstable/podu1", CgroupKind::kPod, 50);
  pod.id.pod_uid = "u1";
  s.cgroups.push_back(pod);
  CgroupStats ctr = MakeCgroup("/kubepods/burstable/podu1/abc", CgroupKind::kContainer, 45);
  ctr.id.pod_uid = "u1";
  ctr.id.container_id = "abc";
  s.cgroups.push_back(ctr);
  s.cgroups.push_back(MakeCgroup("/system.slice", CgroupKind::kOther, 30));
  s.cgroups.push_back(MakeCgroup("/system.slice/kubelet.service", CgroupKind::kOther, 25));
  CgroupStats docker = MakeCgroup("/system.slice/docker-f00.scope", CgroupKind::kContainer, 4);
  docker.id.container_id = "f00";  // a bare runtime container: no pod, so the host's
  s.cgroups.push_back(docker);
  Sample out = SampleFromSnapshot(s);
  std::vector<std::string> keys;
  for (const Entry& e : out.entries) keys.push_back(e.key + " < " + e.parent);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      std::string(kKubernetesSection) + " < ",
                      std::string(kHostSection) + " < ",
                      "pod/u1 < " + std::string(kKubernetesSection),
                      "container/abc < pod/u1",
                      "/system.slice < " + std::string(kHostSection),
                      "/system.slice/kubelet.service < /system.slice",
                      "/system.slice/docker-f00.scope < /system.slice",
                  }));
  EXPECT_EQ(out.entries[0].kind, EntryKind::kSection);
  EXPECT_EQ(*out.entries[0].cpu_ns, 60u);  // the kubepods cgroup's
  EXPECT_EQ(out.entries[0].name, "Kubernetes pods (/kubepods)");
  EXPECT_EQ(*out.entries[1].cpu_ns, 40u);  // the node's 100 less the pods' 60
  EXPECT_EQ(*out.entries[1].working_set_bytes, 80u);
  EXPECT_EQ(out.entries[5].name, "kubelet.service");

  // Sections stay in that order whatever the sort; `show` picks one.
  std::vector<Row> rows = BuildRows(nullptr, out);
  View v;
  v.sort = Column::kName;
  v.reverse = true;
  EXPECT_EQ(Names(Arrange(rows, v)),
            (std::vector<std::string>{"Kubernetes pods (/kubepods)", "  podu1", "    abc", "host, outside Kubernetes",
                                      "  /system.slice", "    kubelet.service", "    docker-f00.scope"}));
  v.show = Show::kHost;
  EXPECT_EQ(Names(Arrange(rows, v)), (std::vector<std::string>{"host, outside Kubernetes", "  /system.slice",
                                                               "    kubelet.service", "    docker-f00.scope"}));
  v.show = Show::kPods;
  v.filter = "abc";
  EXPECT_EQ(Names(Arrange(rows, v)), (std::vector<std::string>{"Kubernetes pods (/kubepods)", "  podu1", "    abc"}));
  v.filter = "kubelet";  // in the other section: nothing
  EXPECT_TRUE(Arrange(rows, v).empty());
  EXPECT_EQ(ShowByName("pods"), Show::kPods);
  EXPECT_FALSE(ShowByName("nodes"));
}

TEST(TopRender, PipedFramesLeaveTheKeysOut) {
  Frame f = SomeFrame();
  f.interactive = false;
  Screen s = Render(Arrange(PodRows(), View()), f, 160, 40);
  for (const std::string& l : s.lines) EXPECT_EQ(l.find("keys:"), std::string::npos) << l;
  EXPECT_EQ(s.header_line, 1);  // title, then the column header
  f.view.filter = "web";
  s = Render({}, f, 160, 40);
  EXPECT_EQ(s.lines[1], "filter: web");
  f.interactive = true;
  s = Render({}, f, 160, 40);
  EXPECT_NE(s.lines[1].find("keys:"), std::string::npos);
  EXPECT_NE(s.lines[1].find("k pods/host"), std::string::npos);
}

TEST(TopSource, PodsAndContainersFromTheDaemon) {
  runtime::v1::ListPodSandboxStatsResponse r;
  auto* p = r.add_stats();
  p->mutable_attributes()->set_id("sandbox1");
  p->mutable_attributes()->mutable_metadata()->set_name("web");
  p->mutable_attributes()->mutable_metadata()->set_namespace_("default");
  auto* cpu = p->mutable_linux()->mutable_cpu();
  cpu->set_timestamp(5 * kSecond);
  cpu->mutable_usage_core_nano_seconds()->set_value(123);
  cpu->mutable_usage_user_nano_seconds()->set_value(100);
  cpu->mutable_usage_kernel_nano_seconds()->set_value(23);
  cpu->mutable_throttling()->mutable_periods()->set_value(10);
  cpu->mutable_throttling()->mutable_throttled_periods()->set_value(2);
  cpu->mutable_psi()->mutable_some()->set_avg10(3.25);
  p->mutable_linux()->mutable_memory()->mutable_working_set_bytes()->set_value(4096);
  p->mutable_linux()->mutable_memory()->mutable_limit_bytes()->set_value(8192);
  auto* net = p->mutable_linux()->mutable_network();
  net->mutable_default_interface()->mutable_rx_bytes()->set_value(100);
  net->add_interfaces()->mutable_tx_bytes()->set_value(7);
  auto* c = p->mutable_linux()->add_containers();
  c->mutable_attributes()->set_id("ctr1");
  c->mutable_attributes()->mutable_metadata()->set_name("nginx");
  c->mutable_cpu()->set_timestamp(5 * kSecond);
  c->mutable_cpu()->mutable_usage_core_nano_seconds()->set_value(120);
  auto* unnamed = r.add_stats();  // no runtime names: the uid
  unnamed->mutable_attributes()->set_id("u2");
  unnamed->mutable_attributes()->mutable_metadata()->set_uid("u2");
  Sample out = SampleFromPodSandboxStats(r);
  ASSERT_EQ(out.entries.size(), 3u);
  EXPECT_EQ(out.entries[2].name, "podu2");
  EXPECT_EQ(out.entries[2].parent, "");
  const Entry& pod = out.entries[0];
  EXPECT_EQ(pod.key, "sandbox1");
  EXPECT_EQ(pod.name, "default/web");
  EXPECT_EQ(pod.timestamp_ns, 5 * kSecond);
  EXPECT_EQ(*pod.cpu_ns, 123u);
  EXPECT_EQ(*pod.user_ns, 100u);
  EXPECT_EQ(*pod.system_ns, 23u);
  EXPECT_EQ(*pod.periods, 10u);
  EXPECT_EQ(*pod.throttled_periods, 2u);
  EXPECT_FALSE(pod.throttled_ns);
  EXPECT_EQ(*pod.cpu_psi_some_avg10, 3.25);
  EXPECT_FALSE(pod.memory_psi_some_avg10);
  EXPECT_EQ(*pod.working_set_bytes, 4096u);
  EXPECT_EQ(*pod.memory_limit_bytes, 8192u);
  EXPECT_EQ(*pod.rx_bytes, 100u);
  EXPECT_EQ(*pod.tx_bytes, 7u);
  const Entry& ctr = out.entries[1];
  EXPECT_EQ(ctr.parent, "sandbox1");
  EXPECT_EQ(ctr.name, "nginx");
  EXPECT_EQ(ctr.kind, EntryKind::kContainer);
  EXPECT_FALSE(ctr.working_set_bytes);
  EXPECT_FALSE(ctr.memory_limit_bytes);
}

}  // namespace
}  // namespace statlet::top
