// Cost of the per-process scans behind container_file_descriptors / container_sockets /
// container_ulimits_soft, per process, against floors measured in the same run:
//   BM_ProcessFdScan/N     statlet's scan of a process holding N fds (a quarter sockets)
//   BM_ReaddirFloor/N      libc opendir/readdir of the same fd directory, no readlink: the
//                          cost of listing alone (what a count without sockets would pay)
//   BM_UlimitPrlimit       prlimit(2) of the process (same uid)
//   BM_UlimitLimitsFile    /proc/<pid>/limits read and parsed (the fallback)
// The scanned processes are children of the bench holding their fds until it exits.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include <benchmark/benchmark.h>

#include "collector/process_fd_scanner.h"

namespace statlet {
namespace {

std::map<int, pid_t>& Holders() {
  static std::map<int, pid_t> holders;
  return holders;
}

// A child holding `n` fds beyond stdio: n/4 sockets (socket pairs), the rest /dev/null.
pid_t Holder(int n) {
  auto& holders = Holders();
  if (auto it = holders.find(n); it != holders.end()) return it->second;
  int ready[2];
  if (pipe(ready) != 0) abort();
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    int sockets = n / 4 / 2 * 2;
    for (int i = 0; i < sockets / 2; ++i) {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) _exit(1);
    }
    for (int i = sockets; i < n; ++i) {
      if (open("/dev/null", O_RDONLY) < 0) _exit(1);
    }
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    while (true) pause();
  }
  close(ready[1]);
  char c;
  if (read(ready[0], &c, 1) != 1) abort();
  close(ready[0]);
  holders[n] = pid;
  return pid;
}

void BM_ProcessFdScan(benchmark::State& state) {
  pid_t pid = Holder(static_cast<int>(state.range(0)));
  ProcessFdScanner scanner("/proc");
  ProcessFdCounts last;
  for (auto _ : state) {
    ProcessFdCounts c;
    int err = 0;
    if (scanner.Count(static_cast<uint32_t>(pid), &c, &err) != ReadOutcome::kOk) state.SkipWithError("scan failed");
    last = c;
    benchmark::DoNotOptimize(c);
  }
  state.counters["fds"] = static_cast<double>(last.fds);
  state.counters["sockets"] = static_cast<double>(last.sockets);
  state.counters["ns_per_fd"] = benchmark::Counter(static_cast<double>(last.fds) * state.iterations(),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ProcessFdScan)->Arg(8)->Arg(64)->Arg(512);

void BM_ReaddirFloor(benchmark::State& state) {
  pid_t pid = Holder(static_cast<int>(state.range(0)));
  std::string path = "/proc/" + std::to_string(pid) + "/fd";
  for (auto _ : state) {
    DIR* d = opendir(path.c_str());
    uint64_t n = 0;
    while (readdir(d) != nullptr) ++n;
    closedir(d);
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_ReaddirFloor)->Arg(8)->Arg(64)->Arg(512);

void BM_UlimitPrlimit(benchmark::State& state) {
  pid_t pid = Holder(8);
  ProcessFdScanner scanner("/proc");
  for (auto _ : state) {
    uint64_t v = 0;
    int err = 0;
    if (scanner.MaxOpenFilesSoft(static_cast<uint32_t>(pid), &v, &err) != ReadOutcome::kOk)
      state.SkipWithError("prlimit");
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_UlimitPrlimit);

void BM_UlimitLimitsFile(benchmark::State& state) {
  pid_t pid = Holder(8);
  ProcessFdScanner scanner("/proc/.");  // not "/proc": the limits file path
  for (auto _ : state) {
    uint64_t v = 0;
    int err = 0;
    if (scanner.MaxOpenFilesSoft(static_cast<uint32_t>(pid), &v, &err) != ReadOutcome::kOk)
      state.SkipWithError("limits");
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(BM_UlimitLimitsFile);

}  // namespace
}  // namespace statlet

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (auto [n, pid] : statlet::Holders()) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  return 0;
}
