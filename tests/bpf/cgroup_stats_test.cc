// The cgroup_stats probe against cgroupfs on this host: every file it renders, for real
// cgroups with known work, read both ways at the same moment (files, walk, files), and
// through the collector, which must give the same snapshot either way.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "collector/cgroup_file_source.h"
#include "collector/collector.h"
#include "tests/bpf/iter_file_compare.h"
#include "tests/bpf/probe_test_support.h"
#include "tests/support/workloads.h"

namespace statlet::testing {
namespace {

std::unique_ptr<BpfProbes> LoadCgroupStats() {
  BpfOptions options = BpfOptions::WithMode(BpfMode::kOn);
  options.probes = {"cgroup_stats"};
  auto probes = BpfProbes::Create(options);
  EXPECT_TRUE(probes.ok()) << probes.status().ToString();
  if (!probes.ok()) return nullptr;
  EXPECT_NE((*probes)->FileSource(), nullptr);
  return std::move(probes).value();
}

std::string UnifiedRoot() { return HostHierarchies().mount[kUnified]; }

// A parent with a burner in one child, a pinned burner in another, and an idle third.
struct Tree {
  ProbeCgroup parent{"iter"};
  std::unique_ptr<LiveCgroup> busy, pinned, idle;
  std::vector<std::string> paths;

  bool Build() {
    if (!parent.ok()) return false;
    busy = std::make_unique<LiveCgroup>(parent.path() + "/busy", std::vector<Hierarchy>{kUnified});
    pinned = std::make_unique<LiveCgroup>(parent.path() + "/pinned", std::vector<Hierarchy>{kUnified});
    idle = std::make_unique<LiveCgroup>(parent.path() + "/idle", std::vector<Hierarchy>{kUnified});
    if (!busy->ok() || !pinned->ok() || !idle->ok()) return false;
    Child a([] { BurnCpu(120'000'000); return 0; }, Child::kExits);
    Child b([] { return PinToCpu(0) ? (BurnCpu(60'000'000), 0) : 3; }, Child::kExits);
    if (!a.StartIn(*busy) || !b.StartIn(*pinned)) return false;
    if (a.Wait(std::chrono::seconds(30)) != 0 || b.Wait(std::chrono::seconds(30)) != 0) return false;
    paths = {parent.path(), busy->path(), pinned->path(), idle->path()};
    return true;
  }
};

TEST(CgroupStatsIterator, RendersTheFilesAsTheKernelShowsThemAtTheSameMoment) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadCgroupStats();
  ASSERT_TRUE(probes);
  Tree tree;
  ASSERT_TRUE(tree.Build()) << tree.parent.error();

  // The burners' last switch may still be on its way: retry until a round is idle.
  Comparison c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    c = CompareWithFiles(*probes->FileSource(), UnifiedRoot(), tree.paths);
  } while (std::any_of(c.fields.begin(), c.fields.end(), [](const FieldReading& f) { return f.before != f.after; }) &&
           std::chrono::steady_clock::now() < deadline);

  EXPECT_TRUE(c.errors.empty()) << c.errors.front();
  ASSERT_FALSE(c.files.empty()) << "the iterator renders no file on this kernel";
  EXPECT_TRUE(c.not_rendered.empty()) << c.not_rendered.front();
  std::cout << "files rendered on this kernel:";
  for (const std::string& f : c.files) std::cout << " " << f;
  std::cout << "\n" << c.rendered << " files of " << tree.paths.size() << " cgroups, " << c.fields.size() << " values\n";
  for (const FieldReading& f : c.fields) {
    EXPECT_TRUE(f.within()) << f.cgroup << " " << f.file << " " << f.key << ": files " << f.before << " then "
                            << f.after << ", iterator " << f.source;
  }
  // The known work is there: cpu.stat usage of each burner, summed in the parent.
  auto value = [&](const std::string& cg, const char* file, const char* key) -> uint64_t {
    for (const FieldReading& f : c.fields) {
      if (f.cgroup == cg && f.file == file && f.key == key) return f.source;
    }
    ADD_FAILURE() << "no " << file << " " << key << " for " << cg;
    return 0;
  };
  EXPECT_GE(value(tree.busy->path(), "cpu.stat", "usage_usec"), 120'000u);
  EXPECT_GE(value(tree.pinned->path(), "cpu.stat", "usage_usec"), 60'000u);
  EXPECT_EQ(value(tree.idle->path(), "cpu.stat", "usage_usec"), 0u);
  EXPECT_GE(value(tree.parent.path(), "cpu.stat", "usage_usec"),
            value(tree.busy->path(), "cpu.stat", "usage_usec") + value(tree.pinned->path(), "cpu.stat", "usage_usec"));
}

// The collector with the iterator as its file source and without it: the same values,
// from the two collections taken back to back on idle cgroups.
TEST(CgroupStatsIterator, CollectorGivesTheSameSnapshotWithAndWithoutIt) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadCgroupStats();
  ASSERT_TRUE(probes);
  Tree tree;
  ASSERT_TRUE(tree.Build()) << tree.parent.error();

  CollectorOptions o;
  o.subtrees = {tree.parent.path()};
  o.include_empty = true;
  o.network = false;
  auto files = Collector::Create(o);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  o.file_source = probes->FileSource();
  auto iter = Collector::Create(o);
  ASSERT_TRUE(iter.ok()) << iter.status().ToString();

  auto same_cpu = [](const Snapshot& a, const Snapshot& b) {
    if (a.cgroups.size() != b.cgroups.size()) return false;
    for (size_t i = 0; i < a.cgroups.size(); i++) {
      const CpuStats &x = a.cgroups[i].cpu, &y = b.cgroups[i].cpu;
      if (x.usage_ns != y.usage_ns || x.user_ns != y.user_ns || x.system_ns != y.system_ns) return false;
    }
    return true;
  };
  StatusOr<Snapshot> a = Status(StatusCode::kUnavailable, "none"), b = a;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    a = (*files)->Collect();
    b = (*iter)->Collect();
    ASSERT_TRUE(a.ok() && b.ok());
  } while (!same_cpu(*a, *b) && std::chrono::steady_clock::now() < deadline);

  ASSERT_EQ(a->cgroups.size(), tree.paths.size());
  ASSERT_EQ(b->cgroups.size(), tree.paths.size());
  for (size_t i = 0; i < a->cgroups.size(); i++) {
    const CgroupStats &x = a->cgroups[i], &y = b->cgroups[i];
    ASSERT_EQ(x.id.cgroup_path, y.id.cgroup_path);
    EXPECT_EQ(x.cpu.usage_ns, y.cpu.usage_ns) << x.id.cgroup_path;
    EXPECT_EQ(x.cpu.user_ns, y.cpu.user_ns) << x.id.cgroup_path;
    EXPECT_EQ(x.cpu.system_ns, y.cpu.system_ns) << x.id.cgroup_path;
    EXPECT_EQ(x.cpu.nr_periods, y.cpu.nr_periods) << x.id.cgroup_path;
    EXPECT_EQ(x.memory.usage_bytes, y.memory.usage_bytes) << x.id.cgroup_path;
    EXPECT_EQ(x.memory.rss_bytes, y.memory.rss_bytes) << x.id.cgroup_path;
    EXPECT_EQ(x.memory.events.oom_kill, y.memory.events.oom_kill) << x.id.cgroup_path;
    EXPECT_EQ(x.process.pids_current, y.process.pids_current) << x.id.cgroup_path;
  }
  EXPECT_TRUE(b->read_errors.empty()) << b->read_errors.front().file << " " << b->read_errors.front().reason;
}

}  // namespace
}  // namespace statlet::testing
