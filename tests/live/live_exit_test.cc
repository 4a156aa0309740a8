// Exit records on this machine's real kernel: many short-lived container cgroups (a real
// process each, living 100-500 ms), each removed after its process exits as soon as a
// runtime deletes a finished task. Each must appear, with its final CPU time, in a
// snapshot taken at a scrape interval, whatever happened between scrapes.
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "collector/collector.h"
#include "collector/exit_records.h"
#include "collector/exit_watcher.h"
#include "collector/sampler.h"
#include "tests/support/child_process.h"
#include "tests/support/host_state.h"
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

using testing::LoadAverage;
using testing::MonoNs;

std::string ContainerId(size_t i) {
  char buf[65];
  std::snprintf(buf, sizeof buf, "%064zx", i + 0xe0000);
  return buf;
}

int64_t UsageUsec(const std::string& cpu_stat) {
  const size_t p = cpu_stat.find("usage_usec ");
  return p == std::string::npos ? -1 : std::atoll(cpu_stat.c_str() + p + 11);
}

// What the test read of each container just before removing its cgroup.
struct KernelFinal {
  int64_t usage_usec = -1;  // unified cpu.stat
  int64_t cpuacct_ns = -1;  // v1 cpuacct.usage (hybrid hosts)
  bool has_peak = false;    // the kernel keeps a memory peak here
};

// How long after its last process exits each container's cgroup is removed: a delay drawn
// from what a real runtime takes. containerd 1.6.20 and runc 1.1.5 over CRI (tests/e2e's
// harness; bench/e2e/exit_removal_bench.cc, figures and command in bench/RESULTS.md)
// removed every exited container's cgroup on the task's exit (no StopContainer or
// RemoveContainer sent), 16.0 ms after it at the soonest of 1,000 (p1 16.3-17.1 ms, p50
// 28-31 ms at a load average of 0.9-1.9; p1 23-38 ms, p50 78-149 ms at 2.4-6.8). The draw
// is uniform over the quiet runs' min to median, counted from the exit (its pidfd), so each
// removal here is one the runtime made, and the run is harsher than the runtime under load
// (its removals then come later, these do not). Removed 0-10 ms after the exit, as this
// test once did, 0.10-0.15 % of the containers were gone before the watcher thread ran for
// them, although a poller of cgroup.events is woken as the cgroup empties (inotify's event
// of it came up to 11.5 ms later there).
constexpr int64_t kRemovalMinUs = 16000;
constexpr int64_t kRemovalMaxUs = 28000;

// The share of containers that must be captured, and captured with their final CPU time
// within 1 %: 99.9 % of a real-time watcher (the default, when the process may). Eight
// runs of 2,000 here captured 2,000 each, at load averages from 0.8 to 7.9 (three beside
// four busy loops at nice 5), the CPU time within 1 % for all 2,000 in five, 1,999 in two,
// 1,998 in one. A container is lost when its cgroup is gone before the watcher thread wakes
// for it or while it reads its CPU time (ExitWatcherStats::missed, missed_reading). As an
// ordinary thread at nice -10 that wake-up waited longer than a 0-10 ms removal in ~1.3 % of
// exits on this 2-core host beside other builds (98.75 %, 98.70 % at a load average of
// 3-7): its bound stays lower. Under a sanitizer the reads run several times slower, and the
// run is cut to fewer containers (the stage's time): the records are still checked, the
// share only has to show the watcher at work (a run whose watcher thread never ran
// captured none of 2,000).
#if defined(__SANITIZE_ADDRESS__)
constexpr double kCaptureTarget = 0.5;
constexpr double kRealtimeCaptureTarget = 0.5;
constexpr size_t kDefaultCount = 300;
#else
constexpr double kCaptureTarget = 0.97;
constexpr double kRealtimeCaptureTarget = 0.999;
constexpr size_t kDefaultCount = 2000;
#endif

// The scheduling policy of this process' thread named `name` (-1: none such).
int PolicyOfThread(const std::string& name) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int policy = -1;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string c;
    std::getline(comm, c);
    if (c == name) policy = sched_getscheduler(std::atoi(e->d_name));
  }
  closedir(d);
  return policy;
}

// The watcher's final reads run SCHED_FIFO; a wake-up whose reads take more CPU than the
// budget puts the thread back to the ordinary policy for good.
TEST(LiveExits, FinalReadsRunRealTimeUntilAWakeUpIsOverBudget) {
  if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
  if (!HostHierarchies().has(kUnified)) GTEST_SKIP() << "no cgroup2 mount: no populated notification";
  const std::string root = "/" + UniqueName("statlet-live-exit-rt");
  const std::string pod = root + "/kubepods/besteffort/pod1f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  LiveCgroup top(root);
  LiveCgroup pod_cg(pod);
  ASSERT_TRUE(pod_cg.ok()) << pod_cg.error();
  ExitRecords records;
  ExitWatcherOptions wo;
  wo.subtrees = {root};
  wo.realtime_budget_ns = 0;  // any final read is over it
  auto watcher = ExitWatcher::Start(wo, &records);
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  // Whether a thread of this process may run SCHED_FIFO here at all (CAP_SYS_NICE, and a
  // cgroup with real-time runtime where the kernel groups it): then the watcher must.
  bool may = false;
  std::thread([&may] {
    sched_param p{};
    p.sched_priority = sched_get_priority_min(SCHED_FIFO);
    may = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
  }).join();
  if (!may) GTEST_SKIP() << "this process may not run a thread SCHED_FIFO here (CAP_SYS_NICE, real-time runtime)";
  ASSERT_TRUE(testing::WaitFor([&] { return (*watcher)->stats().realtime; }, milliseconds(5000)))
      << "the watcher did not take the real-time policy it may";
  EXPECT_EQ(PolicyOfThread("statlet-exits"), SCHED_FIFO);
  EXPECT_EQ((*watcher)->stats().nice, -10);

  const uint64_t watches = (*watcher)->stats().watches;
  LiveCgroup cg(pod + "/" + ContainerId(1));
  ASSERT_TRUE(cg.ok()) << cg.error();
  // Its cgroup.events held first: the exit then wakes the watcher (a container found
  // already empty is read on the directory walk, as an ordinary thread).
  ASSERT_TRUE(testing::WaitFor([&] { return (*watcher)->stats().watches > watches; }, milliseconds(5000)));
  // Walking the new directory was no final read: the budget of 0 is not spent on it. The
  // watch is counted during the walk, which runs as an ordinary thread: the policy returns
  // when the walk ends (a loaded host can hold the thread between the two).
  EXPECT_TRUE((*watcher)->stats().realtime) << "a directory walk was charged to the final reads' budget";
  EXPECT_TRUE(testing::WaitFor([] { return PolicyOfThread("statlet-exits") == SCHED_FIFO; }, milliseconds(5000)))
      << "the watcher did not return to real-time after a directory walk";
  Child c([] { return uint64_t{0}; }, Child::kExits);
  ASSERT_TRUE(c.StartIn(cg));
  c.Wait(milliseconds(30000));
  ASSERT_TRUE(testing::WaitFor([&] { return (*watcher)->stats().exits == 1; }, milliseconds(5000)));
  // The exit is counted as it is read, the budget checked once the wake-up's reads are done.
  EXPECT_TRUE(testing::WaitFor([&] { return !(*watcher)->stats().realtime; }, milliseconds(5000)))
      << "a final read over the budget left the thread real-time";
  EXPECT_EQ(PolicyOfThread("statlet-exits"), SCHED_OTHER);
}

// CPU time charged to a container after its first reads (the exiting task's last moments,
// late when the task waited for a busy CPU) is in its record: the kept files are read again
// at each of settle_ns after the final read, and the record waits for the last. Here the
// first later read comes 1 ms after the final one; once it was made, a second process burns
// 50 ms in the emptied cgroup well before the last read (2 s), so the record must hold it.
TEST(LiveExits, TheLastLaterReadTakesCpuTimeChargedAfterTheFirstReads) {
  if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
  if (!HostHierarchies().has(kUnified)) GTEST_SKIP() << "no cgroup2 mount: no populated notification";
  const std::string root = "/" + UniqueName("statlet-live-exit-settle");
  const std::string pod = root + "/kubepods/besteffort/pod2f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  LiveCgroup top(root);
  LiveCgroup pod_cg(pod);
  ASSERT_TRUE(pod_cg.ok()) << pod_cg.error();
  ExitRecords records;
  ExitWatcherOptions wo;
  wo.subtrees = {root};
  wo.settle_ns = {1'000'000, 2'000'000'000};  // the last far after the second process (50 ms of CPU)
  auto watcher = ExitWatcher::Start(wo, &records);
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  const uint64_t watches = (*watcher)->stats().watches;
  LiveCgroup cg(pod + "/" + ContainerId(2));
  ASSERT_TRUE(cg.ok()) << cg.error();
  ASSERT_TRUE(testing::WaitFor([&] { return (*watcher)->stats().watches > watches; }, milliseconds(5000)));
  Child first([] { return uint64_t{0}; }, Child::kExits);
  ASSERT_TRUE(first.StartIn(cg));
  first.Wait(milliseconds(30000));
  ASSERT_TRUE(testing::WaitFor([&] { return (*watcher)->stats().later_reads == 1; }, milliseconds(5000)))
      << "no read 1 ms after the final one";
  const int64_t before_us = UsageUsec(cg.Read(kUnified, "cpu.stat"));
  Child second(
      [] {
        testing::BurnCpu(50'000'000);
        return uint64_t{0};
      },
      Child::kExits);
  ASSERT_TRUE(second.StartIn(cg));
  second.Wait(milliseconds(30000));
  const int64_t after_us = UsageUsec(cg.Read(kUnified, "cpu.stat"));
  ASSERT_GE(after_us - before_us, 40'000) << "the second process did not burn in the cgroup";
  EXPECT_TRUE(records.Live(MonoNs()).empty()) << "the record did not wait for its last read";
  ASSERT_TRUE(testing::WaitFor([&] { return !records.Live(MonoNs()).empty(); }, milliseconds(10000)));
  const auto live = records.Live(MonoNs());
  ASSERT_EQ(live.size(), 1u);
  ASSERT_TRUE(live[0]->cpu.usage_ns.has_value());
  const int64_t recorded_us = static_cast<int64_t>(*live[0]->cpu.usage_ns / 1000);
  // Hybrid hosts count the total from cpuacct (per-CPU nanoseconds), v2 from cpu.stat: the
  // same time to within a tick's rounding.
  EXPECT_GE(recorded_us, before_us + 40'000) << "the last read's CPU time is not in the record (first reads "
                                             << before_us << " us, kernel now " << after_us << " us)";
  const ExitWatcherStats ws = (*watcher)->stats();
  EXPECT_EQ(ws.later_reads, 2u);
  EXPECT_EQ(ws.settled_late, 1u);
}

TEST(LiveExits, ShortLivedContainersKeepTheirFinalValues) {
  if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
  if (!HostHierarchies().has(kUnified)) GTEST_SKIP() << "no cgroup2 mount: no populated notification";
  size_t count = kDefaultCount;
  if (const char* n = std::getenv("STATLET_EXIT_TEST_COUNT")) count = std::strtoul(n, nullptr, 10);
  constexpr auto kSpacing = milliseconds(60);  // ~17 containers a second
  constexpr auto kScrapeInterval = milliseconds(5000);

  const std::string root = "/" + UniqueName("statlet-live-exits");
  const std::string pod = root + "/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  LiveCgroup top(root);
  LiveCgroup pod_cg(pod);
  ASSERT_TRUE(pod_cg.ok()) << pod_cg.error();

  ExitRecords records;
  ExitWatcherOptions wo;
  wo.subtrees = {root};
  auto watcher = ExitWatcher::Start(wo, &records);
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  CollectorOptions co;
  co.subtrees = {root};
  co.process_fds = false;
  auto collector = Collector::Create(co);
  ASSERT_TRUE(collector.ok()) << collector.status().ToString();
  Sampler sampler(std::move(*collector), nullptr, nullptr);
  sampler.SetExitRecords(&records);

  std::mutex mu;
  std::map<std::string, KernelFinal> finals;  // by cgroup path
  std::map<std::string, const CgroupStats*> seen;
  std::vector<SnapshotPtr> scrapes;
  auto scrape = [&] {
    auto s = sampler.Get(std::chrono::nanoseconds(0));
    ASSERT_TRUE(s.ok());
    std::lock_guard<std::mutex> lock(mu);
    scrapes.push_back(*s);
    for (const CgroupStats& c : (*s)->cgroups) {
      if (c.exit) seen[c.id.cgroup_path] = &c;  // the newest scrape's, final either way
    }
  };

  std::atomic<bool> launching{true};
  std::thread scraper([&] {
    auto next = std::chrono::steady_clock::now() + kScrapeInterval;
    while (launching.load()) {
      std::this_thread::sleep_until(std::min(next, std::chrono::steady_clock::now() + milliseconds(100)));
      if (std::chrono::steady_clock::now() >= next) {
        scrape();
        next += kScrapeInterval;
      }
    }
  });

  const std::string load_at_start = LoadAverage();
  const int64_t started_ns = MonoNs();
  // Each container's runner thread is joined once it is done, oldest first: a finished
  // thread left unjoined keeps its stack mapped, and each Child's fork then copies the
  // mappings of all of them (2,000 stacks by the end) while the next thread's creation waits
  // for the same address space. Joined only at the end, the launch fell to 7.4 containers a
  // second with a load average of 230 on a 2-CPU host, the harness itself the load.
  struct Runner {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::deque<Runner> runners;
  auto join_finished = [&runners](bool all) {
    while (!runners.empty() && (all || runners.front().done->load())) {
      runners.front().thread.join();
      runners.pop_front();
    }
  };
  std::mt19937 rng(35);
  for (size_t i = 0; i < count; ++i) {
    const int live_ms = std::uniform_int_distribution<int>(100, 500)(rng);
    const int64_t burn_ns = std::uniform_int_distribution<int64_t>(2'000'000, 20'000'000)(rng);
    const int64_t removal_ns = 1000 * std::uniform_int_distribution<int64_t>(kRemovalMinUs, kRemovalMaxUs)(rng);
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread runner([&, i, live_ms, burn_ns, removal_ns, done] {
      struct MarkDone {
        std::atomic<bool>* done;
        ~MarkDone() { done->store(true); }
      } mark{done.get()};
      const std::string path = pod + "/" + ContainerId(i);
      LiveCgroup cg(path);
      if (!cg.ok()) return;
      Child c(
          [live_ms, burn_ns] {
            const int64_t until = MonoNs() + int64_t{live_ms} * 1000000;
            testing::BurnCpu(burn_ns);
            const int64_t left = until - MonoNs();
            if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));  // the workload's life
            return uint64_t{0};
          },
          Child::kExits);
      if (!c.StartIn(cg)) return;
      // The moment it exits: its pidfd turns readable (the cgroup is empty from then on).
      const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, c.pid(), 0));
      if (pidfd >= 0) {
        pollfd p{pidfd, POLLIN, 0};
        poll(&p, 1, 30000);
        close(pidfd);
      }
      const int64_t exited_ns = MonoNs();
      c.Wait(milliseconds(30000));
      // The runtime's removal delay (drawn above), counted from the exit.
      const int64_t remove_at = exited_ns + removal_ns;
      const timespec at{static_cast<time_t>(remove_at / 1000000000), static_cast<long>(remove_at % 1000000000)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
      }
      // Empty: what the kernel says last, read just before the cgroup is removed.
      KernelFinal k;
      k.usage_usec = UsageUsec(cg.Read(kUnified, "cpu.stat"));
      if (cg.in(kV1Cpuacct)) k.cpuacct_ns = std::atoll(cg.Read(kV1Cpuacct, "cpuacct.usage").c_str());
      k.has_peak =
          !cg.Read(kV1Memory, "memory.max_usage_in_bytes").empty() || !cg.Read(kUnified, "memory.peak").empty();
      cg.Destroy();
      std::lock_guard<std::mutex> lock(mu);
      finals[path] = k;
    });
    runners.push_back({std::move(runner), std::move(done)});
    join_finished(/*all=*/false);
    std::this_thread::sleep_for(kSpacing);  // the launch rate, not a wait on anything
  }
  join_finished(/*all=*/true);
  const int64_t launched_ns = MonoNs() - started_ns;
  launching = false;
  scraper.join();
  scrape();  // the scrape after the last exit

  size_t captured = 0, cpu_within = 0, peak_expected = 0, peak_present = 0;
  double worst = 0;
  for (const auto& [path, k] : finals) {
    auto it = seen.find(path);
    if (it == seen.end()) continue;
    ++captured;
    const CgroupStats& c = *it->second;
    ASSERT_TRUE(c.cpu.usage_ns.has_value()) << path;
    // The kernel's figure of the hierarchy the collector reads CPU from.
    const double kernel =
        k.cpuacct_ns >= 0 && HostHierarchies().cpu() == kV1Cpuacct ? double(k.cpuacct_ns) : double(k.usage_usec) * 1000;
    const double err = kernel > 0 ? std::abs(double(*c.cpu.usage_ns) - kernel) / kernel : 1;
    worst = std::max(worst, err);
    if (err > 0.01) {
      std::printf("figure exits: %s off by %.2f%%: record %.0f ns, kernel cpuacct %lld ns, unified %lld us\n",
                  path.c_str(), 100 * err, double(*c.cpu.usage_ns), static_cast<long long>(k.cpuacct_ns),
                  static_cast<long long>(k.usage_usec));
    }
    if (err <= 0.01) ++cpu_within;
    if (k.has_peak) {
      ++peak_expected;
      if (c.memory.max_usage_bytes) ++peak_present;
    }
    EXPECT_TRUE(c.exit->lifetime_ns.has_value());
    EXPECT_EQ(c.exit->reason, ExitReason::kCompleted);
  }
  // Records of the last exits may still wait for their second read (2 ms, later when busy).
  EXPECT_TRUE(testing::WaitFor([&] { return (*watcher)->stats().settling == 0; }, milliseconds(5000)));
  const ExitWatcherStats ws = (*watcher)->stats();
  const ExitTotals totals = records.totals();
  std::printf(
      "figure exits: %zu containers in %.1f s (%.1f/s), %zu scrapes; captured %zu (%.2f%%), CPU within 1%% %zu, worst "
      "error %.4f%%; memory peak %zu of %zu; watcher exits %lu missed %lu (%lu while reading) overflows %lu; records "
      "%zu, %zu bytes "
      "(%zu per record)\n",
      finals.size(), double(launched_ns) / 1e9, double(finals.size()) * 1e9 / double(launched_ns), scrapes.size(),
      captured, 100.0 * double(captured) / double(std::max<size_t>(1, finals.size())), cpu_within, 100 * worst,
      peak_present, peak_expected, static_cast<unsigned long>(ws.exits), static_cast<unsigned long>(ws.missed),
      static_cast<unsigned long>(ws.missed_reading), static_cast<unsigned long>(ws.overflows), totals.records,
      totals.bytes, totals.records ? totals.bytes / totals.records : 0);
  ASSERT_EQ(finals.size(), count) << "some containers could not be run";
  std::printf(
      "figure exits: the watcher thread %s, nice %d; later reads %lu, %lu of them found more CPU time (%lu the "
      "last read, after the first later one; at most %.3f ms added); load average at the start %s, at the end %s\n",
      ws.realtime ? "real-time (SCHED_FIFO)" : "ordinary", ws.nice, static_cast<unsigned long>(ws.later_reads),
      static_cast<unsigned long>(ws.settled), static_cast<unsigned long>(ws.settled_late),
      double(ws.settled_max_ns) / 1e6, load_at_start.c_str(), LoadAverage().c_str());
  EXPECT_GE(double(captured), (ws.realtime ? kRealtimeCaptureTarget : kCaptureTarget) * double(count));
  // CPU time is read first (kept fds), yet a record can differ from the kernel's figure read
  // before the removal with none missed while reading: one of 1,983 captured was 3.3 % off
  // with 0-10 ms removals; with the runtime's delay, two of 2,000 were over 1 % off (the
  // worse 1.6 %) at a load average of 1.4, one 3.0 % off at 6; one record 0.9 % off was
  // 30 us short of the kernel's figure, as if read before the exiting task's last CPU time
  // was charged: the watcher now reads the kept files again 2 ms and 12 ms after the final
  // read (ExitWatcherOptions::settle_ns), before the runtime's removal; what those reads add
  // is what the task runs after it left its cgroup (at most 0.38 ms seen), which a task
  // waiting for a busy CPU runs late. One record was 86 % off at a load average of 2.7
  // with only the 2 ms read, which that does not explain: the figure line above names
  // every record over 1 % off with both hierarchies' kernel figures.
  EXPECT_GE(double(cpu_within), (ws.realtime ? kRealtimeCaptureTarget : kCaptureTarget) * double(count));
  // The memory peak is read right after the CPU time; a removal between the two can take it.
  EXPECT_GE(double(peak_present), kCaptureTarget * double(peak_expected));
  EXPECT_EQ(totals.exits[static_cast<size_t>(ExitReason::kCompleted)], ws.exits);
}

}  // namespace
}  // namespace statlet
