// The collector on this machine's real kernel: real cgroups (v1 controllers and the
// unified cgroup2 of this hybrid host), real processes doing a known amount of work.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "collector/collector.h"
#include "collector/kept_file.h"
#include "collector/sampler.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/wait_for.h"
#include "tests/support/workloads.h"

namespace statlet {
namespace {

using std::chrono::milliseconds;
using testing::Child;
using testing::HostHierarchies;
using testing::LiveCgroup;
using testing::UniqueName;
using testing::WaitFor;

class LiveCollector : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
    root_ = "/" + UniqueName("statlet-live");
  }
  std::unique_ptr<Sampler> NewSampler(bool include_empty = false) {
    CollectorOptions o;
    o.subtrees = {root_};
    o.include_empty = include_empty;
    auto c = Collector::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::make_unique<Sampler>(std::move(*c), nullptr, nullptr);
  }
  SnapshotPtr Get(Sampler* s) {
    auto r = s->Get(std::chrono::nanoseconds(0));
    EXPECT_TRUE(r.ok());
    return *r;
  }
  std::string root_;
};

TEST_F(LiveCollector, CpuTimeMatchesTheBurnedTime) {
  LiveCgroup top(root_);
  LiveCgroup cg(root_ + "/burner");
  constexpr uint64_t kBurn = 400'000'000;  // 0.4 s of CPU
  // The burner reports the kernel's own account of its process (getrusage): how much of
  // the burn was user time depends on this machine (a clock read may be a system call),
  // so the split is checked against the kernel, never against an expectation.
  Child burner([] {
    testing::PinToCpu(1);  // the per-CPU split must follow
    testing::BurnCpu(kBurn);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const uint64_t user_us = uint64_t(ru.ru_utime.tv_sec) * 1000000 + ru.ru_utime.tv_usec;
    const uint64_t sys_us = uint64_t(ru.ru_stime.tv_sec) * 1000000 + ru.ru_stime.tv_usec;
    return (user_us << 32) | sys_us;
  });
  ASSERT_TRUE(burner.StartIn(cg));
  std::optional<uint64_t> rusage = burner.Result();
  ASSERT_TRUE(rusage.has_value());
  const double task_user = double(*rusage >> 32) * 1000, task_sys = double(*rusage & 0xffffffff) * 1000;
  // The burner sleeps once it reported: the cgroup is idle from here on: the kernel's figures read before and after the
  // collection bound what statlet may report (they differ only if something still ran).
  const int64_t usage_before = cg.CpuUsageNs();
  const LiveCgroup::CpuSplit split_before = cg.CpuSplitNs();
  auto sampler = NewSampler();
  SnapshotPtr s = Get(sampler.get());
  const int64_t usage_after = cg.CpuUsageNs();
  const LiveCgroup::CpuSplit split_after = cg.CpuSplitNs();
  ASSERT_GT(usage_before, 0);
  ASSERT_GE(split_before.user_ns, 0);
  const CgroupStats* c = s->FindByPath(cg.path());
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->cpu.usage_ns.has_value());
  ASSERT_TRUE(c->cpu.user_ns && c->cpu.system_ns);
  // statlet reports exactly the kernel's numbers, in ns.
  EXPECT_GE(int64_t(*c->cpu.usage_ns), usage_before);
  EXPECT_LE(int64_t(*c->cpu.usage_ns), usage_after);
  EXPECT_GE(int64_t(*c->cpu.user_ns), split_before.user_ns);
  EXPECT_LE(int64_t(*c->cpu.user_ns), split_after.user_ns);
  EXPECT_GE(int64_t(*c->cpu.system_ns), split_before.system_ns);
  EXPECT_LE(int64_t(*c->cpu.system_ns), split_after.system_ns);
  const double usage = double(*c->cpu.usage_ns);
  // The burn itself: at least what was asked, plus start-up (a few ms).
  EXPECT_GE(usage, double(kBurn));
  EXPECT_LE(usage, double(kBurn) * 1.10);
  // The cgroup's split and the process's own split come from the same scheduler ticks,
  // each scaled to the precise run time; they differ by the ticks after getrusage (the
  // result's write) and the tick's resolution. Allow 3 ticks at the coarsest HZ (100) plus 2 %.
  const double task_total = task_user + task_sys;
  ASSERT_GT(task_total, 0);
  const double tolerance = 3 * 10e6 / usage + 0.02;
  EXPECT_NEAR(double(*c->cpu.user_ns) / usage, task_user / task_total, tolerance)
      << "user " << *c->cpu.user_ns << " system " << *c->cpu.system_ns << " vs the burner's own user " << task_user
      << " system " << task_sys;
  ASSERT_GE(c->cpu.per_cpu_ns.size(), 2u);
  EXPECT_GE(double(c->cpu.per_cpu_ns[1]), double(kBurn));  // pinned: the burn is on CPU 1
  EXPECT_EQ(c->process.processes.value_or(0), 1u);
}

TEST_F(LiveCollector, UsageNanoCoresFollowsTheScheduler) {
  LiveCgroup top(root_);
  LiveCgroup cg(root_ + "/spinner");
  Child spinner(testing::SpinForever);
  ASSERT_TRUE(spinner.StartIn(cg));
  auto sampler = NewSampler();
  uint64_t cpu0 = testing::ProcessCpuNs(spinner.pid());
  SnapshotPtr a = Get(sampler.get());
  // A sampling window of CPU time, measured by the scheduler's own account: a second, so
  // that the reads outside the snapshots and the counters' tick steps stay well inside 10 %.
  ASSERT_TRUE(
      WaitFor([&] { return testing::ProcessCpuNs(spinner.pid()) - cpu0 > 1'000'000'000; }, milliseconds(30000)));
  SnapshotPtr b = Get(sampler.get());
  uint64_t cpu1 = testing::ProcessCpuNs(spinner.pid());
  const CgroupStats* c = b->FindByPath(cg.path());
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->cpu.usage_nano_cores.has_value());
  double expected = double(cpu1 - cpu0) * 1e9 / double(b->monotonic_ns - a->monotonic_ns);
  EXPECT_NEAR(double(*c->cpu.usage_nano_cores), expected, expected * 0.10);
  EXPECT_FALSE(a->FindByPath(cg.path())->cpu.usage_nano_cores.has_value());  // no previous sample
}

TEST_F(LiveCollector, MemoryOfTouchedPages) {
  if (!HostHierarchies().has(kV1Memory) && !HostHierarchies().v2_memory) GTEST_SKIP() << "no memory controller";
  LiveCgroup top(root_);
  LiveCgroup cg(root_ + "/alloc");
  constexpr size_t kBytes = 64 << 20;
  Child alloc([] {
    char* p = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    for (size_t i = 0; i < kBytes; i += 4096) p[i] = 1;
    return uint64_t{kBytes};
  });
  ASSERT_TRUE(cg.SetMemoryLimit(256 << 20));
  ASSERT_TRUE(alloc.StartIn(cg));
  ASSERT_TRUE(alloc.Result());
  auto sampler = NewSampler();
  SnapshotPtr s = Get(sampler.get());
  const CgroupStats* c = s->FindByPath(cg.path());
  ASSERT_NE(c, nullptr);
  const MemoryStats& m = c->memory;
  ASSERT_TRUE(m.usage_bytes && m.rss_bytes && m.working_set_bytes && m.max_usage_bytes && m.max_bytes);
  EXPECT_GE(*m.usage_bytes, kBytes);
  EXPECT_LE(*m.usage_bytes, kBytes + (16 << 20));
  EXPECT_GE(*m.rss_bytes, kBytes);
  EXPECT_LE(*m.rss_bytes, kBytes + (8 << 20));
  EXPECT_GE(*m.working_set_bytes, kBytes);
  EXPECT_GE(*m.max_usage_bytes, *m.usage_bytes);
  EXPECT_EQ(*m.max_bytes, uint64_t{256} << 20);
  ASSERT_TRUE(m.pgfault.has_value());
  EXPECT_GE(*m.pgfault, kBytes / 4096);
}

TEST_F(LiveCollector, OomKillIsCounted) {
  if (!HostHierarchies().has(kV1Memory) && !HostHierarchies().v2_memory) GTEST_SKIP() << "no memory controller";
  LiveCgroup top(root_);
  LiveCgroup cg(root_ + "/oom");
  ASSERT_TRUE(cg.SetMemoryLimit(32 << 20));
  Child victim(
      [] {
        constexpr size_t kBytes = 128 << 20;
        char* p = static_cast<char*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        for (size_t i = 0; i < kBytes; i += 4096) p[i] = 1;
        return uint64_t{0};
      },
      Child::kExits);
  ASSERT_TRUE(victim.StartIn(cg));
  const int status = victim.Wait(milliseconds(60000));
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the allocator was expected to be OOM-killed";
  auto sampler = NewSampler(/*include_empty=*/true);
  SnapshotPtr s = Get(sampler.get());
  const CgroupStats* c = s->FindByPath(cg.path());
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->memory.events.oom_kill.has_value());
  EXPECT_EQ(*c->memory.events.oom_kill, 1u);
  ASSERT_TRUE(c->memory.failcnt.has_value());
  EXPECT_GT(*c->memory.failcnt, 0u);
}

TEST_F(LiveCollector, ProcessesAndThreadsAreExact) {
  LiveCgroup top(root_);
  LiveCgroup cg(root_ + "/forker");
  bool pids = HostHierarchies().pids() != kNumHierarchies;
  if (pids) {
    ASSERT_TRUE(cg.Write(HostHierarchies().pids(), "pids.max", "13"));
  }
  Child forker([] {
    for (int i = 0; i < 9; ++i) {
      if (fork() == 0) {
        while (true) pause();
      }
    }
    for (int i = 0; i < 3; ++i)
      std::thread([] {
        while (true) pause();
      }).detach();
    // 1 + 9 processes, 3 more threads: 13 tasks = pids.max; one more fork must fail.
    uint64_t refused = 0;
    for (int tries = 0; tries < 100; ++tries) {
      pid_t p = fork();
      if (p == 0) _exit(0);
      if (p < 0) {
        refused = 1;
        break;
      }
      waitpid(p, nullptr, 0);  // a fork that slipped in (an earlier exit): reap and retry
    }
    return refused;
  });
  ASSERT_TRUE(forker.StartIn(cg));
  std::optional<uint64_t> refused = forker.Result();
  ASSERT_TRUE(refused.has_value());
  auto sampler = NewSampler();
  SnapshotPtr s = Get(sampler.get());
  const CgroupStats* c = s->FindByPath(cg.path());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(*c->process.processes, 10u);
  EXPECT_EQ(*c->process.threads, 13u);
  if (pids) {
    EXPECT_EQ(*refused, 1u);
    EXPECT_EQ(*c->process.pids_current, 13u);
    EXPECT_EQ(*c->process.pids_max, 13u);
    ASSERT_TRUE(c->process.pids_events_max.has_value());
    EXPECT_GE(*c->process.pids_events_max, 1u);
  }
  // The parent's processes include its child's (subtree totals).
  const CgroupStats* parent = s->FindByPath(top.path());
  ASSERT_NE(parent, nullptr);
  EXPECT_EQ(*parent->process.processes, 10u);
}

TEST_F(LiveCollector, EmptyCgroupsAreOnlyListedOnRequest) {
  LiveCgroup top(root_);
  LiveCgroup empty(root_ + "/empty");
  auto sampler = NewSampler();
  SnapshotPtr s = Get(sampler.get());
  EXPECT_EQ(s->FindByPath(empty.path()), nullptr);
  auto all = NewSampler(true);
  SnapshotPtr s2 = Get(all.get());
  const CgroupStats* e = s2->FindByPath(empty.path());
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->populated);
  EXPECT_EQ(*e->process.processes, 0u);
}

TEST_F(LiveCollector, KubeletLayoutOnTheRealKernel) {
  const std::string id(64, 'e');
  const std::string uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  std::string kube = root_ + "/kubepods";
  LiveCgroup top(root_);
  LiveCgroup k(kube);
  LiveCgroup q(kube + "/burstable");
  LiveCgroup pod(kube + "/burstable/pod" + uid);
  LiveCgroup ctr(pod.path() + "/" + id);
  LiveCgroup pause_ctr(pod.path() + "/" + std::string(64, 'f'));
  Child a([] { return uint64_t{0}; });
  Child b([] { return uint64_t{0}; });
  ASSERT_TRUE(a.StartIn(ctr));
  ASSERT_TRUE(b.StartIn(pause_ctr));
  ASSERT_TRUE(a.Result());
  ASSERT_TRUE(b.Result());
  auto sampler = NewSampler();
  SnapshotPtr s = Get(sampler.get());
  const CgroupStats* c = s->FindByContainerId(id);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->id.kind, CgroupKind::kContainer);
  EXPECT_EQ(c->id.pod_uid, uid);
  EXPECT_EQ(c->id.qos, QosClass::kBurstable);
  if (HostHierarchies().has(kUnified)) {
    struct stat st;
    ASSERT_EQ(stat(ctr.Dir(kUnified).c_str(), &st), 0);
    EXPECT_EQ(c->id.cgroup_id, st.st_ino);  // what bpf_get_current_cgroup_id() returns
  }
  const CgroupStats* p = s->FindByPath(pod.path());
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->id.kind, CgroupKind::kPod);
  EXPECT_EQ(*p->process.processes, 2u);
  const CgroupStats* qos = s->FindByPath(q.path());
  ASSERT_NE(qos, nullptr);
  EXPECT_EQ(qos->id.kind, CgroupKind::kQos);
}

TEST_F(LiveCollector, ContainersComeAndGoBetweenCollections) {
  LiveCgroup top(root_);
  auto sampler = NewSampler();
  std::string path;
  {
    LiveCgroup cg(root_ + "/short-lived");
    path = cg.path();
    Child c([] { return uint64_t{0}; });
    ASSERT_TRUE(c.StartIn(cg));
    ASSERT_TRUE(c.Result());
    SnapshotPtr s = Get(sampler.get());
    ASSERT_NE(s->FindByPath(path), nullptr);
    EXPECT_GT(s->collection.fds_kept, 0u);
  }  // killed and removed
  SnapshotPtr s = Get(sampler.get());
  EXPECT_EQ(s->FindByPath(path), nullptr);
  EXPECT_TRUE(s->read_errors.empty());
}

TEST_F(LiveCollector, RemovedPodsAndContainersLeaveTheNextSnapshot) {
  // Kubernetes cgroups are reported even when empty: their removal (in every hierarchy, one
  // inotify event each) must take them out of the next snapshot.
  const std::string uid = "11111111-2222-4333-8444-555555555555";
  LiveCgroup top(root_);
  LiveCgroup k(root_ + "/kubepods");
  LiveCgroup q(k.path() + "/besteffort");
  auto sampler = NewSampler();
  std::string pod_path, ctr_path;
  {
    LiveCgroup pod(q.path() + "/pod" + uid);
    LiveCgroup ctr(pod.path() + "/" + std::string(64, 'a'));
    pod_path = pod.path();
    ctr_path = ctr.path();
    Child c([] { return uint64_t{0}; });
    ASSERT_TRUE(c.StartIn(ctr));
    ASSERT_TRUE(c.Result());
    SnapshotPtr s = Get(sampler.get());
    ASSERT_NE(s->FindByPath(ctr_path), nullptr);
    ASSERT_NE(s->FindByPath(pod_path), nullptr);
    c.Kill();
    ASSERT_TRUE(
        WaitFor([&] { return ctr.Read(HostHierarchies().has(kUnified) ? kUnified : kV1Cpu, "cgroup.procs").empty(); },
                milliseconds(5000)));
    SnapshotPtr empty = Get(sampler.get());
    ASSERT_NE(empty->FindByPath(ctr_path), nullptr);  // empty, still there: still reported
  }                                                   // removed in every hierarchy
  SnapshotPtr s = Get(sampler.get());
  EXPECT_EQ(s->FindByPath(ctr_path), nullptr);
  EXPECT_EQ(s->FindByPath(pod_path), nullptr);
  EXPECT_NE(s->FindByPath(q.path()), nullptr);
  EXPECT_TRUE(s->read_errors.empty());
}

TEST_F(LiveCollector, SubtreeCreatedAfterStartIsPickedUp) {
  // statlet may start before the kubelet creates /kubepods.
  LiveCgroup top(root_);
  CollectorOptions o;
  o.subtrees = {root_ + "/later"};
  auto col = Collector::Create(o);
  ASSERT_TRUE(col.ok());
  auto first = (*col)->Collect();
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->cgroups.empty());
  for (int round = 0; round < 2; ++round) {
    std::string child;
    {
      LiveCgroup later(root_ + "/later");
      LiveCgroup c(later.path() + "/c");
      child = c.path();
      Child p([] { return uint64_t{0}; });
      ASSERT_TRUE(p.StartIn(c));
      ASSERT_TRUE(p.Result());
      auto s = (*col)->Collect();
      ASSERT_TRUE(s.ok());
      EXPECT_NE(s->FindByPath(child), nullptr) << "round " << round;
    }
    auto s = (*col)->Collect();
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->FindByPath(child), nullptr) << "round " << round;
    EXPECT_EQ(s->collection.cgroups_tracked, 0u) << "round " << round;
  }
}

TEST(KeptFileLive, RemovedCgroupAnswersGone) {
  if (geteuid() != 0) GTEST_SKIP();
  const auto& h = HostHierarchies();
  Hierarchy hier = h.has(kUnified) ? kUnified : h.cpu();
  LiveCgroup cg("/" + UniqueName("statlet-kept"), {hier});
  ASSERT_TRUE(cg.ok()) << cg.error();
  const std::string dir = cg.Dir(hier);
  KeptFile f;
  ReadBuffer buf;
  int err = 0;
  ASSERT_EQ(f.Read(AT_FDCWD, dir, "cgroup.procs", nullptr, &buf, &err), ReadOutcome::kOk);
  ASSERT_TRUE(f.is_open());
  cg.Destroy();
  ASSERT_NE(access(dir.c_str(), F_OK), 0);
  EXPECT_EQ(f.Read(AT_FDCWD, dir, "cgroup.procs", nullptr, &buf, &err), ReadOutcome::kGone);
}

}  // namespace
}  // namespace statlet
