// ListContainerStats: containerd 1.6 (the runtime's own answer, gathered through one shim
// call per container) against statlet's (one collection over kept cgroup fds), on the same
// running containers, for 10 and 50 containers.
//
// For each side: per-call latency (median and mean over --calls sequential calls) and the
// CPU time its processes spent answering them (containerd plus its shims; statlet's agent),
// from /proc/<pid>/stat. statlet collects afresh on every call here (--cri.max-age=0s), its
// worst case; the runtime client's periodic ListContainerStats is off so that containerd's
// CPU is the bench's alone.
//
// Prints a table and exits non-zero when statlet is not faster per call than containerd
// (the target is >= 5x; the figure is reported, the floor is only "faster").
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "tests/e2e/e2e_stage.h"

namespace statlet::e2e {
namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  double median_ms = 0, mean_ms = 0, cpu_ms = 0;
  size_t containers_seen = 0;
};

uint64_t CpuOf(const std::vector<pid_t>& pids) {
  uint64_t sum = 0;
  for (pid_t p : pids) sum += ProcessCpuNs(p);
  return sum;
}

StatusOr<Figures> Measure(v1::RuntimeService::Stub* stub, const std::vector<pid_t>& pids, int calls) {
  // Two warm-up calls: connections, caches and (containerd) the first-call rate state.
  for (int i = 0; i < 2; ++i) {
    v1::ListContainerStatsResponse r;
    grpc::Status s = stub->ListContainerStats(CallContext().get(), v1::ListContainerStatsRequest(), &r);
    if (!s.ok()) return Unavailable(s.error_message());
  }
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(calls));
  Figures f;
  const uint64_t cpu_before = CpuOf(pids);
  for (int i = 0; i < calls; ++i) {
    v1::ListContainerStatsResponse r;
    auto t0 = Clock::now();
    grpc::Status s = stub->ListContainerStats(CallContext().get(), v1::ListContainerStatsRequest(), &r);
    auto t1 = Clock::now();
    if (!s.ok()) return Unavailable(s.error_message());
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    f.containers_seen = static_cast<size_t>(r.stats_size());
  }
  f.cpu_ms = static_cast<double>(CpuOf(pids) - cpu_before) / 1e6;
  std::sort(ms.begin(), ms.end());
  f.median_ms = ms[ms.size() / 2];
  f.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  return f;
}

int Run(int calls) {
  StageOptions options;
  options.agent_binary = STATLET_E2E_AGENT;
  options.harness_script = STATLET_E2E_HARNESS;
  options.agent_flags = {"--cri.max-age=0s", "--runtime.stats-period=0s"};
  auto stage = E2eStage::Start(options);
  if (!stage.ok()) {
    std::fprintf(stderr, "stage: %s\n", stage.status().ToString().c_str());
    return 1;
  }
  E2eStage& st = **stage;
  constexpr int kPerPod = 5;
  std::vector<Pod> pods;
  int running = 0;
  bool slower = false;
  std::printf("%-10s %-10s %12s %12s %16s %10s\n", "containers", "server", "median ms", "mean ms", "CPU ms/100 calls",
              "listed");
  for (int target : {10, 50}) {
    while (running < target) {
      if (running % kPerPod == 0) {
        auto pod = st.driver().RunPod({"bench-" + std::to_string(pods.size()), "e2e-bench", {}});
        if (!pod.ok()) {
          std::fprintf(stderr, "RunPod: %s\n", pod.status().ToString().c_str());
          return 1;
        }
        pods.push_back(*pod);
      }
      auto id = st.driver().StartContainer(pods.back(),
                                           {"idle-" + std::to_string(running), {"sh", "-c", "exec sleep 2147483647"}});
      if (!id.ok()) {
        std::fprintf(stderr, "StartContainer: %s\n", id.status().ToString().c_str());
        return 1;
      }
      ++running;
    }
    auto theirs = Measure(st.containerd(), st.ContainerdPids(), calls);
    auto ours = Measure(st.statlet(), {st.agent_pid()}, calls);
    if (!theirs.ok() || !ours.ok()) {
      std::fprintf(stderr, "ListContainerStats failed: %s %s\n", theirs.status().ToString().c_str(),
                   ours.status().ToString().c_str());
      return 1;
    }
    const double per100 = 100.0 / calls;
    std::printf("%-10d %-10s %12.3f %12.3f %16.1f %10zu\n", target, "containerd", theirs->median_ms, theirs->mean_ms,
                theirs->cpu_ms * per100, theirs->containers_seen);
    std::printf("%-10d %-10s %12.3f %12.3f %16.1f %10zu\n", target, "statlet", ours->median_ms, ours->mean_ms,
                ours->cpu_ms * per100, ours->containers_seen);
    const double speedup = theirs->median_ms / ours->median_ms;
    std::printf("%-10d speedup per call (median) %.1fx, CPU %.1fx (target >= 5x)\n", target, speedup,
                ours->cpu_ms > 0 ? theirs->cpu_ms / ours->cpu_ms : 0.0);
    if (ours->containers_seen < static_cast<size_t>(target) || theirs->containers_seen < static_cast<size_t>(target)) {
      std::fprintf(stderr, "an answer lists fewer than %d containers\n", target);
      return 1;
    }
    if (speedup <= 1.0) slower = true;
  }
  for (const Pod& p : pods) {
    if (Status s = st.driver().RemovePod(p); !s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  }
  st.Stop();
  return slower ? 1 : 0;
}

}  // namespace
}  // namespace statlet::e2e

int main(int argc, char** argv) {
  int calls = 100;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::max(1, std::atoi(argv[i + 1]));
  }
  return statlet::e2e::Run(calls);
}
