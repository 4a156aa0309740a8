#include "bench/cri/read_floor.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>

#include "bench/cri/bench_cgroups.h"
#include "collector/cgroup_discovery.h"
#include "collector/cgroup_files.h"

namespace statlet::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ThreadCpuMs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// A container cgroup's path ends in "/<64 hex>".
bool IsContainerPath(const std::string& path) {
  return path.size() > 65 && path.rfind('/') == path.size() - 65;
}

}  // namespace

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

ReadFloor::ReadFloor(const std::string& root) : budget_(FdBudget::FromRlimit(512)) {
  std::vector<std::pair<Hierarchy, std::string>> names;
  for (const auto* r : BuildReadPlan(Hier())) names.push_back({r->hierarchy, r->name});
  const Hierarchy ph = Hier().has(kUnified) ? kUnified : Hier().cpu();
  names.push_back({ph, "cgroup.procs"});
  names.push_back({ph, ph == kUnified ? "cgroup.threads" : "tasks"});
  CgroupDiscovery d(Hier(), {root});
  (void)d.Init();
  cgroups_ = d.paths().size();
  for (const auto& [path, mask] : d.paths()) {
    for (const auto& [h, name] : names) {
      if (!(mask & (1u << h))) continue;
      std::string p = Hier().mount[h] + path + "/" + name;
      int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;  // statlet marks it absent and never reads it again
      if (budget_.TryAcquire()) {
        kept_.push_back(fd);
      } else {
        ::close(fd);
        reopened_.push_back(p);
      }
    }
    if (IsContainerPath(path)) {
      std::ifstream procs(Hier().mount[ph] + path + "/cgroup.procs");
      for (pid_t pid; procs >> pid;) pids_.push_back(pid);
    }
  }
  proc_fd_ = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

ReadFloor::~ReadFloor() {
  for (int fd : kept_) ::close(fd);
  if (proc_fd_ >= 0) ::close(proc_fd_);
}

size_t ReadFloor::ReadFiles(double* reopen_ms) {
  static char buf[65536];
  size_t failed = 0;
  for (int fd : kept_) failed += ::pread(fd, buf, sizeof buf, 0) < 0;
  auto t0 = Clock::now();
  for (const std::string& path : reopened_) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    failed += fd < 0 || ::pread(fd, buf, sizeof buf, 0) < 0;
    if (fd >= 0) ::close(fd);
  }
  *reopen_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return failed;
}

size_t ReadFloor::ScanProcesses() {
  static char dents[32768];
  size_t listed = 0;
  for (pid_t pid : pids_) {
    char path[32];
    std::snprintf(path, sizeof path, "%d/fd", pid);
    int dir = ::openat(proc_fd_, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) continue;
    long n;
    while ((n = ::syscall(SYS_getdents64, dir, dents, sizeof dents)) > 0) {
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(dents + off);
        off += d->d_reclen;
        if (d->d_name[0] == '.') continue;
        char link[8];  // the prefix tells a socket
        (void)!::readlinkat(dir, d->d_name, link, sizeof link);
        ++listed;
      }
    }
    ::close(dir);
    struct rlimit rl;
    (void)::prlimit(pid, RLIMIT_NOFILE, nullptr, &rl);  // one process per container here
  }
  return listed;
}

FloorResult MeasureFloor(ReadFloor* floor, int passes, bool scan, std::chrono::nanoseconds gap) {
  std::vector<double> wall, reopen;
  double cpu_ms = 0;
  FloorResult r;
  auto next = Clock::now();
  for (int i = 0; i < passes + 1; ++i) {
    std::this_thread::sleep_until(next);  // pacing, as the calls are paced
    const double c0 = ThreadCpuMs();
    const auto t0 = Clock::now();
    double reopen_ms = 0;
    const size_t failed = floor->ReadFiles(&reopen_ms);
    const size_t listed = scan ? floor->ScanProcesses() : 0;
    const auto t1 = Clock::now();
    next = t1 + gap;
    if (i == 0) continue;  // warm-up
    cpu_ms += ThreadCpuMs() - c0;
    wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    reopen.push_back(reopen_ms);
    r.failed_reads = failed;
    r.fds_listed = listed;
  }
  r.cpu_ms = cpu_ms / passes;
  r.p50_ms = Percentile(wall, 0.5);
  r.p99_ms = Percentile(wall, 0.99);
  r.reopen_ms = Percentile(reopen, 0.5);
  return r;
}

}  // namespace statlet::bench
