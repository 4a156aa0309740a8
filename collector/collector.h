// Collector: discovery + readers. Collect() walks the tracked cgroups once, reading every
// file through kept fds, and returns a Snapshot (without rates or enrichment). Not
// thread-safe: the Sampler serialises calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "collector/cgroup_file_source.h"
#include "collector/cgroup_files.h"
#include "collector/enrichment.h"
#include "snapshot/snapshot.h"

namespace statlet {

class CgroupFileSource;

struct CollectorOptions {
  std::string cgroup_mount = "/sys/fs/cgroup";  // where the hierarchies are mounted
  std::string proc_root = "/proc";
  // Restrict to these cgroup subtrees (paths relative to the hierarchy root, e.g.
  // "/kubepods.slice"). Empty: the whole tree.
  std::vector<std::string> subtrees;
  // Report cgroups that are neither Kubernetes/runtime cgroups nor populated.
  bool include_empty = false;
  // Cardinality guard: at most this many cgroups reported (0 = no cap); the rest are
  // counted in CollectionStats and dropped.
  size_t max_cgroups = 0;
  // Read network counters of each pod's namespace.
  bool network = true;
  // Also read the host's namespace for cgroups in it (host_network stays set): the host's
  // interfaces, for SampleRules::host_network_interfaces (cAdvisor's behaviour). Off: a
  // cgroup in the host's namespace gets host_network and no namespace.
  bool host_network_interfaces = false;
  // Scan every process of each container cgroup: open fds and sockets (/proc/<pid>/fd) and
  // the first process's RLIMIT_NOFILE soft limit. Costs a directory listing and a readlink
  // per fd, so it is off unless asked for (the daemon asks: --collector.process-fds), and
  // then runs only in collections whose callers need it (CollectParts::kProcessFds).
  bool process_fds = false;
  // Cgroup files kept open across collections, at most (also capped by RLIMIT_NOFILE, see
  // FdBudget); the rest are opened, read and closed on every collection. A kept cgroupfs
  // file holds a seq_file page, a struct file and kernfs state of kernel memory, charged to
  // statlet's own memory cgroup, so the count is capped. Keeping a file saves the same open
  // and close whatever the file (bench/collector/kept_file_bench; figures in
  // bench/RESULTS.md), so the budget has no kind of file to prefer.
  size_t max_kept_files = kDefaultMaxKeptFiles;
  static constexpr size_t kDefaultMaxKeptFiles = 4096;
  // Serve the files only a write of their own changes (limits, periods: see
  // CgroupFileReader::written_only) from memory between inotify events, instead of reading
  // them every collection (limit_watch.h). They then hold no kept fd either.
  bool watch_limits = true;
  // A watch per such file (6 or 7 per reported cgroup) counts against
  // fs.inotify.max_user_watches, which every process of the user shares (the kubelet,
  // containerd, systemd): at most this many, and at most an eighth of that sysctl; the
  // files beyond are read every time.
  size_t max_limit_watches = 65536;
  // Files no served family needs are left out of every collection (see FileSets).
  FileSets files;
  // Where the kernel lists its huge page sizes (one hugetlb file set per size).
  std::string hugepages_dir = "/sys/kernel/mm/hugepages";
  // Unified-hierarchy files rendered by another source (the eBPF cgroup iterator,
  // BpfProbes::FileSource()) instead of read; null: every file from cgroupfs. Not owned;
  // must outlive the collector, and is used only from the collecting thread.
  CgroupFileSource* file_source = nullptr;
  // A hierarchy's files come from the source only while a collection reads at least this
  // many of them there (its cgroups times the files the source renders of each), and stop
  // below three quarters of it; below, they are read (CgroupFileSource::kMinWalkedFiles).
  size_t min_walked_files = CgroupFileSource::kMinWalkedFiles;
  // Threads reading cgroup files in a collection, the collecting one included (at most the
  // CPUs this process may run on). A cgroupfs read is CPU work in the kernel (formatting
  // memory.stat, summing PSI), so a second thread takes latency off a collection for some
  // more CPU (collection_bench and bench_cri measure both sides; bench/RESULTS.md). A node
  // short of CPU rather than of time sets 1. Collections of fewer than kMinParallelCgroups
  // cgroups use one thread.
  size_t read_threads = 2;
  static constexpr size_t kMinParallelCgroups = 16;
  size_t min_parallel_cgroups = kMinParallelCgroups;
};

class Collector {
 public:
  static StatusOr<std::unique_ptr<Collector>> Create(const CollectorOptions& options);
  virtual ~Collector() = default;
  // Reads the optional `parts` the options allow (e.g. process_fds) and records in the
  // snapshot which it read.
  virtual StatusOr<Snapshot> Collect(CollectParts parts) = 0;
  StatusOr<Snapshot> Collect() { return Collect(CollectParts::All()); }
  // As Collect(parts), knowing from the runtime's metadata which containers are pods'
  // sandboxes: without CollectParts::kSandboxFiles their files are not read.
  virtual StatusOr<Snapshot> CollectKnowing(CollectParts parts, const MetadataMap&) { return Collect(parts); }
  // How this host mounts its hierarchies: "v2", "hybrid" or "v1" (CgroupHierarchies::Mode).
  virtual const char* CgroupMode() const = 0;
};

}  // namespace statlet
