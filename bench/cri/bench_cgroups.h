// The cgroups bench_cri makes: a kubelet-shaped tree of sleeping "containers", and a
// cgroup of its own for each measured server process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "collector/cgroup_hierarchies.h"

namespace statlet::bench {

// The host's hierarchies, detected once.
const CgroupHierarchies& Hier();

// root/kubepods/burstable/pod<uid>/<64-hex id> in every mounted hierarchy, `per_pod`
// containers per pod, one sleeping process per container cgroup (holding only stdio, as
// a container's process would). Removed on destruction: processes killed, directories
// deepest first.
class KubeletTree {
 public:
  KubeletTree(std::string root, size_t containers, size_t per_pod);
  ~KubeletTree();
  KubeletTree(const KubeletTree&) = delete;
  KubeletTree& operator=(const KubeletTree&) = delete;

  const std::string& root() const { return root_; }
  size_t pods() const { return pods_; }
  bool ok() const { return !mounts_.empty() && !dirs_.empty(); }

 private:
  void Mkdir(const std::string& rel);

  std::string root_;
  size_t pods_ = 0;
  std::vector<std::string> mounts_;
  std::vector<std::string> dirs_;  // absolute, in creation order
  std::vector<pid_t> pids_;
};

// A cgroup of its own for a server process (beside the measured tree, so statlet does
// not see it): its CPU counter includes every thread, exited ones too, at ns precision —
// /proc/<pid>/stat counts 10 ms ticks, and gRPC's thread pool starts and ends threads.
// Create it before the process and destroy it after, so that rmdir finds it empty.
class ServerCgroup {
 public:
  explicit ServerCgroup(const std::string& rel);  // rel: relative to the hierarchy root
  ~ServerCgroup();
  ServerCgroup(const ServerCgroup&) = delete;
  ServerCgroup& operator=(const ServerCgroup&) = delete;

  bool Move(pid_t pid);
  // CPU milliseconds used by the processes moved here; -1 when unknown.
  double CpuMs() const;

 private:
  std::string dir_;
  bool cpuacct_ = false;  // cpuacct.usage (ns), else the unified cpu.stat's usage_usec
};

}  // namespace statlet::bench
