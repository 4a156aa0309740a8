// The floor every whole-process bench measures statlet against: the kernel work one
// collection of a cgroup subtree cannot avoid, with no parsing and no conversion. It reads
// exactly the files statlet's collector reads on this host, through the same policy:
//  - for every cgroup under root: cgroup.procs and cgroup.threads (or v1 tasks) from the
//    first hierarchy holding the path; for the cgroups statlet reports (Kubernetes ones and
//    populated ones), every file of BuildReadPlan in every hierarchy holding the path that a
//    collection of the given parts reads (the CRI stats calls: no detail files);
//    files this kernel lacks are left out, as statlet remembers them absent;
//  - the limits statlet serves from memory between inotify events (written_only files)
//    watched, not read: one read() of the inotify fd per pass;
//  - with a file source (the daemon's cgroup_stats eBPF probe, loaded in this process too),
//    the files it renders not read where the daemon walks instead (a hierarchy with at least
//    CgroupFileSource::kMinWalkedFiles of them): one walk per pass and hierarchy;
//  - kept fds re-read with pread, under the daemon's default fd budget (RLIMIT_NOFILE less
//    512, at most CollectorOptions::kDefaultMaxKeptFiles),
//    taken in the order of statlet's first collection (process lists, then the rest);
//    files beyond it opened, read and closed on every pass, relative to the hierarchy root;
//  - optionally what the daemon adds by default (--collector.process-fds): for every process
//    of a container cgroup a listing of /proc/<pid>/fd with a readlink per entry, and the
//    open-files rlimit of the container's first process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "collector/cgroup_file_source.h"
#include "collector/cgroup_hierarchies.h"
#include "collector/collector.h"
#include "collector/kept_file.h"
#include "snapshot/collect_parts.h"

namespace statlet::bench {

class ReadFloor {
 public:
  // The files a collection of `parts` reads for `root` (as --collector.subtree) as the tree
  // is now. Each instance keeps fds under its own budget (the daemon's default, or
  // `max_kept`, both capped by RLIMIT_NOFILE): keep one alive at a time.
  explicit ReadFloor(const std::string& root, CollectParts parts = CollectParts::All(),
                     size_t max_kept = CollectorOptions::kDefaultMaxKeptFiles, CgroupFileSource* source = nullptr);
  ~ReadFloor();
  ReadFloor(const ReadFloor&) = delete;
  ReadFloor& operator=(const ReadFloor&) = delete;

  // One pass over the cgroup files; the number of reads that failed. *reopen_ms: the
  // part spent on the files beyond the fd budget.
  size_t ReadFiles(double* reopen_ms);
  // One pass over the container processes' fd tables; the number of fds listed.
  size_t ScanProcesses();

  size_t cgroups() const { return cgroups_; }
  size_t files() const { return kept_.size() + reopened_.size() + rendered_; }
  size_t kept_fds() const { return budget_.used(); }
  size_t watched() const { return watched_; }    // limits watched instead of read
  size_t rendered() const { return rendered_; }  // files the source's walks stand in for
  size_t processes() const;

 private:
  struct Reopened {
    int root_fd;
    std::string rel;  // "path/name" under the hierarchy root
  };

  FdBudget budget_;
  int root_fds_[kNumHierarchies];
  std::vector<int> kept_;
  std::vector<Reopened> reopened_;
  std::vector<std::vector<pid_t>> containers_;  // the processes of each container cgroup
  size_t cgroups_ = 0;
  int proc_fd_ = -1;
  int inotify_fd_ = -1;
  size_t watched_ = 0;
  CgroupFileSource* source_ = nullptr;
  uint32_t walked_ = 0;  // the hierarchies walked (bit h), as the daemon's collector picks them
  size_t rendered_ = 0;
};

struct FloorResult {
  double p50_ms = 0, p99_ms = 0;      // wall time per pass
  double cpu_ms = 0, cpu_p50_ms = 0;  // CPU time per pass (this thread): mean, median
  size_t failed_reads = 0, fds_listed = 0;
  double reopen_ms = 0;  // median part spent reopening the files beyond the fd budget
};

// `passes` passes after one warm-up pass, `gap` apart (end to start) when non-zero, like
// the calls they stand beside. With `scan`: the process fd tables too.
FloorResult MeasureFloor(ReadFloor* floor, int passes, bool scan, std::chrono::nanoseconds gap);

// The p-quantile (0..1) of `v`, nearest rank; 0 when empty.
double Percentile(std::vector<double> v, double p);

// "median [min-max]" of `v` with `decimals` digits after the point: how every bench shows
// a figure over its rounds. "0 [0-0]" when empty.
std::string MedianRange(const std::vector<double>& v, int decimals);

}  // namespace statlet::bench
