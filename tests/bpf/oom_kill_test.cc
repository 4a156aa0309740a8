// The oom probe: an allocator in a memory-limited cgroup is killed; exactly one event.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "tests/bpf/probe_test_support.h"

namespace statlet::testing {
namespace {

std::vector<OomEvent> EventsOf(const std::vector<OomEvent>& all, uint64_t id) {
  std::vector<OomEvent> out;
  for (const OomEvent& e : all) {
    if (e.cgroup_id == id) out.push_back(e);
  }
  return out;
}

TEST(OomKillProbe, MemcgLimitKillYieldsOneEventNamingVictimAndCgroup) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup cg("oom");
  ASSERT_TRUE(cg.ok()) << cg.error();
  ASSERT_TRUE(cg.SetMemoryLimit(32 << 20));

  Child oomer(
      [] {
        prctl(PR_SET_NAME, "statlet-oomer");
        for (int i = 0; i < 1024; i++) {  // up to 1 GiB, far past the limit
          void* p = malloc(1 << 20);
          if (!p) return 5;
          memset(p, 0x5a, 1 << 20);
        }
        return 0;  // not killed: the test fails on the exit status
      },
      Child::kExits);
  ASSERT_TRUE(oomer.StartIn(cg));
  const pid_t pid = oomer.pid();
  int status = oomer.Wait(std::chrono::seconds(60));
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;

  std::vector<OomEvent> events;
  BpfCgroupStats s;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (EventsOf(events, cg.id()).empty() && std::chrono::steady_clock::now() < deadline) {
    s = CollectOne(*probes, cg.id(), &events);
    if (EventsOf(events, cg.id()).empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // poll
  }
  s = CollectOne(*probes, cg.id(), &events);  // a second kill would show up by now

  std::vector<OomEvent> ours = EventsOf(events, cg.id());
  ASSERT_EQ(ours.size(), 1u);
  EXPECT_EQ(ours[0].pid, static_cast<uint32_t>(pid));
  EXPECT_EQ(ours[0].comm, "statlet-oomer");
  EXPECT_TRUE(ours[0].constraint_memcg);
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const int64_t now_ns = static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  EXPECT_LE(ours[0].timestamp_ns, now_ns);
  EXPECT_GT(ours[0].timestamp_ns, now_ns - int64_t{120} * 1000000000);
  ASSERT_TRUE(s.oom_kills.has_value());
  EXPECT_EQ(*s.oom_kills, 1u);
}

}  // namespace
}  // namespace statlet::testing
