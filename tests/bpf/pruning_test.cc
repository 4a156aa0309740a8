// Map entries of removed cgroups are deleted at Collect; those of existing but untracked
// cgroups survive while the maps have room, and whatever the room when the collection did
// not list every cgroup.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <memory>
#include <numeric>
#include <optional>

#include "tests/bpf/probe_test_support.h"
#include "tests/bpf/tcp_send.h"

namespace statlet::testing {
namespace {

// Runs a child that faults in `pages` pages inside `cg`.
void FaultPagesIn(LiveCgroup& cg, size_t pages = 1000) {
  Child child(
      [pages] {
        size_t len = pages * 4096;
        auto* p =
            static_cast<volatile char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (p == MAP_FAILED) return 3;
        for (size_t i = 0; i < len; i += 4096) p[i] = 1;
        return 0;
      },
      Child::kExits);
  ASSERT_TRUE(child.StartIn(cg));
  int status = child.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Minor faults of `id` once at least `pages` are counted (or the deadline passed).
uint64_t MinorFaults(BpfProbes& probes, uint64_t id, uint64_t pages = 1000) {
  return *CollectUntil(probes, id, [&](const BpfCgroupStats& v) {
            return v.minor_faults.value_or(0) >= pages;
          }).minor_faults;
}

// Sends `payload` bytes over loopback TCP from a process in `from` to this one (outside the
// test's cgroups); 0, or an error code (the step that failed).
int SendFrom(LiveCgroup& from, size_t payload) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(ls);
    return 1;
  }
  Child sender(
      [&]() -> uint64_t {
        tcp_info info;
        return static_cast<uint64_t>(SendAndDrain(addr, payload, &info));
      },
      Child::kExits);
  if (!sender.StartIn(from)) {
    close(ls);
    return 2;
  }
  pollfd p{ls, POLLIN, 0};
  const bool connected = poll(&p, 1, 30'000) == 1;  // the sender's connection, or a deadline
  const uint64_t got = connected ? AcceptAndDrain(ls) : 0;
  close(ls);
  if (!connected) return 3;
  std::optional<uint64_t> sent = sender.Result(std::chrono::seconds(30));
  if (!sent || *sent != 0) return 4;
  return got == payload ? 0 : 5;
}

uint64_t CollectNone(BpfProbes& probes) {
  std::unordered_map<uint64_t, BpfCgroupStats> by_id;
  std::vector<OomEvent> ooms;
  probes.Collect({}, &by_id, &ooms, true, true);
  return by_id.size();
}

TEST(BpfPruning, RemovedCgroupsAreDroppedExistingOnesKept) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup removed("prune-gone");
  ProbeCgroup kept("prune-kept");
  ASSERT_TRUE(removed.ok()) << removed.error();
  ASSERT_TRUE(kept.ok()) << kept.error();
  FaultPagesIn(removed);
  FaultPagesIn(kept);
  const uint64_t removed_id = removed.id();
  ASSERT_GE(MinorFaults(*probes, removed_id), 1000u);
  ASSERT_GE(MinorFaults(*probes, kept.id()), 1000u);

  removed.Destroy();
  EXPECT_EQ(CollectNone(*probes), 0u);  // neither is live: prunes, reports nothing

  BpfCgroupStats gone = CollectOne(*probes, removed_id);
  EXPECT_EQ(*gone.minor_faults, 0u) << "entry of the removed cgroup survived";
  EXPECT_TRUE(gone.runq_latency_log2_us.size() > 0);
  EXPECT_EQ(probes->PerCpuNs(removed_id), nullptr) << "the removed cgroup still has per-CPU time";
  EXPECT_GE(*CollectOne(*probes, kept.id()).minor_faults, 1000u) << "entry of an existing cgroup was dropped";
}

// A collection that listed only pods and containers (the CRI container calls) leaves out the
// host's own cgroups, which the next full collection reports: a crowded map keeps their
// entries (else that collection would read them from 0, a counter reset); an entry of a
// cgroup known gone still goes. The net probe, attached under a root of the test's own, has
// entries of the test's cgroups alone.
TEST(BpfPruning, ACollectionOfPodsAndContainersDropsOnlyGoneCgroups) {
  STATLET_REQUIRE_ROOT();
  const std::string root = "/" + UniqueName("statlet-bpf-prune-partial");
  LiveCgroup parent(root, {kUnified});  // removed after the hosts
  ASSERT_TRUE(parent.ok()) << parent.error();
  std::vector<std::unique_ptr<LiveCgroup>> hosts;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) {
    hosts.push_back(std::make_unique<LiveCgroup>(root + "/host" + std::to_string(i), std::vector<Hierarchy>{kUnified}));
    ASSERT_TRUE(hosts.back()->ok()) << hosts.back()->error();
    ids.push_back(hosts.back()->id());
  }
  BpfOptions options = BpfOptions::WithMode(BpfMode::kOn);
  options.probes = {"net"};
  options.net_subtrees = {root};
  options.max_cgroups = 4;  // crowded (over three quarters) at 4 entries
  auto created = BpfProbes::Create(options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  BpfProbes& probes = **created;
  for (auto& h : hosts) ASSERT_EQ(SendFrom(*h, 64 << 10), 0);
  auto collect = [&](const std::vector<uint64_t>& live, bool every_cgroup_listed) {
    std::unordered_map<uint64_t, BpfCgroupStats> by_id;
    std::vector<OomEvent> ooms;
    probes.Collect(live, &by_id, &ooms, false, every_cgroup_listed);
    std::vector<uint64_t> tx;
    for (uint64_t id : ids) tx.push_back(by_id[id].net_tx_bytes.value_or(0));
    return tx;
  };
  const std::vector<uint64_t> before = collect(ids, true);
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_GE(before[i], uint64_t{64 << 10}) << "host" << i;

  // The last one removed, then a collection of pods and containers (none of them listed).
  const uint64_t gone_id = ids.back();
  hosts.back().reset();
  collect({}, false);
  const std::vector<uint64_t> after = collect(ids, true);
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    EXPECT_EQ(after[i], before[i]) << "host" << i << "'s entry was dropped though its cgroup exists";
  }
  EXPECT_EQ(after.back(), 0u) << "the entry of removed cgroup " << gone_id << " survived";
}

// The scheduler probes (runqlat, faults) keep a cgroup's values in a slot that goes back to a free list one
// collection after the cgroup is unmapped, zeroed; the next new cgroup takes the most
// recently freed slot and must start from zero.
TEST(BpfPruning, SlotOfARemovedCgroupIsReusedFromZero) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  constexpr size_t kFirstPages = 8000;
  {
    ProbeCgroup first("reuse-first");
    ASSERT_TRUE(first.ok()) << first.error();
    FaultPagesIn(first, kFirstPages);
    ASSERT_GE(MinorFaults(*probes, first.id(), kFirstPages), kFirstPages);
  }                      // removed
  CollectNone(*probes);  // unmaps it
  CollectNone(*probes);  // zeroes its slot and frees it

  ProbeCgroup second("reuse-second");
  ASSERT_TRUE(second.ok()) << second.error();
  FaultPagesIn(second);
  BpfCgroupStats s =
      CollectUntil(*probes, second.id(), [](const BpfCgroupStats& v) { return v.minor_faults.value_or(0) >= 1000; });
  EXPECT_GE(*s.minor_faults, 1000u);
  EXPECT_LE(*s.minor_faults, 1000u + 1024) << "counts of the removed cgroup leaked into its slot's next owner";
  const double usage_ns = static_cast<double>(second.CpuUsageNs());
  const double sum_ns = static_cast<double>(SumOf(s.per_cpu_ns));
  EXPECT_LE(sum_ns, usage_ns * 1.05 + 1e6);
  for (const BpfProbeStatus& st : probes->ProbeStatus()) EXPECT_EQ(st.lost_events, 0u) << st.probe;
}

}  // namespace
}  // namespace statlet::testing
