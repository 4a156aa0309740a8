// What the probes cost the workloads they observe, probes on vs off in one run:
//   switch  two processes pinned to one CPU ping-pong a byte over pipes (as
//           `perf bench sched pipe`): every round trip is two context switches, so the
//           sched_switch program (runqlat, faults) runs twice per round trip.
//   faults  a process touches fresh 4 KiB pages of anonymous memory: one page fault each.
// Cost is the workload's own CPU time (user + system, from wait4), so waiting for a CPU
// that other processes use does not count. Each round measures three modes in rotating
// order: off, the probes on, and the floor — an empty program on sched_switch, what any
// scheduler probe pays for the tracepoint and BPF dispatch alone. Columns are medians of
// ns, ratios medians of the per-round ratios (on/floor: what the probes' bodies add to
// that dispatch). The default probe set has nothing on sched_switch: its on/off is 1. Then, with the kernel's BPF
// run-time statistics on (they add clock reads of their own, so not during the rounds), one pass of each workload gives
// each program's mean ns per run: its body without the dispatch, plus the statistics' clock reads, which are what the
// empty program (statlet_floor) shows.
//   statlet_bpf_overhead_bench [rounds] [probe,probe,...]   (root; default: the default set)
#include <bpf/bpf.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bpf/empty_switch_program.h"
#include "bench/bpf/program_stats.h"
#include "bpf/bpf_probes.h"

namespace {

using statlet::bench::HighestProgramId;
using statlet::bench::StatletProgramsAfter;

constexpr int kRoundTrips = 100000;
constexpr size_t kFaultPages = 32768;  // 128 MiB per pass
constexpr int kFaultPasses = 2;

double CpuNs(const rusage& ru) {
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

// Forks `body` and returns the child's CPU time in ns (negative on failure).
double ChildCpuNs(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(body());
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return CpuNs(ru);
}

void PinLastCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(sysconf(_SC_NPROCESSORS_ONLN) - 1, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

// CPU ns per round trip of the pipe ping-pong (both processes).
double SwitchCostNs() {
  double ns = ChildCpuNs([] {
    PinLastCpu();
    int ping[2], pong[2];
    if (pipe(ping) != 0 || pipe(pong) != 0) return 1;
    pid_t peer = fork();
    if (peer == 0) {
      char c;
      for (int i = 0; i < kRoundTrips; i++) {
        if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1) _exit(1);
      }
      _exit(0);
    }
    char c = 'x';
    for (int i = 0; i < kRoundTrips; i++) {
      if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) return 1;
    }
    int status;
    waitpid(peer, &status, 0);  // its CPU time is folded into ours (RUSAGE_CHILDREN)
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
  });
  return ns / kRoundTrips;
}

// CPU ns per page fault on fresh anonymous pages.
double FaultCostNs() {
  double ns = ChildCpuNs([] {
    const size_t len = kFaultPages * 4096;
    for (int pass = 0; pass < kFaultPasses; pass++) {
      auto* p =
          static_cast<volatile char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      if (p == MAP_FAILED) return 1;
      madvise(const_cast<char*>(p), len, MADV_NOHUGEPAGE);
      for (size_t i = 0; i < kFaultPages; i++) p[i * 4096] = 1;
      munmap(const_cast<char*>(p), len);
    }
    return 0;
  });
  return ns / (kFaultPages * kFaultPasses);
}

// Runs each workload once with run-time statistics on and prints, for every program
// loaded by this call, its runs and mean ns per run.
void PrintProgramCosts(const statlet::BpfOptions& options) {
  const uint32_t before = HighestProgramId();
  auto probes = statlet::BpfProbes::Create(options);
  if (!probes.ok()) return;
  statlet::bench::EmptySwitchProgram floor;  // statlet_floor: the statistics' own cost
  if (!floor.Attach()) return;
  int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (stats_fd < 0) {
    std::printf("program run-time statistics unavailable\n");
    return;
  }
  const double switch_ns = SwitchCostNs();
  const double fault_ns = FaultCostNs();
  std::printf("%-28s %12s %14s   (stats on: switch %.0f ns/round trip, faults %.0f ns/fault)\n", "program", "runs",
              "ns/run", switch_ns, fault_ns);
  for (const auto& [id, info] : StatletProgramsAfter(before)) {
    std::printf("%-28s %12llu %14.1f\n", info.name, static_cast<unsigned long long>(info.run_cnt),
                info.run_cnt ? static_cast<double>(info.run_time_ns) / info.run_cnt : 0.0);
  }
  close(stats_fd);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::fprintf(stderr, "needs root\n");
    return 1;
  }
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  statlet::BpfOptions options = statlet::BpfOptions::WithMode(statlet::BpfMode::kOn);
  if (argc > 2) {
    std::string list = argv[2];
    for (size_t start = 0; start <= list.size();) {
      size_t comma = std::min(list.find(',', start), list.size());
      if (comma > start) options.probes.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
  }
  // Three modes per round, in rotating order: off, the probes on, and the floor (an empty
  // program on sched_switch). Ratios are taken within a round.
  enum Mode { kOff, kOn, kFloor, kModes };
  struct Workload {
    const char* name;
    double (*cost)();
    std::vector<double> ns[kModes], on_ratio, floor_ratio, on_floor_ratio;
  };
  Workload workloads[] = {{"switch (ns/round trip)", SwitchCostNs, {}, {}, {}, {}},
                          {"faults (ns/fault)", FaultCostNs, {}, {}, {}, {}}};
  for (int r = 0; r < rounds; r++) {
    double cost[kModes][2] = {};
    for (int k = 0; k < kModes; k++) {
      const Mode mode = static_cast<Mode>((r + k) % kModes);
      std::unique_ptr<statlet::BpfProbes> probes;
      std::unique_ptr<statlet::bench::EmptySwitchProgram> floor;
      if (mode == kOn) {
        auto created = statlet::BpfProbes::Create(options);
        if (!created.ok()) {
          std::fprintf(stderr, "probes: %s\n", created.status().ToString().c_str());
          return 1;
        }
        probes = std::move(created).value();
      } else if (mode == kFloor) {
        floor = std::make_unique<statlet::bench::EmptySwitchProgram>();
        if (!floor->Attach()) return 1;
      }
      // One untimed pass each first: loading or unloading the probes allocates or frees
      // their maps (megabytes, partly through RCU), and the first faults after that see a
      // different page allocator state; measured are the passes after it settled.
      for (int w = 0; w < 2; w++) workloads[w].cost();
      for (int w = 0; w < 2; w++) {
        cost[mode][w] = workloads[w].cost();
        if (cost[mode][w] <= 0) {
          std::fprintf(stderr, "workload %s failed\n", workloads[w].name);
          return 1;
        }
      }
    }
    for (Workload& w : workloads) {
      const int i = &w - workloads;
      for (int m = 0; m < kModes; m++) w.ns[m].push_back(cost[m][i]);
      w.on_ratio.push_back(cost[kOn][i] / cost[kOff][i]);
      w.floor_ratio.push_back(cost[kFloor][i] / cost[kOff][i]);
      w.on_floor_ratio.push_back(cost[kOn][i] / cost[kFloor][i]);
    }
  }
  std::printf("%-24s %10s %10s %10s %10s %12s %10s\n", "workload", "off", "on", "floor", "on/off", "floor/off",
              "on/floor");
  for (const Workload& w : workloads) {
    std::printf("%-24s %10.1f %10.1f %10.1f %10.3f %12.3f %10.3f\n", w.name, Median(w.ns[kOff]), Median(w.ns[kOn]),
                Median(w.ns[kFloor]), Median(w.on_ratio), Median(w.floor_ratio), Median(w.on_floor_ratio));
  }
  std::string loaded;
  for (const std::string& p : options.probes.empty() ? statlet::BpfProbes::DefaultProbeNames() : options.probes) {
    loaded += (loaded.empty() ? "" : ",") + p;
  }
  std::printf(
      "rounds: %d, probes: %s (medians of per-round ratios; targets: default set on/off 1.00, scheduler "
      "probes on/floor <= 1.015)\n",
      rounds, loaded.c_str());
  PrintProgramCosts(options);
  return 0;
}
