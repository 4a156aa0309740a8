// What the exit path costs: container-like cgroups (a pod's children, each with a process
// that burns 2 ms and lives 100–500 ms, removed as soon as it exits) started at a fixed
// rate (default 60 ms apart: 1,000 a minute), with the exit watcher on and off in
// alternating rounds. Per round it reads
//   - the watcher thread's own CPU time (its thread clock): the exit path's cost per exit;
//   - the driver's CPU time: the same workload (mkdir, fork, wait, rmdir) on both sides, the
//     floor the watcher's cost is compared with. The driver is a process of its own (this
//     program re-executed with --drive): a process that forks makes its pages copy-on-write,
//     and a watcher beside such a driver paid the driver's page faults and TLB flushes (the
//     daemon forks nothing);
//   - the watcher's counters: both sides ran the same containers, and the watcher read
//     (or missed) every one of them.
// Prints medians of the rounds with [min–max] and the share of one CPU at 1,000 exits a
// minute. Needs root and a cgroup2 mount (the watcher's notification).
//
// usage: exit_path_bench [--containers N] [--rounds R] [--spacing-ms M]
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/monotonic_clock.h"
#include "bench/support/rounds.h"
#include "collector/exit_records.h"
#include "collector/exit_watcher.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/workloads.h"

namespace {

using statlet::ExitRecords;
using statlet::ExitWatcher;
using statlet::ExitWatcherOptions;
using statlet::MonotonicNowNs;
using statlet::bench::SpreadOf;
using statlet::testing::Child;
using statlet::testing::LiveCgroup;
using statlet::testing::UniqueName;
using std::chrono::milliseconds;

int64_t ProcessCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Round {
  bool watching = false;
  double driver_cpu_ns = 0;   // the driver process, the whole round
  double watcher_cpu_ns = 0;  // the watcher thread (watching rounds)
  size_t started = 0;         // containers whose process ran and exited
  uint64_t exits = 0, missed = 0;
};

// The driver (--drive): `count` containers under `pod`, `spacing` apart, each in a thread of
// its own (as a runtime's shims run side by side). Prints "<started> <cpu ns>".
int Drive(const std::string& pod, size_t count, milliseconds spacing, uint32_t seed) {
  const int64_t cpu0 = ProcessCpuNs();
  std::mt19937 rng(seed);  // the same lifetimes on both sides of a pair
  std::vector<std::thread> runners;
  std::vector<char> ran(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const int live_ms = std::uniform_int_distribution<int>(100, 500)(rng);
    runners.emplace_back([&, i, live_ms] {
      LiveCgroup cg(pod + "/" + std::string(64 - std::to_string(i).size(), 'e') + std::to_string(i));
      if (!cg.ok()) return;
      Child c(
          [live_ms] {
            const int64_t until = MonotonicNowNs() + int64_t{live_ms} * 1'000'000;
            statlet::testing::BurnCpu(2'000'000);
            if (const int64_t left = until - MonotonicNowNs(); left > 0)
              std::this_thread::sleep_for(std::chrono::nanoseconds(left));
            return uint64_t{0};
          },
          Child::kExits);
      if (!c.StartIn(cg)) return;
      c.Wait(milliseconds(30000));
      cg.Destroy();
      ran[i] = 1;
    });
    std::this_thread::sleep_for(spacing);  // the arrival rate, not a wait on anything
  }
  for (auto& t : runners) t.join();
  size_t started = 0;
  for (char c : ran) started += c;
  std::printf("%zu %lld\n", started, static_cast<long long>(ProcessCpuNs() - cpu0));
  return 0;
}

// Runs the driver as a process of its own; false when it did not run.
bool RunDriver(const std::string& pod, size_t count, milliseconds spacing, uint32_t seed, Round* r) {
  int out[2];
  if (pipe(out) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  const std::string n = std::to_string(count), ms = std::to_string(spacing.count()), sd = std::to_string(seed);
  char* const argv[] = {const_cast<char*>("/proc/self/exe"),
                        const_cast<char*>("--drive"),
                        const_cast<char*>(pod.c_str()),
                        const_cast<char*>(n.c_str()),
                        const_cast<char*>(ms.c_str()),
                        const_cast<char*>(sd.c_str()),
                        nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return false;
  }
  std::string got;
  char buf[256];
  for (ssize_t k; (k = read(out[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(k));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  unsigned long long started = 0;
  long long cpu = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || std::sscanf(got.c_str(), "%llu %lld", &started, &cpu) != 2)
    return false;
  r->started = started;
  r->driver_cpu_ns = static_cast<double>(cpu);
  return true;
}

Round RunRound(bool watching, const std::string& root, const std::string& pod, size_t count, milliseconds spacing,
               uint32_t seed) {
  Round r;
  r.watching = watching;
  ExitRecords records;
  std::unique_ptr<ExitWatcher> watcher;
  if (watching) {
    ExitWatcherOptions wo;
    wo.subtrees = {root};
    auto w = ExitWatcher::Start(wo, &records);
    if (!w.ok()) {
      std::fprintf(stderr, "exit watcher: %s\n", w.status().ToString().c_str());
      std::exit(2);
    }
    watcher = std::move(*w);
  }
  const int64_t watcher0 = watcher ? watcher->thread_cpu_ns() : 0;
  if (!RunDriver(pod, count, spacing, seed, &r)) {
    std::fprintf(stderr, "the driver process failed\n");
    std::exit(2);
  }
  if (watcher) {
    // The last removals' notifications may still be on their way: until every container is
    // accounted for (read or missed), bounded.
    const int64_t deadline = MonotonicNowNs() + 5'000'000'000;
    while (MonotonicNowNs() < deadline) {
      auto st = watcher->stats();
      if (st.exits + st.missed >= r.started) break;
      std::this_thread::sleep_for(milliseconds(10));
    }
    r.watcher_cpu_ns = static_cast<double>(watcher->thread_cpu_ns() - watcher0);
    auto st = watcher->stats();
    r.exits = st.exits;
    r.missed = st.missed;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && !std::strcmp(argv[1], "--drive")) {
    return Drive(argv[2], std::strtoul(argv[3], nullptr, 10), milliseconds(std::atoi(argv[4])),
                 static_cast<uint32_t>(std::strtoul(argv[5], nullptr, 10)));
  }
  size_t count = 120;
  int rounds = 6;
  int spacing_ms = 60;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--containers")) count = std::strtoul(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--spacing-ms")) spacing_ms = std::atoi(argv[i + 1]);
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "exit_path_bench needs root (real cgroups)\n");
    return 2;
  }
  const std::string root = "/" + UniqueName("statlet-bench-exits");
  const std::string pod = root + "/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  LiveCgroup top(root);
  LiveCgroup pod_cg(pod);
  if (!pod_cg.ok()) {
    std::fprintf(stderr, "cgroup %s: %s\n", pod.c_str(), pod_cg.error().c_str());
    return 2;
  }
  std::vector<double> on_cpu, off_cpu, watcher_per_exit;
  bool same_work = true;
  for (int i = 0; i < rounds; ++i) {
    // Pairs alternate which side goes first; a pair shares its lifetimes.
    const uint32_t seed = 35 + static_cast<uint32_t>(i / 2);
    const bool watching = (i % 2 == 0) != ((i / 2) % 2 == 1);
    Round r = RunRound(watching, root, pod, count, milliseconds(spacing_ms), seed);
    same_work = same_work && r.started == count;
    const double per = r.driver_cpu_ns / static_cast<double>(std::max<size_t>(1, r.started));
    if (r.watching) {
      on_cpu.push_back(per);
      watcher_per_exit.push_back(r.watcher_cpu_ns / static_cast<double>(std::max<uint64_t>(1, r.exits)));
      same_work = same_work && r.exits + r.missed == r.started;
      std::printf(
          "round %d watcher on:  %zu containers, driver %.0f us each, watcher %.0f us per exit "
          "(%llu read, %llu missed)\n",
          i, r.started, per / 1e3, watcher_per_exit.back() / 1e3, static_cast<unsigned long long>(r.exits),
          static_cast<unsigned long long>(r.missed));
    } else {
      off_cpu.push_back(per);
      std::printf("round %d watcher off: %zu containers, driver %.0f us each\n", i, r.started, per / 1e3);
    }
  }
  const auto on = SpreadOf(on_cpu), off = SpreadOf(off_cpu), w = SpreadOf(watcher_per_exit);
  std::printf("\nmedians over %d rounds of %zu containers, %d ms apart (%.0f a minute):\n", rounds, count, spacing_ms,
              60000.0 / spacing_ms);
  std::printf("  watcher thread CPU per exit     %8.1f us [%.1f-%.1f]\n", w.median / 1e3, w.min / 1e3, w.max / 1e3);
  std::printf("  driver CPU per container, on    %8.1f us [%.1f-%.1f]\n", on.median / 1e3, on.min / 1e3, on.max / 1e3);
  std::printf("  driver CPU per container, off   %8.1f us [%.1f-%.1f] (the floor)\n", off.median / 1e3, off.min / 1e3,
              off.max / 1e3);
  std::printf("  watcher / driver (off)          %8.3f\n", w.median / std::max(1.0, off.median));
  std::printf("  at 1,000 exits a minute: %.4f %% of one CPU (watcher thread)\n", w.median * 1000 / 60e9 * 100);
  if (!same_work) {
    std::fprintf(stderr, "the sides did not run the same containers, or the watcher lost count of some\n");
    return 1;
  }
  return 0;
}
