// The v2 readers and discovery on trees built from real recorded v2 contents, in both
// kubelet cgroup-driver layouts, with a multi-container pod and its pause container.
#include <sys/stat.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "collector/collector.h"
#include "collector/sampler.h"
#include "tests/collector/fixture_tree.h"

namespace statlet {
namespace {

using testing::LoadRecordedCgroups;
using testing::MakeDirs;
using testing::RecordedCgroups;
using testing::TempDir;
using testing::WriteFile;

const char* kFixture = STATLET_SOURCE_DIR "/tests/fixtures/cgroup-v2-debian-6.1.txt";
const std::string kRec = "/sys/fs/cgroup/kubepods.slice/";

std::string Hex64(char c) { return std::string(64, c); }

struct Layout {
  std::string name;
  std::string pod_dir(const std::string& uid) const {
    return name == "systemd"
               ? "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + Underscored(uid) + ".slice"
               : "/kubepods/burstable/pod" + uid;
  }
  std::string ctr_dir(const std::string& uid, const std::string& id) const {
    return name == "systemd" ? pod_dir(uid) + "/cri-containerd-" + id + ".scope" : pod_dir(uid) + "/" + id;
  }
  static std::string Underscored(std::string s) {
    for (auto& c : s)
      if (c == '-') c = '_';
    return s;
  }
};

class FixtureTree : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    rec_ = LoadRecordedCgroups(kFixture);
    root_ = tmp_.path() + "/cgroup";
    MakeDirs(root_);
    WriteFile(root_ + "/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    WriteFile(root_ + "/cgroup.procs", "");
    layout_.name = GetParam();
    // pod A: the CPU burner, the memory.high allocator and a pause container
    Populate(layout_.pod_dir(kPodA), kRec + "pod1");
    Populate(layout_.ctr_dir(kPodA, Hex64('a')), kRec + "pod1/ctr_cpu");
    Populate(layout_.ctr_dir(kPodA, Hex64('b')), kRec + "pod1/ctr_high");
    Populate(layout_.ctr_dir(kPodA, Hex64('c')), "");
    // pod B: the OOM victim and the O_DIRECT writer
    Populate(layout_.pod_dir(kPodB), "");
    Populate(layout_.ctr_dir(kPodB, Hex64('d')), kRec + "pod2/ctr_oom");
    Populate(layout_.ctr_dir(kPodB, Hex64('e')), kRec + "pod2/ctr_io");
    // A memory.stat recorded for ctr_high
    WriteFile(root_ + layout_.ctr_dir(kPodA, Hex64('b')) + "/memory.stat",
              rec_.at(kRec + "pod1/ctr_high").at("memory.stat"));
    WriteFile(root_ + layout_.ctr_dir(kPodB, Hex64('d')) + "/memory.events.local",
              rec_.at(kRec + "pod2/ctr_oom").at("memory.events.local"));
    WriteFile(root_ + layout_.ctr_dir(kPodA, Hex64('a')) + "/cpu.max", "50000 100000\n");
    WriteFile(root_ + layout_.ctr_dir(kPodA, Hex64('b')) + "/memory.high", "62914560\n");
    WriteFile(root_ + layout_.ctr_dir(kPodA, Hex64('b')) + "/memory.max", "max\n");
  }

  void Populate(const std::string& dir, const std::string& recorded) {
    std::string d = root_ + dir;
    MakeDirs(d);
    WriteFile(d + "/cgroup.procs", "");
    WriteFile(d + "/cgroup.threads", "");
    if (recorded.empty()) return;
    for (const auto& [file, content] : rec_.at(recorded)) WriteFile(d + "/" + file, content);
  }

  // A collector of the fixture's tree (no /proc: no processes).
  std::unique_ptr<Collector> NewCollector() {
    CollectorOptions o;
    o.cgroup_mount = root_;
    o.proc_root = tmp_.path() + "/noproc";
    auto c = Collector::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  SnapshotPtr Collect() {
    sampler_ = std::make_unique<Sampler>(NewCollector(), nullptr, nullptr);
    auto s = sampler_->Get(std::chrono::nanoseconds(0));
    EXPECT_TRUE(s.ok());
    return *s;
  }

  const std::string kPodA = "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901";
  const std::string kPodB = "99999999-0000-1111-2222-333333333333";
  TempDir tmp_;
  std::string root_;
  Layout layout_;
  RecordedCgroups rec_;
  std::unique_ptr<Sampler> sampler_;
};

TEST_P(FixtureTree, DiscoversPodsAndContainers) {
  SnapshotPtr s = Collect();
  int pods = 0, containers = 0;
  for (const auto& c : s->cgroups) {
    if (c.id.kind == CgroupKind::kPod) ++pods;
    if (c.id.kind == CgroupKind::kContainer) ++containers;
  }
  EXPECT_EQ(pods, 2);
  EXPECT_EQ(containers, 5);
  const CgroupStats* ctr = s->FindByContainerId(Hex64('a'));
  ASSERT_NE(ctr, nullptr);
  EXPECT_EQ(ctr->id.pod_uid, kPodA);
  EXPECT_EQ(ctr->id.qos, QosClass::kBurstable);
  EXPECT_EQ(ctr->id.parent_path, layout_.pod_dir(kPodA));
  EXPECT_EQ(ctr->id.driver, GetParam() == "systemd" ? CgroupDriver::kSystemd : CgroupDriver::kCgroupfs);
  struct stat st;
  ASSERT_EQ(stat((root_ + ctr->id.cgroup_path).c_str(), &st), 0);
  EXPECT_EQ(ctr->id.cgroup_id, st.st_ino);
  ASSERT_NE(s->FindByPath(layout_.pod_dir(kPodA)), nullptr);
}

TEST_P(FixtureTree, CpuFromCpuStatAndCpuMax) {
  SnapshotPtr s = Collect();
  const CgroupStats* c = s->FindByContainerId(Hex64('a'));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(*c->cpu.usage_ns, 1823703000u);
  EXPECT_EQ(*c->cpu.user_ns, 1786332000u);
  EXPECT_EQ(*c->cpu.system_ns, 37370000u);
  EXPECT_EQ(*c->cpu.nr_periods, 45u);
  EXPECT_EQ(*c->cpu.nr_throttled, 23u);
  EXPECT_EQ(*c->cpu.throttled_ns, 954049000u);
  EXPECT_EQ(*c->cpu.quota_us, 50000u);
  EXPECT_EQ(*c->cpu.period_us, 100000u);
  EXPECT_TRUE(c->cpu.per_cpu_ns.empty());  // v2 cgroupfs has no per-CPU time
  ASSERT_TRUE(c->cpu.psi.some.has_value());
  EXPECT_EQ(c->cpu.psi.some->total_us, 1143656u);
  EXPECT_DOUBLE_EQ(c->cpu.psi.full->avg10, 4.82);
}

TEST_P(FixtureTree, MemoryHighDetail) {
  SnapshotPtr s = Collect();
  const CgroupStats* c = s->FindByContainerId(Hex64('b'));
  ASSERT_NE(c, nullptr);
  const MemoryStats& m = c->memory;
  EXPECT_EQ(*m.usage_bytes, 67211264u);
  EXPECT_EQ(*m.max_usage_bytes, 69304320u);
  EXPECT_EQ(*m.rss_bytes, 64196608u);
  EXPECT_EQ(*m.cache_bytes, 2293760u);
  EXPECT_EQ(*m.mapped_file_bytes, 2293760u);
  EXPECT_EQ(*m.shmem_bytes, 2293760u);
  EXPECT_EQ(*m.inactive_file, 0u);
  EXPECT_EQ(*m.working_set_bytes, 67211264u);  // usage - inactive_file (0)
  EXPECT_EQ(*m.pgfault, 17029u);
  EXPECT_EQ(*m.pgmajfault, 0u);
  EXPECT_EQ(*m.pgscan, 0u);
  EXPECT_EQ(*m.workingset_refault_file, 0u);
  EXPECT_EQ(*m.events.high, 752u);
  EXPECT_EQ(*m.high_bytes, 62914560u);
  EXPECT_EQ(*m.max_bytes, kUnlimited);
  EXPECT_EQ(*m.failcnt, 0u);  // memory.events max
  EXPECT_EQ(m.psi.some->total_us, 5762041u);
  EXPECT_FALSE(m.swap_bytes.has_value());  // memory.swap.current was not recorded: absent, not 0
}

TEST_P(FixtureTree, OomEvents) {
  SnapshotPtr s = Collect();
  const CgroupStats* c = s->FindByContainerId(Hex64('d'));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(*c->memory.events.max, 736u);
  EXPECT_EQ(*c->memory.events.oom, 21u);
  EXPECT_EQ(*c->memory.events.oom_kill, 20u);
  EXPECT_EQ(*c->memory.events.oom_group_kill, 0u);
  EXPECT_EQ(*c->memory.events_local.oom_kill, 20u);
  EXPECT_EQ(*c->memory.failcnt, 736u);
  EXPECT_EQ(*c->memory.max_usage_bytes, 52428800u);
}

TEST_P(FixtureTree, IoStat) {
  SnapshotPtr s = Collect();
  const CgroupStats* c = s->FindByContainerId(Hex64('e'));
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->io.devices.size(), 1u);
  EXPECT_EQ(c->io.devices[0].major, 1u);
  EXPECT_EQ(*c->io.devices[0].write_bytes, 33554432u);
  EXPECT_EQ(*c->io.devices[0].write_ios, 32u);
  EXPECT_EQ(*c->io.devices[0].read_bytes, 0u);
  const CgroupStats* empty_io = s->FindByContainerId(Hex64('a'));
  EXPECT_TRUE(empty_io->io.devices.empty());
}

TEST_P(FixtureTree, PauseContainerWithoutFilesHasAbsentValues) {
  SnapshotPtr s = Collect();
  const CgroupStats* c = s->FindByContainerId(Hex64('c'));
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->cpu.usage_ns.has_value());
  EXPECT_FALSE(c->memory.usage_bytes.has_value());
  EXPECT_FALSE(c->memory.working_set_bytes.has_value());
  EXPECT_EQ(*c->process.processes, 0u);
  EXPECT_TRUE(s->read_errors.empty());
}

TEST_P(FixtureTree, MalformedFileCostsOnlyItsField) {
  std::string d = root_ + layout_.ctr_dir(kPodA, Hex64('a'));
  WriteFile(d + "/cpu.stat", "usage_usec banana\nuser_usec 5\n");
  WriteFile(d + "/memory.current", "\x01\x02garbage");
  SnapshotPtr s = Collect();
  const CgroupStats* c = s->FindByContainerId(Hex64('a'));
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->cpu.usage_ns.has_value());
  EXPECT_EQ(*c->cpu.user_ns, 5000u);
  EXPECT_FALSE(c->memory.usage_bytes.has_value());
  EXPECT_EQ(*c->memory.max_usage_bytes, 516096u);  // the rest of the cgroup is served
  uint64_t cpu_errors = 0, mem_errors = 0;
  for (const auto& e : s->read_errors) {
    if (e.file == "cpu.stat" && e.reason == "parse") cpu_errors = e.count;
    if (e.file == "memory.current" && e.reason == "parse") mem_errors = e.count;
  }
  EXPECT_EQ(cpu_errors, 1u);
  EXPECT_EQ(mem_errors, 1u);
}

TEST_P(FixtureTree, NewContainerSeenAtNextCollectionWithoutFullWalk) {
  auto c = NewCollector();
  ASSERT_TRUE(c);
  auto first = c->Collect();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->FindByContainerId(Hex64('f')), nullptr);
  Populate(layout_.ctr_dir(kPodB, Hex64('f')), kRec + "pod1/ctr_cpu");
  auto second = c->Collect();
  ASSERT_TRUE(second.ok());
  const CgroupStats* added = second->FindByContainerId(Hex64('f'));
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(*added->cpu.usage_ns, 1823703000u);
  EXPECT_EQ(second->collection.discovery_rescans, 1u);  // only the new directory was read
  auto third = c->Collect();
  EXPECT_EQ(third->collection.discovery_rescans, 0u);
}

// usage_nano_cores comes from the collector's own last reading of each cgroup: a
// collection that reads containers only leaves the pod's reading for the next full one.
TEST_P(FixtureTree, RatesAgainstTheLastReadingOfEachCgroup) {
  auto c = NewCollector();
  ASSERT_TRUE(c);
  const std::string ctr = root_ + layout_.ctr_dir(kPodA, Hex64('a')) + "/cpu.stat";
  const std::string pod = root_ + layout_.pod_dir(kPodA) + "/cpu.stat";
  auto usage = [](uint64_t us) { return "usage_usec " + std::to_string(us) + "\nuser_usec 0\nsystem_usec 0\n"; };
  WriteFile(ctr, usage(1'000'000));
  WriteFile(pod, usage(5'000'000));
  auto first = c->Collect(CollectParts::All());
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->FindByContainerId(Hex64('a'))->cpu.usage_nano_cores.has_value()) << "one reading: no rate";

  WriteFile(ctr, usage(1'250'000));
  WriteFile(pod, usage(5'400'000));
  auto lean = c->Collect(CollectParts::None());
  ASSERT_TRUE(lean.ok());
  const CgroupStats* lean_ctr = lean->FindByContainerId(Hex64('a'));
  ASSERT_TRUE(lean_ctr->cpu.usage_nano_cores.has_value());
  const double dt1 = static_cast<double>(lean->monotonic_ns - first->monotonic_ns);
  EXPECT_EQ(*lean_ctr->cpu.usage_nano_cores, static_cast<uint64_t>(250'000'000.0 * 1e9 / dt1));
  EXPECT_FALSE(lean->FindByPath(layout_.pod_dir(kPodA))->cpu.usage_nano_cores.has_value()) << "the pod was not read";

  WriteFile(pod, usage(5'900'000));
  auto full = c->Collect(CollectParts::All());
  ASSERT_TRUE(full.ok());
  const CgroupStats* full_pod = full->FindByPath(layout_.pod_dir(kPodA));
  ASSERT_TRUE(full_pod->cpu.usage_nano_cores.has_value());
  const double dt2 = static_cast<double>(full->monotonic_ns - first->monotonic_ns);
  EXPECT_EQ(*full_pod->cpu.usage_nano_cores, static_cast<uint64_t>(900'000'000.0 * 1e9 / dt2))
      << "against the first collection, the last that read the pod";
  const double dt3 = static_cast<double>(full->monotonic_ns - lean->monotonic_ns);
  EXPECT_EQ(*full->FindByContainerId(Hex64('a'))->cpu.usage_nano_cores, 0u) << "no CPU since the lean one, dt " << dt3;

  WriteFile(ctr, usage(10));  // the counter went back: the cgroup was made again
  auto reset = c->Collect(CollectParts::All());
  ASSERT_TRUE(reset.ok());
  EXPECT_FALSE(reset->FindByContainerId(Hex64('a'))->cpu.usage_nano_cores.has_value());
}

// A collection for the container calls lists pods and containers only (the root, like
// kubepods, the QoS tiers and the host's services, is neither read nor listed), and reads no file of a container the
// runtime's metadata names as a pod's sandbox; a collection with the parts reads them all.
TEST_P(FixtureTree, ContainerCallsReadNeitherHostCgroupsNorSandboxes) {
  auto c = NewCollector();
  ASSERT_TRUE(c);
  MetadataMap meta;
  auto sandbox = std::make_shared<ContainerMetadata>();
  sandbox->container_id = Hex64('a');
  sandbox->is_sandbox = true;
  meta.by_container_id[Hex64('a')] = sandbox;

  auto lean = c->CollectKnowing(CollectParts::None(), meta);
  ASSERT_TRUE(lean.ok());
  EXPECT_EQ(lean->FindByPath("/"), nullptr);
  ASSERT_NE(lean->FindByPath(layout_.pod_dir(kPodA)), nullptr);
  const CgroupStats* pause = lean->FindByContainerId(Hex64('a'));
  ASSERT_NE(pause, nullptr) << "a sandbox is still listed";
  EXPECT_FALSE(pause->cpu.usage_ns.has_value()) << "its files were not read";
  const CgroupStats* app = lean->FindByContainerId(Hex64('b'));
  ASSERT_NE(app, nullptr);
  EXPECT_TRUE(app->cpu.usage_ns.has_value());

  auto full = c->CollectKnowing(CollectParts::All(), meta);
  ASSERT_TRUE(full.ok());
  EXPECT_NE(full->FindByPath("/"), nullptr);
  ASSERT_NE(full->FindByContainerId(Hex64('a')), nullptr);
  EXPECT_EQ(*full->FindByContainerId(Hex64('a'))->cpu.usage_ns, 1823703000u);

  auto unknown = c->Collect(CollectParts::None());  // no metadata: every container read
  ASSERT_TRUE(unknown.ok());
  EXPECT_TRUE(unknown->FindByContainerId(Hex64('a'))->cpu.usage_ns.has_value());
}

// A removed container is named once, in the collection that finds it gone: what an event
// drained then (an OOM kill) knows of it.
TEST_P(FixtureTree, ARemovedCgroupIsAmongTheVanishedOnce) {
  auto c = NewCollector();
  ASSERT_TRUE(c);
  auto first = c->Collect(CollectParts::All());
  ASSERT_TRUE(first.ok());
  ASSERT_NE(first->FindByContainerId(Hex64('e')), nullptr);
  EXPECT_TRUE(first->vanished.empty());
  const Identity before = first->FindByContainerId(Hex64('e'))->id;

  std::filesystem::remove_all(root_ + layout_.ctr_dir(kPodB, Hex64('e')));
  auto second = c->Collect(CollectParts::None());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->FindByContainerId(Hex64('e')), nullptr);
  ASSERT_EQ(second->vanished.size(), 1u);
  const Identity& gone = second->vanished[0];
  EXPECT_EQ(gone.cgroup_path, before.cgroup_path);
  EXPECT_EQ(gone.kind, CgroupKind::kContainer);
  EXPECT_EQ(gone.container_id, Hex64('e'));
  EXPECT_EQ(gone.pod_uid, kPodB);
  EXPECT_EQ(gone.parent_path, layout_.pod_dir(kPodB));
  EXPECT_EQ(gone.created_ns, before.created_ns);

  auto third = c->Collect(CollectParts::None());
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->vanished.empty());
}

// Counts the Sampler's requests to unmap the eBPF walks' arrays, and records whether each
// collection told the probes it listed every cgroup.
class MappingsCounter : public BpfSource {
 public:
  void Collect(const std::vector<uint64_t>&, std::unordered_map<uint64_t, BpfCgroupStats>*, std::vector<OomEvent>*,
               bool, bool every_cgroup_listed) override {
    every_listed.push_back(every_cgroup_listed);
  }
  std::vector<SourceState> ProbeStates() const override { return {}; }
  std::vector<BpfRollUp> RollUps() const override { return {}; }
  void ReleaseMappings() override { ++releases; }
  int releases = 0;
  std::vector<bool> every_listed;
};

// A collection for the container calls lists only pods and containers: the probes are told,
// so that they keep the entries of the host's own cgroups a full collection reports.
TEST_P(FixtureTree, SamplerTellsTheProbesWhenACollectionListsOnlyPodsAndContainers) {
  MappingsCounter bpf;
  Sampler sampler(NewCollector(), nullptr, &bpf);
  ASSERT_TRUE(sampler.Get(std::chrono::nanoseconds(0), CollectParts::None()).ok());
  ASSERT_TRUE(sampler.Get(std::chrono::nanoseconds(0), CollectParts::All()).ok());
  EXPECT_EQ(bpf.every_listed, (std::vector<bool>{false, true}));
}

// The Sampler keeps its last snapshot only while a caller could reuse it (the largest
// max_age asked for), and unmaps the eBPF walks' arrays with it; the rates it serves need
// nothing of a released one.
TEST_P(FixtureTree, SamplerReleasesAStaleSnapshotAndRatesOutliveIt) {
  auto c = NewCollector();
  ASSERT_TRUE(c);
  MappingsCounter bpf;
  Sampler sampler(std::move(c), nullptr, &bpf);
  const std::string ctr = root_ + layout_.ctr_dir(kPodA, Hex64('a')) + "/cpu.stat";
  WriteFile(ctr, "usage_usec 1000000\nuser_usec 0\nsystem_usec 0\n");

  // Every caller so far asked for a fresh collection: nobody can reuse the last one.
  auto held = sampler.Get(std::chrono::nanoseconds(0));
  ASSERT_TRUE(held.ok());
  const size_t cgroups = (*held)->cgroups.size();
  ASSERT_GT(cgroups, 0u);
  EXPECT_EQ(sampler.ReleaseStale(), 0u) << "dropped, but a caller still holds it: nothing freed";
  EXPECT_EQ(bpf.releases, 1) << "no collection runs: the walks' arrays are unmapped";
  EXPECT_EQ((*held)->cgroups.size(), cgroups) << "the caller's snapshot is intact";
  const SnapshotPtr first = *held;
  held = Status(StatusCode::kUnavailable, "released");
  auto again = sampler.Get(std::chrono::hours(1));
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->get(), first.get()) << "the released snapshot is not reused";
  EXPECT_EQ(sampler.stats().collections, 2u);
  EXPECT_EQ(sampler.stats().reuses, 0u);

  // Now an hour's max_age was asked for: the last snapshot is kept.
  EXPECT_EQ(sampler.ReleaseStale(), 0u);
  again = Status(StatusCode::kUnavailable, "released");
  EXPECT_EQ(sampler.ReleaseStale(), 0u);
  EXPECT_EQ(bpf.releases, 1) << "a snapshot kept for reuse keeps the arrays mapped";

  // The container's rate needs nothing of a released snapshot.
  Sampler fresh_only(NewCollector(), nullptr, nullptr);
  auto a = fresh_only.Get(std::chrono::nanoseconds(0));
  ASSERT_TRUE(a.ok());
  const int64_t a_ns = (*a)->monotonic_ns;
  const size_t entries_bytes = (*a)->cgroups.size() * sizeof(CgroupStats);
  a = Status(StatusCode::kUnavailable, "released");
  EXPECT_GE(fresh_only.ReleaseStale(), entries_bytes) << "its only holder: freed";
  WriteFile(ctr, "usage_usec 1500000\nuser_usec 0\nsystem_usec 0\n");
  auto b = fresh_only.Get(std::chrono::nanoseconds(0));
  ASSERT_TRUE(b.ok());
  const CgroupStats* rated = (*b)->FindByContainerId(Hex64('a'));
  ASSERT_NE(rated, nullptr);
  ASSERT_TRUE(rated->cpu.usage_nano_cores.has_value());
  EXPECT_EQ(*rated->cpu.usage_nano_cores,
            static_cast<uint64_t>(500'000'000.0 * 1e9 / static_cast<double>((*b)->monotonic_ns - a_ns)));
}

INSTANTIATE_TEST_SUITE_P(Layouts, FixtureTree, ::testing::Values("systemd", "cgroupfs"));

}  // namespace
}  // namespace statlet
