// The floor bench_cri measures statlet against: the kernel work a collection of the
// tree cannot avoid, with no parsing and no conversion —
//  - every file of statlet's read plan plus the process lists, for every cgroup directory
//    under root in every hierarchy holding it; kept fds up to the same budget statlet
//    uses (RLIMIT_NOFILE less 512), open+pread+close beyond it;
//  - optionally what the daemon adds by default (--collector.process-fds): for each
//    process of a container cgroup, a listing of /proc/<pid>/fd with a readlink per
//    entry, and its open-files rlimit.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "collector/kept_file.h"

namespace statlet::bench {

class ReadFloor {
 public:
  explicit ReadFloor(const std::string& root);
  ~ReadFloor();
  ReadFloor(const ReadFloor&) = delete;
  ReadFloor& operator=(const ReadFloor&) = delete;

  // One pass over the cgroup files; the number of reads that failed. *reopen_ms: the
  // part spent on the files beyond the fd budget.
  size_t ReadFiles(double* reopen_ms);
  // One pass over the container processes' fd tables; the number of fds listed.
  size_t ScanProcesses();

  size_t cgroups() const { return cgroups_; }
  size_t files() const { return kept_.size() + reopened_.size(); }
  size_t kept_fds() const { return budget_.used(); }
  size_t processes() const { return pids_.size(); }

 private:
  FdBudget budget_;
  std::vector<int> kept_;
  std::vector<std::string> reopened_;  // beyond the fd budget: opened for each read
  std::vector<pid_t> pids_;            // of the container cgroups
  size_t cgroups_ = 0;
  int proc_fd_ = -1;
};

struct FloorResult {
  double p50_ms = 0, p99_ms = 0, cpu_ms = 0;  // per pass
  size_t failed_reads = 0, fds_listed = 0;
  double reopen_ms = 0;  // median part spent reopening the files beyond the fd budget
};

// `passes` passes after one warm-up pass, `gap` apart (end to start) when non-zero, like
// the calls they stand beside. With `scan`: the process fd tables too.
FloorResult MeasureFloor(ReadFloor* floor, int passes, bool scan, std::chrono::nanoseconds gap);

// The p-quantile (0..1) of `v`, nearest rank; 0 when empty.
double Percentile(std::vector<double> v, double p);

}  // namespace statlet::bench
