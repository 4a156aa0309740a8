// The cgroup_stats probe against cgroupfs on this host: every file it renders, for real
// cgroups with known work, read both ways at the same moment (files, walk, files), and
// through the collector, which must give the same snapshot either way.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "bpf/probe_abi.h"
#include "collector/cgroup_file_source.h"
#include "collector/collector.h"
#include "collector/kept_file.h"
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
    Child a(
        [] {
          BurnCpu(120'000'000);
          return 0;
        },
        Child::kExits);
    Child b([] { return PinToCpu(0) ? (BurnCpu(60'000'000), 0) : 3; }, Child::kExits);
    if (!a.StartIn(*busy) || !b.StartIn(*pinned)) return false;
    if (a.Wait(std::chrono::seconds(30)) != 0 || b.Wait(std::chrono::seconds(30)) != 0) return false;
    paths = {parent.path(), busy->path(), pinned->path(), idle->path()};
    return true;
  }
};

// Two collectors of `subtree`, one reading every file and one taking what the iterator
// renders (walked however few the cgroups), collecting back to back until `same` says the
// two snapshots agree (the work's last switch may still be on its way) or 5 s pass.
struct BothWays {
  StatusOr<Snapshot> files = Status(StatusCode::kUnavailable, "none"), iter = files;
};
template <typename Same>
BothWays CollectBothWays(CgroupFileSource* source, const std::string& subtree, Same same) {
  CollectorOptions o;
  o.subtrees = {subtree};
  o.include_empty = true;
  o.network = false;
  o.min_parallel_cgroups = 0;  // the walks run beside pass 1 on the reading threads, as on a large host
  auto files = Collector::Create(o);
  o.file_source = source;
  o.min_walked_files = 0;
  auto iter = Collector::Create(o);
  BothWays out;
  if (!files.ok() || !iter.ok()) {
    out.files = out.iter = files.ok() ? iter.status() : files.status();
    return out;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    out.files = (*files)->Collect();
    out.iter = (*iter)->Collect();
  } while (out.files.ok() && out.iter.ok() && !same(*out.files, *out.iter) &&
           std::chrono::steady_clock::now() < deadline);
  return out;
}

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
  std::cout << "\n"
            << c.rendered << " files of " << tree.paths.size() << " cgroups, " << c.fields.size() << " values\n";
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

// KiB of this process's address space that maps BPF maps (their pages are all resident).
size_t BpfMapsMappedKiB() {
  std::ifstream smaps("/proc/self/smaps");
  size_t kib = 0;
  bool bpf_map = false;
  for (std::string line; std::getline(smaps, line);) {
    if (line.compare(0, 5, "Size:") == 0) {
      if (bpf_map) kib += std::stoul(line.substr(5));
    } else if (line.find('-') < line.find(' ')) {  // a mapping's header
      bpf_map = line.find("anon_inode:bpf-map") != std::string::npos;
    }
  }
  return kib;
}

// The walk's array is sized for the largest node (--bpf.max-cgroups), and mapping a BPF
// array puts all of the range mapped in the resident set: only the entries a walk fills
// are mapped, and the mapping grows with the hierarchy.
TEST(CgroupStatsIterator, MapsOnlyTheEntriesItsWalksFill) {
  STATLET_REQUIRE_ROOT();
  if (CgroupDirs(UnifiedRoot()).size() > 1000) GTEST_SKIP() << "a hierarchy this big fills most of the array";
  auto probes = LoadCgroupStats();
  ASSERT_TRUE(probes);
  ASSERT_TRUE(probes->FileSource()->Refresh().ok());
  const size_t before = BpfMapsMappedKiB();
  const size_t whole_kib = BpfOptions().max_cgroups * sizeof(statlet_cgroup_stats) / 1024;
  EXPECT_LT(before, whole_kib / 2) << "the unified walk's array alone is " << whole_kib << " KiB";

  constexpr int kMore = 600;
  ProbeCgroup parent("grow");
  ASSERT_TRUE(parent.ok()) << parent.error();
  std::vector<std::unique_ptr<LiveCgroup>> more;
  for (int i = 0; i < kMore; ++i) {
    more.push_back(
        std::make_unique<LiveCgroup>(parent.path() + "/c" + std::to_string(i), std::vector<Hierarchy>{kUnified}));
    ASSERT_TRUE(more.back()->ok()) << more.back()->error();
  }
  // The last cgroups of the walk are rendered as the kernel shows them.
  const Comparison c = CompareWithFiles(*probes->FileSource(), UnifiedRoot(),
                                        {parent.path(), more.front()->path(), more.back()->path()});
  EXPECT_TRUE(c.errors.empty()) << c.errors.front();
  EXPECT_TRUE(c.not_rendered.empty()) << c.not_rendered.front();
  EXPECT_GE(c.rendered, 3u) << "cpu.stat at least, of each";
  const size_t after = BpfMapsMappedKiB();
  EXPECT_GE(after, before + kMore * sizeof(statlet_cgroup_stats) / 1024 - 64) << "before " << before << " KiB";
  EXPECT_LT(after, whole_kib);

  // Between collections the arrays are unmapped; nothing renders until the next walk, which
  // maps them again.
  probes->ReleaseMappings();
  const size_t released = BpfMapsMappedKiB();
  EXPECT_LE(released + kMore * sizeof(statlet_cgroup_stats) / 1024, after) << "after " << after << " KiB";
  struct stat st;
  ASSERT_EQ(stat((UnifiedRoot() + more.back()->path()).c_str(), &st), 0);
  ReadBuffer buf;
  EXPECT_FALSE(probes->FileSource()->Render(st.st_ino, probes->FileSource()->FileIndex(kUnified, "cpu.stat"), &buf));
  const Comparison again = CompareWithFiles(*probes->FileSource(), UnifiedRoot(), {more.back()->path()});
  EXPECT_TRUE(again.errors.empty()) << again.errors.front();
  EXPECT_TRUE(again.not_rendered.empty()) << again.not_rendered.front();
  EXPECT_GE(again.rendered, 1u);
  EXPECT_GE(BpfMapsMappedKiB(), released + kMore * sizeof(statlet_cgroup_stats) / 1024);
}

// The collector with the iterator as its file source and without it: the same values,
// from the two collections taken back to back on idle cgroups.
TEST(CgroupStatsIterator, CollectorGivesTheSameSnapshotWithAndWithoutIt) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadCgroupStats();
  ASSERT_TRUE(probes);
  Tree tree;
  ASSERT_TRUE(tree.Build()) << tree.parent.error();

  auto same_cpu = [](const Snapshot& a, const Snapshot& b) {
    if (a.cgroups.size() != b.cgroups.size()) return false;
    for (size_t i = 0; i < a.cgroups.size(); i++) {
      const CpuStats &x = a.cgroups[i].cpu, &y = b.cgroups[i].cpu;
      if (x.usage_ns != y.usage_ns || x.user_ns != y.user_ns || x.system_ns != y.system_ns) return false;
    }
    return true;
  };
  BothWays both = CollectBothWays(probes->FileSource(), tree.parent.path(), same_cpu);
  ASSERT_TRUE(both.files.ok()) << both.files.status().ToString();
  ASSERT_TRUE(both.iter.ok()) << both.iter.status().ToString();
  const StatusOr<Snapshot>&a = both.files, &b = both.iter;

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

// A v1 or hybrid host: the cpu, cpuacct and memory hierarchies' files from their walks,
// for cgroups with known work (a burner, a child that touched 32 MiB and stays, an idle one),
// read both ways at the same moment, in each hierarchy.
struct V1Tree {
  std::string root = "/" + UniqueName("statlet-bpf-v1");
  std::unique_ptr<LiveCgroup> parent, busy, memory, idle;
  std::optional<Child> holder;
  std::vector<std::string> paths;

  bool Build(std::string* error) {
    const std::vector<Hierarchy> v1 = {kV1Cpu, kV1Cpuacct, kV1Memory};
    parent = std::make_unique<LiveCgroup>(root, v1);
    busy = std::make_unique<LiveCgroup>(root + "/busy", v1);
    memory = std::make_unique<LiveCgroup>(root + "/memory", v1);
    idle = std::make_unique<LiveCgroup>(root + "/idle", v1);
    for (LiveCgroup* cg : {parent.get(), busy.get(), memory.get(), idle.get()}) {
      if (!cg->ok()) {
        *error = cg->error();
        return false;
      }
    }
    Child burner(
        [] {
          BurnCpu(80'000'000);
          return 0;
        },
        Child::kExits);
    holder.emplace([] {
      constexpr size_t kSize = 32 << 20;
      volatile char* block = static_cast<volatile char*>(std::malloc(kSize));  // kept: the child stays
      for (size_t i = 0; i < kSize; i += 4096) block[i] = 1;
      return 0;
    });
    if (!burner.StartIn(*busy) || !holder->StartIn(*memory) || burner.Wait(std::chrono::seconds(30)) != 0 ||
        !holder->Result().has_value()) {
      *error = "the workload did not run";
      return false;
    }
    paths = {root, busy->path(), memory->path(), idle->path()};
    return true;
  }
};

TEST(CgroupStatsIterator, RendersTheV1HierarchiesFilesAsTheKernelShowsThem) {
  STATLET_REQUIRE_ROOT();
  const CgroupHierarchies& h = HostHierarchies();
  if (!h.has(kV1Cpu) || !h.has(kV1Cpuacct) || !h.has(kV1Memory))
    GTEST_SKIP() << "no cpu, cpuacct and memory v1 hierarchies here";
  auto probes = LoadCgroupStats();
  ASSERT_TRUE(probes);
  V1Tree tree;
  std::string error;
  ASSERT_TRUE(tree.Build(&error)) << error;

  std::map<std::string, uint64_t> seen;  // "cgroup file key" -> the iterator's value
  for (Hierarchy hh : {kV1Cpu, kV1Cpuacct, kV1Memory}) {
    Comparison c;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
      c = CompareWithFiles(*probes->FileSource(), hh, h.mount[hh], tree.paths);
    } while (std::any_of(c.fields.begin(), c.fields.end(), [](const FieldReading& f) { return f.before != f.after; }) &&
             std::chrono::steady_clock::now() < deadline);
    EXPECT_TRUE(c.errors.empty()) << HierarchyName(hh) << ": " << c.errors.front();
    ASSERT_FALSE(c.files.empty()) << "the iterator renders no file of " << HierarchyName(hh);
    EXPECT_TRUE(c.not_rendered.empty()) << HierarchyName(hh) << ": " << c.not_rendered.front();
    EXPECT_EQ(c.rendered, c.files.size() * tree.paths.size()) << HierarchyName(hh);
    std::cout << HierarchyName(hh) << ":";
    for (const std::string& f : c.files) std::cout << " " << f;
    std::cout << " (" << c.fields.size() << " values)\n";
    for (const FieldReading& f : c.fields) {
      EXPECT_TRUE(f.within()) << f.cgroup << " " << f.file << " " << f.key << ": files " << f.before << " then "
                              << f.after << ", iterator " << f.source;
      seen[f.cgroup + " " + f.file + " " + f.key] = f.source;
    }
  }
  // The known work is there.
  auto cpu_ns = [&](const std::string& cg) {
    uint64_t sum = 0;
    for (const auto& [key, v] : seen) {
      if (key.rfind(cg + " cpuacct.usage_percpu cpu", 0) == 0) sum += v;
    }
    return sum;
  };
  EXPECT_GE(cpu_ns(tree.busy->path()), 80'000'000u);
  EXPECT_EQ(cpu_ns(tree.idle->path()), 0u);
  // usage_user + usage_sys are sampled at ticks: most of the burner's 80 ms is there.
  const std::string busy = tree.busy->path();
  EXPECT_GE(seen[busy + " cpuacct.usage_user "] + seen[busy + " cpuacct.usage_sys "], 40'000'000u);
  EXPECT_EQ(seen[tree.idle->path() + " cpuacct.usage_user "] + seen[tree.idle->path() + " cpuacct.usage_sys "], 0u);
  EXPECT_GE(cpu_ns(tree.root), cpu_ns(tree.busy->path()));
  EXPECT_GE(seen[tree.memory->path() + " memory.usage_in_bytes "], 32u << 20);
  EXPECT_GE(seen[tree.memory->path() + " memory.max_usage_in_bytes "], 32u << 20);
  EXPECT_EQ(seen[tree.idle->path() + " memory.usage_in_bytes "], 0u);
  EXPECT_TRUE(seen.count(tree.busy->path() + " cpu.stat nr_periods"));
  EXPECT_TRUE(seen.count(tree.memory->path() + " memory.oom_control oom_kill"));
}

// The collector on v1 hierarchies with the walks and without: the same values.
TEST(CgroupStatsIterator, CollectorGivesTheSameV1SnapshotWithAndWithoutIt) {
  STATLET_REQUIRE_ROOT();
  const CgroupHierarchies& h = HostHierarchies();
  if (!h.has(kV1Cpuacct) || !h.has(kV1Memory)) GTEST_SKIP() << "no cpuacct and memory v1 hierarchies here";
  auto probes = LoadCgroupStats();
  ASSERT_TRUE(probes);
  V1Tree tree;
  std::string error;
  ASSERT_TRUE(tree.Build(&error)) << error;

  auto same = [](const Snapshot& a, const Snapshot& b) {
    if (a.cgroups.size() != b.cgroups.size()) return false;
    for (size_t i = 0; i < a.cgroups.size(); i++) {
      const CgroupStats &x = a.cgroups[i], &y = b.cgroups[i];
      if (x.cpu.usage_ns != y.cpu.usage_ns || x.cpu.per_cpu_ns != y.cpu.per_cpu_ns ||
          x.memory.usage_bytes != y.memory.usage_bytes)
        return false;
    }
    return true;
  };
  BothWays both = CollectBothWays(probes->FileSource(), tree.root, same);
  ASSERT_TRUE(both.files.ok()) << both.files.status().ToString();
  ASSERT_TRUE(both.iter.ok()) << both.iter.status().ToString();
  const StatusOr<Snapshot>&a = both.files, &b = both.iter;

  ASSERT_EQ(a->cgroups.size(), tree.paths.size());
  ASSERT_EQ(b->cgroups.size(), tree.paths.size());
  for (size_t i = 0; i < a->cgroups.size(); i++) {
    const CgroupStats &x = a->cgroups[i], &y = b->cgroups[i];
    ASSERT_EQ(x.id.cgroup_path, y.id.cgroup_path);
    EXPECT_EQ(x.cpu.usage_ns, y.cpu.usage_ns) << x.id.cgroup_path;
    EXPECT_EQ(x.cpu.per_cpu_ns, y.cpu.per_cpu_ns) << x.id.cgroup_path;
    EXPECT_EQ(x.cpu.nr_periods, y.cpu.nr_periods) << x.id.cgroup_path;
    EXPECT_EQ(x.cpu.throttled_ns, y.cpu.throttled_ns) << x.id.cgroup_path;
    EXPECT_EQ(x.memory.usage_bytes, y.memory.usage_bytes) << x.id.cgroup_path;
    EXPECT_EQ(x.memory.max_usage_bytes, y.memory.max_usage_bytes) << x.id.cgroup_path;
    EXPECT_EQ(x.memory.failcnt, y.memory.failcnt) << x.id.cgroup_path;
    EXPECT_EQ(x.memory.kernel_bytes, y.memory.kernel_bytes) << x.id.cgroup_path;
    EXPECT_EQ(x.memory.events.oom_kill, y.memory.events.oom_kill) << x.id.cgroup_path;
    EXPECT_EQ(x.memory.working_set_bytes, y.memory.working_set_bytes) << x.id.cgroup_path;
  }
  const CgroupStats* held = b->FindByPath(tree.memory->path());
  ASSERT_NE(held, nullptr);
  EXPECT_GE(held->memory.usage_bytes.value_or(0), 32u << 20);
  EXPECT_TRUE(b->read_errors.empty()) << b->read_errors.front().file << " " << b->read_errors.front().reason;
}

}  // namespace
}  // namespace statlet::testing
