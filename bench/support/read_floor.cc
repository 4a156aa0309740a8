#include "bench/support/read_floor.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

#include "collector/cgroup_discovery.h"
#include "collector/cgroup_files.h"
#include "collector/cgroup_path_classifier.h"
#include "collector/collector.h"
#include "tests/support/live_cgroup.h"

namespace statlet::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ThreadCpuMs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// What the floor learns of one cgroup while it sets up, as statlet's first collection does.
struct Cgroup {
  std::string rel;
  CgroupDiscovery::HierarchyMask mask = 0;
  Hierarchy procs_h = kNumHierarchies;  // the first hierarchy holding the path
  std::vector<pid_t> pids;              // its own processes
  uint64_t tree_procs = 0;              // its own and its descendants' (same procs_h)
};

std::string ParentPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string MedianRange(const std::vector<double>& v, int decimals) {
  const double lo = v.empty() ? 0 : *std::min_element(v.begin(), v.end());
  const double hi = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.*f [%.*f-%.*f]", decimals, Percentile(v, 0.5), decimals, lo, decimals, hi);
  return buf;
}

ReadFloor::ReadFloor(const std::string& root, CollectParts parts, size_t max_kept, CgroupFileSource* source)
    : budget_(FdBudget::ForKeptFiles(max_kept)), source_(source) {
  const CgroupHierarchies& h = testing::HostHierarchies();
  for (int i = 0; i < kNumHierarchies; ++i) {
    root_fds_[i] =
        h.has(static_cast<Hierarchy>(i)) ? ::open(h.mount[i].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  }
  proc_fd_ = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CgroupDiscovery discovery(h, {root});
  (void)discovery.Init();
  cgroups_ = discovery.paths().size();

  // A file statlet finds is kept open while the budget lasts, else opened on every read;
  // one it does not find is remembered as absent and never read.
  // A limit (written_only) is watched instead, as statlet does by default: not read per pass.
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  // The hierarchies whose files the daemon takes from the source's walks: as its collector
  // decides (CollectorOptions::min_walked_files at its default).
  const std::vector<const CgroupFileReader*> plan = BuildReadPlan(h, HugePageSizes("/sys/kernel/mm/hugepages"));
  uint32_t walked = 0;
  if (source_ != nullptr) {
    std::array<size_t, kNumHierarchies> per_cgroup{}, cgroups{};
    for (const CgroupFileReader* r : plan) {
      if (r->apply != nullptr && !r->written_only && source_->FileIndex(r->hierarchy, r->name) >= 0) {
        per_cgroup[r->hierarchy]++;
      }
    }
    for (const auto& [path, mask] : discovery.paths()) {
      for (int i = 0; i < kNumHierarchies; ++i) cgroups[i] += (mask >> i) & 1u;
    }
    for (int i = 0; i < kNumHierarchies; ++i) {
      if (CgroupFileSource::WalkPays(cgroups[i] * per_cgroup[i], false)) walked |= 1u << i;
    }
  }
  walked_ = walked;
  auto add = [&](Hierarchy hier, const std::string& rel, const char* name, bool written_only = false) {
    std::string file = rel + "/" + name;
    if ((walked & (1u << hier)) && !written_only && source_->FileIndex(hier, name) >= 0 &&
        ::faccessat(root_fds_[hier], file.c_str(), F_OK, 0) == 0) {
      ++rendered_;
      return;
    }
    if (written_only && inotify_fd_ >= 0) {
      if (::inotify_add_watch(inotify_fd_, (h.mount[hier] + "/" + file).c_str(), IN_MODIFY | IN_DONT_FOLLOW) >= 0) {
        ++watched_;
        return;
      }
    }
    int fd = ::openat(root_fds_[hier], file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    if (budget_.TryAcquire()) {
      kept_.push_back(fd);
    } else {
      ::close(fd);
      reopened_.push_back({root_fds_[hier], std::move(file)});
    }
  };

  // Pass 1 of a collection: the process lists of every cgroup, then subtree totals.
  std::map<std::string, Cgroup> tree;
  for (const auto& [path, mask] : discovery.paths()) {
    Cgroup& c = tree[path];
    c.rel = CgroupDiscovery::RelPath(path);
    c.mask = mask;
    for (int i = 0; i < kNumHierarchies && c.procs_h == kNumHierarchies; ++i) {
      if (mask & (1u << i)) c.procs_h = static_cast<Hierarchy>(i);
    }
    if (c.procs_h == kNumHierarchies) continue;
    add(c.procs_h, c.rel, "cgroup.procs");
    add(c.procs_h, c.rel, c.procs_h == kUnified ? "cgroup.threads" : "tasks");
    std::ifstream procs(h.mount[c.procs_h] + path + "/cgroup.procs");
    for (pid_t pid; procs >> pid;) c.pids.push_back(pid);
    c.tree_procs = c.pids.size();
  }
  for (auto it = tree.rbegin(); it != tree.rend(); ++it) {
    if (it->first == "/") continue;
    auto parent = tree.find(ParentPath(it->first));
    if (parent != tree.end() && parent->second.procs_h == it->second.procs_h) {
      parent->second.tree_procs += it->second.tree_procs;
    }
  }

  // Pass 2: the read plan of every reported cgroup (of its containers alone without
  // kNonContainerFiles); the process lists of its containers.
  for (const auto& [path, c] : tree) {
    const CgroupKind kind = ClassifyCgroupPath(path).kind;
    if (kind == CgroupKind::kOther && c.tree_procs == 0) continue;  // not reported
    const bool files = parts.ReadsFilesOf(kind == CgroupKind::kContainer);
    for (const CgroupFileReader* r : plan) {
      if (!files || !r->ReadIn(parts)) continue;
      if (c.mask & (1u << r->hierarchy)) add(r->hierarchy, c.rel, r->name, r->written_only);
    }
    if (kind == CgroupKind::kContainer) containers_.push_back(c.pids);
  }
}

ReadFloor::~ReadFloor() {
  for (int fd : kept_) ::close(fd);
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  for (int fd : root_fds_) {
    if (fd >= 0) ::close(fd);
  }
  if (proc_fd_ >= 0) ::close(proc_fd_);
}

size_t ReadFloor::processes() const {
  size_t n = 0;
  for (const auto& pids : containers_) n += pids.size();
  return n;
}

size_t ReadFloor::ReadFiles(double* reopen_ms) {
  static char buf[65536];
  size_t failed = 0;
  if (inotify_fd_ >= 0) (void)!::read(inotify_fd_, buf, sizeof buf);  // no limit written: EAGAIN
  if (rendered_ > 0) failed += !source_->Refresh(walked_).ok();
  for (int fd : kept_) failed += ::pread(fd, buf, sizeof buf, 0) < 0;
  const auto t0 = Clock::now();
  for (const Reopened& f : reopened_) {
    int fd = ::openat(f.root_fd, f.rel.c_str(), O_RDONLY | O_CLOEXEC);
    failed += fd < 0 || ::pread(fd, buf, sizeof buf, 0) < 0;
    if (fd >= 0) ::close(fd);
  }
  *reopen_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return failed;
}

size_t ReadFloor::ScanProcesses() {
  static char dents[32768];
  size_t listed = 0;
  for (const auto& pids : containers_) {
    for (pid_t pid : pids) {
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
    }
    struct rlimit rl;  // the first process stands for the container
    if (!pids.empty()) (void)::prlimit(pids.front(), RLIMIT_NOFILE, nullptr, &rl);
  }
  return listed;
}

FloorResult MeasureFloor(ReadFloor* floor, int passes, bool scan, std::chrono::nanoseconds gap) {
  std::vector<double> wall, cpu, reopen;
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
    const double c1 = ThreadCpuMs();
    next = t1 + gap;
    if (i == 0) continue;  // warm-up
    cpu.push_back(c1 - c0);
    wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    reopen.push_back(reopen_ms);
    r.failed_reads = failed;
    r.fds_listed = listed;
  }
  for (double c : cpu) r.cpu_ms += c / passes;
  r.cpu_p50_ms = Percentile(cpu, 0.5);
  r.p50_ms = Percentile(wall, 0.5);
  r.p99_ms = Percentile(wall, 0.99);
  r.reopen_ms = Percentile(reopen, 0.5);
  return r;
}

}  // namespace statlet::bench
