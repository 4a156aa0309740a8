// What a collection reads, on this machine's kernel: the optional process scan only for
// callers that need it (and a cached snapshot without it never answers them), and one
// entry per container and pod when a v1 runtime nests them under different paths in
// different hierarchies.
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "collector/cgroup_files.h"
#include "collector/collector.h"
#include "collector/sampler.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/workloads.h"

namespace statlet {
namespace {

using testing::Child;
using testing::HostHierarchies;
using testing::LiveCgroup;
using testing::UniqueName;

constexpr size_t kTouched = 24u << 20;

// Entries of a /proc directory (this process's fds, its threads).
size_t Entries(const char* dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

std::unique_ptr<Sampler> NewSampler(const std::string& root, bool process_fds) {
  CollectorOptions o;
  o.subtrees = {root};
  o.process_fds = process_fds;
  auto c = Collector::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::make_unique<Sampler>(std::move(*c), nullptr, nullptr) : nullptr;
}

class LiveCollectParts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
    root_ = "/" + UniqueName("statlet-parts");
  }
  std::string root_;
};

TEST_F(LiveCollectParts, TheProcessScanRunsOnlyForCallersThatNeedIt) {
  const std::string id(64, 'd');
  LiveCgroup top(root_);
  LiveCgroup ctr(root_ + "/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1e0/" + id);
  Child sleeper = Child::Sleeper();
  ASSERT_TRUE(ctr.Add(sleeper.pid()));
  auto sampler = NewSampler(root_, true);
  ASSERT_NE(sampler, nullptr);
  const auto hour = std::chrono::hours(1);

  // A caller without fd counts: no scan, and the snapshot says so.
  auto lean = sampler->Get(hour, CollectParts::None());
  ASSERT_TRUE(lean.ok());
  const CgroupStats* c = (*lean)->FindByContainerId(id);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->process.processes, 1u);
  EXPECT_FALSE(c->process.file_descriptors.has_value());
  EXPECT_FALSE((*lean)->parts.Has(CollectParts::kProcessFds));
  // The same caller again is served that snapshot (max-age one hour)…
  auto again = sampler->Get(hour, CollectParts::None());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->sequence, (*lean)->sequence);
  // …but a caller needing fd counts is not: it gets a collection that scanned.
  auto full = sampler->Get(hour, CollectParts::All());
  ASSERT_TRUE(full.ok());
  EXPECT_GT((*full)->sequence, (*lean)->sequence);
  c = (*full)->FindByContainerId(id);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->process.file_descriptors.has_value());
  EXPECT_GE(*c->process.file_descriptors, 3u) << "the sleeper's stdio";
  // That one serves both kinds of caller.
  auto lean_again = sampler->Get(hour, CollectParts::None());
  ASSERT_TRUE(lean_again.ok());
  EXPECT_EQ((*lean_again)->sequence, (*full)->sequence);
  EXPECT_EQ(sampler->stats().collections, 2u);
  EXPECT_EQ(sampler->stats().reuses, 2u);

  // With the scan turned off in the options, no collection would read it: any snapshot
  // answers every caller.
  auto off = NewSampler(root_, false);
  ASSERT_NE(off, nullptr);
  ASSERT_TRUE(off->Get(hour, CollectParts::None()).ok());
  auto reused = off->Get(hour, CollectParts(CollectParts::kProcessFds));
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(off->stats().collections, 1u);
  EXPECT_FALSE((*reused)->FindByContainerId(id)->process.file_descriptors.has_value());
}

// The files only the metric families carry (soft limit, pids.current, pids.events, hugetlb, v2
// memory.events.local) are read for callers that return them, not for the CRI pod stats
// calls; what those calls answer with is in both.
TEST_F(LiveCollectParts, TheDetailFilesAreReadOnlyForCallersThatNeedThem) {
  const std::string id(64, 'a');
  LiveCgroup top(root_);
  LiveCgroup ctr(root_ + "/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1df/" + id);
  Child sleeper = Child::Sleeper();
  ASSERT_TRUE(ctr.Add(sleeper.pid()));
  const CgroupHierarchies& h = HostHierarchies();
  std::vector<const CgroupFileReader*> detail;  // this host's detail readers
  for (const CgroupFileReader* r : BuildReadPlan(h, HugePageSizes("/sys/kernel/mm/hugepages"))) {
    if (r->part == CollectParts::kCgroupDetail) detail.push_back(r);
  }
  if (detail.empty()) GTEST_SKIP() << "this host's read plan has no detail file";
  const bool v1_memory = h.has(kV1Memory) && !h.v2_memory;
  if (v1_memory) {
    ASSERT_TRUE(ctr.Write(kV1Memory, "memory.soft_limit_in_bytes", std::to_string(96u << 20)));
  }
  auto sampler = NewSampler(root_, false);
  ASSERT_NE(sampler, nullptr);

  auto lean = sampler->Get(std::chrono::nanoseconds(0), CollectParts(CollectParts::kNonContainerFiles));
  ASSERT_TRUE(lean.ok());
  auto full = sampler->Get(std::chrono::nanoseconds(0), CollectParts::All());
  ASSERT_TRUE(full.ok());
  ASSERT_GT((*full)->sequence, (*lean)->sequence);
  EXPECT_FALSE((*lean)->parts.Has(CollectParts::kCgroupDetail));
  EXPECT_TRUE((*full)->parts.Has(CollectParts::kCgroupDetail));
  const CgroupStats* l = (*lean)->FindByContainerId(id);
  const CgroupStats* f = (*full)->FindByContainerId(id);
  ASSERT_NE(l, nullptr);
  ASSERT_NE(f, nullptr);
  // Exactly the detail files of every reported cgroup are left out (the tree is the same:
  // nothing was added or removed between the two collections).
  ASSERT_EQ((*lean)->cgroups.size(), (*full)->cgroups.size());
  size_t detail_files = 0;  // that exist for the reported cgroups (a controller the parent
                            // does not enable for its children has no files there)
  for (const CgroupStats& c : (*full)->cgroups) {
    for (const CgroupFileReader* r : detail) {
      detail_files += ::access((h.mount[r->hierarchy] + c.id.cgroup_path + "/" + r->name).c_str(), F_OK) == 0;
    }
  }
  ASSERT_GT(detail_files, 0u);
  // (Limits the first collection read come from memory in the second: files_cached.)
  const auto total = [](const Snapshot& s) { return s.collection.files_read + s.collection.files_cached; };
  EXPECT_EQ(total(**full) - total(**lean), detail_files);
  // What the CRI stats calls answer with is in both.
  for (const CgroupStats* c : {l, f}) {
    EXPECT_TRUE(c->cpu.usage_ns.has_value());
    EXPECT_TRUE(c->memory.usage_bytes.has_value());
    EXPECT_TRUE(c->memory.working_set_bytes.has_value());
    EXPECT_EQ(c->process.processes, 1u);
  }
  if (v1_memory) {
    EXPECT_FALSE(l->memory.soft_limit_bytes.has_value());
    ASSERT_TRUE(f->memory.soft_limit_bytes.has_value());
    EXPECT_EQ(*f->memory.soft_limit_bytes, uint64_t{96} << 20);
  }
  if (h.has(kV1Pids) || h.v2_pids) {
    EXPECT_FALSE(l->process.pids_events_max.has_value());
    EXPECT_TRUE(f->process.pids_events_max.has_value());
    EXPECT_FALSE(l->process.pids_current.has_value());
    ASSERT_TRUE(f->process.pids_current.has_value());
    EXPECT_EQ(*f->process.pids_current, 1u);
    EXPECT_EQ(l->process.pids_max, f->process.pids_max) << "pids.max is a CRI field (pids_limit)";
  }
}

// Files beyond --collector.max-kept-files are opened, read and closed on every collection:
// fewer fds (and their kernel memory) kept, the same files read, the same values.
TEST_F(LiveCollectParts, FilesBeyondTheKeptFileCapAreReadAllTheSame) {
  const std::string id(64, 'b');
  LiveCgroup top(root_);
  LiveCgroup ctr(root_ + "/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1dd/" + id);
  Child sleeper = Child::Sleeper();
  ASSERT_TRUE(ctr.Add(sleeper.pid()));
  ASSERT_TRUE(ctr.SetMemoryLimit(uint64_t{200} << 20));
  auto collect = [&](size_t max_kept) {
    CollectorOptions o;
    o.subtrees = {root_};
    o.max_kept_files = max_kept;
    auto c = Collector::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    StatusOr<Snapshot> first = (*c)->Collect(CollectParts::All());
    EXPECT_TRUE(first.ok());
    StatusOr<Snapshot> second = (*c)->Collect(CollectParts::All());  // from kept and reopened files
    EXPECT_TRUE(second.ok());
    return std::move(*second);
  };
  constexpr size_t kCap = 7;
  const Snapshot capped = collect(kCap);
  const Snapshot kept = collect(CollectorOptions::kDefaultMaxKeptFiles);
  EXPECT_EQ(capped.collection.fds_kept, kCap);
  EXPECT_GT(kept.collection.fds_kept, 3 * kCap) << "every file of the five cgroups is kept under the default";
  EXPECT_EQ(capped.collection.files_read, kept.collection.files_read);
  ASSERT_EQ(capped.cgroups.size(), kept.cgroups.size());
  EXPECT_TRUE(capped.read_errors.empty());
  const CgroupStats* a = capped.FindByContainerId(id);
  const CgroupStats* b = kept.FindByContainerId(id);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->memory.max_bytes, uint64_t{200} << 20);
  EXPECT_EQ(a->memory.max_bytes, b->memory.max_bytes);
  EXPECT_EQ(a->process.processes, 1u);
  EXPECT_EQ(a->process.processes, b->process.processes);
  EXPECT_EQ(a->process.pids_max, b->process.pids_max);
}

// The files beyond the cap are opened from their cgroup's directory, held O_PATH (no
// seq_file buffer), not by a walk from the hierarchy root: one directory fd per cgroup and
// hierarchy, closed with the cgroup; the values are the same as through kept fds.
TEST_F(LiveCollectParts, FilesBeyondTheCapAreOpenedFromTheirDirectory) {
  auto open_fds = [] { return Entries("/proc/self/fd"); };
  auto directories = [] {
    size_t n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode)) n++;
      }
      closedir(d);
    }
    return n;
  };
  const std::string id(64, 'c');
  LiveCgroup top(root_);
  LiveCgroup ctr(root_ + "/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1de/" + id);
  Child sleeper = Child::Sleeper();
  ASSERT_TRUE(ctr.Add(sleeper.pid()));
  const size_t fds_before = open_fds(), dirs_before = directories();
  CollectorOptions o;
  o.subtrees = {root_};
  o.max_kept_files = 0;  // every file opened on every collection
  o.watch_limits = false;
  auto c = Collector::Create(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const size_t discovery_dirs = directories() - dirs_before;
  StatusOr<Snapshot> first = (*c)->Collect(CollectParts::None());
  ASSERT_TRUE(first.ok());
  StatusOr<Snapshot> second = (*c)->Collect(CollectParts::None());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->collection.fds_kept, 0u);
  EXPECT_TRUE(second->read_errors.empty());
  // At most one per cgroup directory of the subtree in each hierarchy, whatever discovery keeps.
  const size_t held = directories() - dirs_before - discovery_dirs;
  std::function<size_t(const std::string&)> count = [&](const std::string& dir) {
    size_t n = 1;
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_type == DT_DIR && e->d_name[0] != '.') n += count(dir + "/" + e->d_name);
      }
      closedir(d);
    }
    return n;
  };
  size_t cgroup_dirs = 0;
  for (int h = 0; h < kNumHierarchies; h++) {
    const std::string& mount = HostHierarchies().mount[h];
    if (!mount.empty() && access((mount + root_).c_str(), F_OK) == 0) cgroup_dirs += count(mount + root_);
  }
  EXPECT_GT(held, 0u);
  EXPECT_LE(held, cgroup_dirs);
  const CgroupStats* s = second->FindByContainerId(id);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->process.processes, 1u);
  EXPECT_TRUE(s->memory.usage_bytes.has_value() || s->cpu.usage_ns.has_value());
  c->reset();
  EXPECT_EQ(open_fds(), fds_before) << "the collector closed every fd it held";
}

// The container calls read the files of containers alone: the pod is listed with its
// processes and no file value, the cgroups above it (the QoS tier, the subtree root) not at
// all. A pod
// call after them reads the pod again, and its CPU rate is taken against the last
// collection that read it.
TEST_F(LiveCollectParts, TheContainerCallsReadNoFileOfAnyOtherCgroup) {
  const std::string uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1e3";
  const std::string id(64, '7');
  LiveCgroup top(root_);
  LiveCgroup ctr(root_ + "/kubepods/burstable/pod" + uid + "/" + id);
  Child sleeper = Child::Sleeper();
  ASSERT_TRUE(ctr.Add(sleeper.pid()));
  auto sampler = NewSampler(root_, false);
  ASSERT_NE(sampler, nullptr);
  const auto now = std::chrono::nanoseconds(0);
  const auto pod_of = [&](const Snapshot& s) -> const CgroupStats* {
    for (const auto& c : s.cgroups) {
      if (c.id.kind == CgroupKind::kPod && c.id.pod_uid == uid) return &c;
    }
    return nullptr;
  };

  auto full = sampler->Get(now, CollectParts::All());
  ASSERT_TRUE(full.ok());
  const CgroupStats* full_pod = pod_of(**full);
  ASSERT_NE(full_pod, nullptr);
  ASSERT_TRUE(full_pod->cpu.usage_ns.has_value());
  ASSERT_TRUE(full_pod->memory.usage_bytes.has_value());

  // A burner in the container between the collections: the pod's CPU time moves.
  Child burner([] {
    testing::BurnCpu(50'000'000);
    return uint64_t{0};
  });
  ASSERT_TRUE(burner.StartIn(ctr));
  ASSERT_EQ(burner.Result(), 0u);

  auto lean = sampler->Get(now, CollectParts::None());
  ASSERT_TRUE(lean.ok());
  EXPECT_FALSE((*lean)->parts.Has(CollectParts::kNonContainerFiles));
  // Pods and containers only: the cgroups above them are neither read nor listed.
  size_t pods_and_containers = 0;
  for (const auto& c : (*full)->cgroups) {
    if (c.id.kind == CgroupKind::kPod || c.id.kind == CgroupKind::kContainer) ++pods_and_containers;
  }
  ASSERT_EQ(pods_and_containers, 2u);
  ASSERT_EQ((*lean)->cgroups.size(), pods_and_containers) << "every pod and container is listed";
  ASSERT_GT((*full)->cgroups.size(), pods_and_containers) << "the full one lists the cgroups above them";
  EXPECT_LT((*lean)->collection.files_read + (*lean)->collection.files_cached,
            (*full)->collection.files_read + (*full)->collection.files_cached);
  size_t containers = 0;
  for (const auto& c : (*lean)->cgroups) {
    if (c.id.kind == CgroupKind::kContainer) {
      ++containers;
      EXPECT_TRUE(c.cpu.usage_ns.has_value()) << c.id.cgroup_path;
      EXPECT_TRUE(c.memory.usage_bytes.has_value()) << c.id.cgroup_path;
      continue;
    }
    EXPECT_FALSE(c.cpu.usage_ns.has_value()) << c.id.cgroup_path << " is no container";
    EXPECT_FALSE(c.memory.usage_bytes.has_value()) << c.id.cgroup_path;
    EXPECT_FALSE(c.memory.max_bytes.has_value()) << c.id.cgroup_path;
    EXPECT_FALSE(c.cpu.usage_nano_cores.has_value()) << c.id.cgroup_path;
  }
  EXPECT_EQ(containers, 1u);
  const CgroupStats* lean_pod = pod_of(**lean);
  ASSERT_NE(lean_pod, nullptr);
  EXPECT_EQ(lean_pod->process.processes, 2u) << "the sleeper and the burner, counted without reading the pod's files";
  const CgroupStats* lean_ctr = (*lean)->FindByContainerId(id);
  ASSERT_NE(lean_ctr, nullptr);
  EXPECT_GE(*lean_ctr->cpu.usage_ns, *(*full)->FindByContainerId(id)->cpu.usage_ns + 40'000'000u);
  EXPECT_TRUE(lean_ctr->cpu.usage_nano_cores.has_value()) << "a container's rate, against the full collection";

  auto pods = sampler->Get(now, CollectParts(CollectParts::kNonContainerFiles));
  ASSERT_TRUE(pods.ok());
  const CgroupStats* pod = pod_of(**pods);
  ASSERT_NE(pod, nullptr);
  ASSERT_TRUE(pod->cpu.usage_ns.has_value());
  ASSERT_TRUE(pod->cpu.usage_nano_cores.has_value()) << "taken against the last collection that read the pod";
  const uint64_t used = *pod->cpu.usage_ns - *full_pod->cpu.usage_ns;
  EXPECT_GE(used, 40'000'000u);
  const double dt = static_cast<double>((*pods)->monotonic_ns - (*full)->monotonic_ns);
  EXPECT_EQ(*pod->cpu.usage_nano_cores, static_cast<uint64_t>(static_cast<double>(used) * 1e9 / dt));
}

// Two reading threads read what one reads: the same cgroups, files and values, the same fds
// kept; the helper thread lives as long as the collector.
TEST_F(LiveCollectParts, TwoReadingThreadsReadWhatOneReads) {
  auto tasks = [] { return Entries("/proc/self/task"); };
  LiveCgroup top(root_);
  struct LastFirst {  // a pod's directory goes after its containers'
    std::vector<std::unique_ptr<LiveCgroup>> v;
    ~LastFirst() {
      while (!v.empty()) v.pop_back();
    }
  } made;
  auto& cgroups = made.v;
  std::vector<Child> sleepers;
  sleepers.reserve(24);
  std::vector<std::string> ids;
  // 6 pods of 4 containers: 24 containers, 33 cgroups with the tiers (above kMinParallelCgroups).
  for (int p = 0; p < 6; ++p) {
    const std::string pod =
        root_ + "/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1" + std::to_string(10 + p);
    for (int c = 0; c < 4; ++c) {
      ids.push_back(std::string(63, 'a' + static_cast<char>(p)) + std::to_string(c));
      cgroups.push_back(std::make_unique<LiveCgroup>(pod + "/" + ids.back()));
      ASSERT_TRUE(cgroups.back()->ok()) << cgroups.back()->error();
      ASSERT_TRUE(cgroups.back()->SetMemoryLimit((uint64_t{64} + static_cast<uint64_t>(ids.size())) << 20));
      sleepers.push_back(Child::Sleeper());
      ASSERT_TRUE(cgroups.back()->Add(sleepers.back().pid()));
    }
  }
  static_assert(6 * 4 > CollectorOptions::kMinParallelCgroups);
  auto collect = [&](size_t threads, size_t* helper_threads) {
    CollectorOptions o;
    o.subtrees = {root_};
    o.read_threads = threads;
    o.max_kept_files = 40;  // some files kept, the rest opened each time, on both threads
    const size_t before = tasks();
    auto c = Collector::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    *helper_threads = tasks() - before;
    EXPECT_TRUE((*c)->Collect(CollectParts::All()).ok());
    StatusOr<Snapshot> s = (*c)->Collect(CollectParts::All());
    EXPECT_TRUE(s.ok());
    c->reset();
    EXPECT_EQ(tasks(), before) << "the helper stops with the collector";
    return std::move(*s);
  };
  size_t one_helpers = 0, two_helpers = 0;
  const Snapshot one = collect(1, &one_helpers);
  const Snapshot two = collect(2, &two_helpers);
  EXPECT_EQ(one_helpers, 0u);
  EXPECT_EQ(two_helpers, 1u);
  EXPECT_TRUE(one.read_errors.empty());
  EXPECT_TRUE(two.read_errors.empty());
  EXPECT_EQ(one.collection.files_read, two.collection.files_read);
  EXPECT_EQ(one.collection.files_cached, two.collection.files_cached);
  EXPECT_EQ(one.collection.fds_kept, two.collection.fds_kept);
  ASSERT_EQ(one.cgroups.size(), two.cgroups.size());
  for (size_t i = 0; i < one.cgroups.size(); ++i) {
    const CgroupStats& a = one.cgroups[i];
    const CgroupStats& b = two.cgroups[i];
    ASSERT_EQ(a.id.cgroup_path, b.id.cgroup_path) << "the same order";
    EXPECT_EQ(a.id.kind, b.id.kind);
    EXPECT_EQ(a.id.parent_path, b.id.parent_path);
    EXPECT_EQ(a.process.processes, b.process.processes) << a.id.cgroup_path;
    EXPECT_EQ(a.memory.max_bytes.has_value(), b.memory.max_bytes.has_value()) << a.id.cgroup_path;
    EXPECT_EQ(a.memory.max_bytes, b.memory.max_bytes) << a.id.cgroup_path;
    EXPECT_EQ(a.memory.usage_bytes.has_value(), b.memory.usage_bytes.has_value()) << a.id.cgroup_path;
    EXPECT_EQ(a.cpu.usage_ns.has_value(), b.cpu.usage_ns.has_value()) << a.id.cgroup_path;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const CgroupStats* c = two.FindByContainerId(ids[i]);
    ASSERT_NE(c, nullptr) << ids[i];
    EXPECT_EQ(c->process.processes, 1u);
    EXPECT_EQ(c->memory.max_bytes, (uint64_t{64} + i + 1) << 20) << ids[i];
  }
}

// Callers arriving during a collection that lacks their part wait for it and are served by
// one further collection holding the union of what they need.
TEST_F(LiveCollectParts, ConcurrentCallersGetTheUnionOfTheirParts) {
  const std::string id(64, 'e');
  LiveCgroup top(root_);
  LiveCgroup ctr(root_ + "/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1e1/" + id);
  Child sleeper = Child::Sleeper();
  ASSERT_TRUE(ctr.Add(sleeper.pid()));
  auto sampler = NewSampler(root_, true);
  ASSERT_NE(sampler, nullptr);
  constexpr int kCallers = 8;
  std::vector<std::thread> threads;
  std::vector<SnapshotPtr> got(kCallers);
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      auto r = sampler->Get(std::chrono::nanoseconds(0), i % 2 ? CollectParts::All() : CollectParts::None());
      if (r.ok()) got[i] = *r;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kCallers; ++i) {
    ASSERT_NE(got[i], nullptr) << i;
    const CgroupStats* c = got[i]->FindByContainerId(id);
    ASSERT_NE(c, nullptr);
    if (i % 2) {
      EXPECT_TRUE(c->process.file_descriptors.has_value()) << "caller " << i << " needs fd counts";
    }
  }
  // Every caller either ran a collection or joined one (waiting out a lean one first).
  const SamplerStats st = sampler->stats();
  EXPECT_EQ(st.collections + st.joins, static_cast<uint64_t>(kCallers));
}

// A runtime given a relative cgroup parent on v1 creates a container's directories under
// its own cgroup in each hierarchy: here cpu, cpuacct and memory under
// <root>/runtime.slice/kubepods/…, the other hierarchies under <root>/kubepods/… (where the
// kubelet made the pod in every hierarchy). statlet reports one container and one pod,
// each with the values of every hierarchy.
TEST_F(LiveCollectParts, AContainerNestedDifferentlyPerHierarchyIsOneEntry) {
  const CgroupHierarchies& h = HostHierarchies();
  if (!h.has(kV1Cpuacct) || !h.has(kV1Memory) || !h.has(kV1Pids)) GTEST_SKIP() << "needs v1 cpuacct, memory, pids";
  const std::string uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1e2";
  const std::string id(64, 'f');
  LiveCgroup top(root_);
  LiveCgroup pod(root_ + "/kubepods/besteffort/pod" + uid);
  std::vector<Hierarchy> runtime_side = {kV1Cpuacct, kV1Memory}, kubelet_side = {kV1Pids};
  if (h.has(kV1Cpu) && h.mount[kV1Cpu] != h.mount[kV1Cpuacct]) runtime_side.push_back(kV1Cpu);
  if (h.has(kV1Blkio)) kubelet_side.push_back(kV1Blkio);
  if (h.has(kUnified)) kubelet_side.push_back(kUnified);
  LiveCgroup runtime_pod(root_ + "/runtime.slice/kubepods/besteffort/pod" + uid, runtime_side);
  LiveCgroup ctr_runtime(runtime_pod.path() + "/" + id, runtime_side);
  LiveCgroup ctr_kubelet(pod.path() + "/" + id, kubelet_side);
  ASSERT_TRUE(ctr_runtime.ok() && ctr_kubelet.ok()) << ctr_runtime.error() << ctr_kubelet.error();
  Child work([] {
    char* p = static_cast<char*>(mmap(nullptr, kTouched, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) return uint64_t{1};
    std::memset(p, 1, kTouched);
    testing::BurnCpu(100'000'000);
    return uint64_t{0};
  });
  ASSERT_TRUE(ctr_kubelet.Add(work.pid()));
  ASSERT_TRUE(work.StartIn(ctr_runtime));
  ASSERT_EQ(work.Result(), 0u);

  auto sampler = NewSampler(root_, false);
  ASSERT_NE(sampler, nullptr);
  const int64_t cpu_before = ctr_runtime.CpuUsageNs();
  auto snap = sampler->Get(std::chrono::nanoseconds(0));
  const int64_t cpu_after = ctr_runtime.CpuUsageNs();
  ASSERT_TRUE(snap.ok());
  int containers = 0, pods = 0;
  const CgroupStats* c = nullptr;
  const CgroupStats* p = nullptr;
  for (const auto& cg : (*snap)->cgroups) {
    if (cg.id.container_id == id) {
      ++containers;
      c = &cg;
    }
    if (cg.id.kind == CgroupKind::kPod && cg.id.pod_uid == uid) {
      ++pods;
      p = &cg;
    }
  }
  ASSERT_EQ(containers, 1);
  ASSERT_EQ(pods, 1);
  EXPECT_EQ((*snap)->collection.cgroups_merged, 2u) << "the runtime-side container and pod directories";
  // The pod the container hangs under is the pod's entry.
  EXPECT_EQ(c->id.parent_path, p->id.cgroup_path);
  // CPU and memory from the runtime's side…
  ASSERT_TRUE(c->cpu.usage_ns.has_value());
  EXPECT_GE(static_cast<int64_t>(*c->cpu.usage_ns), cpu_before);
  EXPECT_LE(static_cast<int64_t>(*c->cpu.usage_ns), cpu_after);
  ASSERT_TRUE(c->memory.usage_bytes.has_value());
  EXPECT_GE(*c->memory.usage_bytes, kTouched);
  const uint64_t v1_usage = std::stoull(ctr_runtime.Read(kV1Memory, "memory.usage_in_bytes"));
  EXPECT_NEAR(static_cast<double>(*c->memory.usage_bytes), static_cast<double>(v1_usage), 1 << 20);
  // …the pids controller's from the kubelet's side.
  ASSERT_TRUE(c->process.pids_current.has_value());
  EXPECT_EQ(*c->process.pids_current, 1u);
  EXPECT_EQ(c->process.processes, 1u);
}

}  // namespace
}  // namespace statlet
