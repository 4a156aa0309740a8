// Cost of BpfProbes::Collect() with 1,000 live cgroups that all have entries in the kernel
// maps, against a peer measured in the same run: re-reading each cgroup's cpu.stat with
// kept fds (what the cgroupfs collector pays per cgroup for a single file).
//   statlet_bpf_collect_bench   (root; prints "ratio collect/cpu_stat_pread")
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bpf/bpf_probes.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"

namespace {

using statlet::testing::Child;
using statlet::testing::LiveCgroup;

constexpr int kCgroups = 1000;

struct World {
  std::unique_ptr<statlet::BpfProbes> probes;
  std::vector<std::unique_ptr<LiveCgroup>> cgroups;
  std::vector<uint64_t> ids;
  std::vector<int> cpu_stat_fds;
};
World* g_world = nullptr;

// Every probe, the scheduler ones too; every cgroup runs one short process, so each has
// faults and runqlat entries, and the cpu probe's walk visits it.
bool BuildWorld(World* w) {
  statlet::BpfOptions options = statlet::BpfOptions::WithMode(statlet::BpfMode::kOn);
  options.probes = statlet::BpfProbes::ProbeNames();
  auto probes = statlet::BpfProbes::Create(options);
  if (!probes.ok()) {
    std::fprintf(stderr, "probes: %s\n", probes.status().ToString().c_str());
    return false;
  }
  w->probes = std::move(probes).value();
  for (int i = 0; i < kCgroups; i++) {
    // The unified directory (the probes key by its inode) and v1 memory, as the probe tests.
    auto cg = std::make_unique<LiveCgroup>("/" + statlet::testing::UniqueName("statlet-bpf-bench"),
                                           std::vector<statlet::Hierarchy>{statlet::kUnified, statlet::kV1Memory});
    if (!cg->ok()) {
      std::fprintf(stderr, "cgroup: %s\n", cg->error().c_str());
      return false;
    }
    Child child(
        [] {
          auto* p = static_cast<volatile char*>(
              mmap(nullptr, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
          for (int j = 0; j < 16; j++) p[j * 4096] = 1;
          return 0;
        },
        Child::kExits);
    if (!child.StartIn(*cg) || child.Wait(std::chrono::seconds(30)) != 0) return false;
    w->ids.push_back(cg->id());
    w->cpu_stat_fds.push_back(open((cg->Dir(statlet::kUnified) + "/cpu.stat").c_str(), O_RDONLY | O_CLOEXEC));
    w->cgroups.push_back(std::move(cg));
  }
  return true;
}

void BM_Collect1000Cgroups(benchmark::State& state) {
  std::unordered_map<uint64_t, statlet::BpfCgroupStats> by_id;
  std::vector<statlet::OomEvent> ooms;
  size_t filled = 0;
  for (auto _ : state) {
    by_id.clear();
    g_world->probes->Collect(g_world->ids, &by_id, &ooms, true, true);
    filled = by_id.size();
  }
  if (filled != g_world->ids.size()) state.SkipWithError("not every live cgroup was filled");
  state.counters["cgroups"] = static_cast<double>(filled);
  state.counters["per_cgroup_ns"] = benchmark::Counter(
      static_cast<double>(kCgroups), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_PreadCpuStat1000Cgroups(benchmark::State& state) {
  char buf[512];
  for (auto _ : state) {
    for (int fd : g_world->cpu_stat_fds) benchmark::DoNotOptimize(pread(fd, buf, sizeof(buf), 0));
  }
}

BENCHMARK(BM_Collect1000Cgroups)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PreadCpuStat1000Cgroups)->Unit(benchmark::kMicrosecond);

// Prints the runs as usual and keeps each one's real time per iteration for the ratio.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (!r.error_occurred) real_ns[r.run_name.function_name] = r.GetAdjustedRealTime();
    }
  }
  std::map<std::string, double> real_ns;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (geteuid() != 0) {
    std::fprintf(stderr, "needs root\n");
    return 1;
  }
  World world;
  g_world = &world;
  if (!BuildWorld(&world)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  double collect = reporter.real_ns["BM_Collect1000Cgroups"];
  double peer = reporter.real_ns["BM_PreadCpuStat1000Cgroups"];
  if (collect > 0 && peer > 0) {
    std::printf("ratio collect/cpu_stat_pread at %d cgroups: %.2f (collect %.0f us, pread %.0f us)\n", kCgroups,
                collect / peer, collect, peer);
  }
  for (int fd : world.cpu_stat_fds) close(fd);
  world.probes.reset();
  return 0;
}
