// Real cgroups for live tests and benches on this machine's kernel: one path created in
// every hierarchy statlet reads (v1 controllers and the unified cgroup2), or in a chosen
// few. Processes are moved in by pid; everything is killed and removed when the object
// goes away, also when a test fails half way.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "collector/cgroup_hierarchies.h"

namespace statlet::testing {

// The host's hierarchies, detected once (empty mounts when detection failed).
const CgroupHierarchies& HostHierarchies();

// The mount points of every cgroup hierarchy (v1 controllers, named ones, unified), from
// /proc/self/mountinfo: also those statlet does not read, where a runtime creates its
// cgroups too.
std::vector<std::string> CgroupMounts();

// Processes in cgroup `path` (relative): in the first hierarchy that has any (a runtime's
// container is in its memory hierarchy's cgroup, or the unified one's); 0 when none has.
int ProcessesIn(const std::string& path);

// rmdir of `path` (relative) in every hierarchy, retried until `timeout` while busy (a
// killed task leaves its cgroup a moment after the kill).
Status RemoveCgroupEverywhere(const std::string& path, std::chrono::milliseconds timeout);

// A random RFC 4122 version-4 uid, as Kubernetes gives pods.
std::string NewUid();

// "<prefix>-<pid>-<n>": unique on the host for this process's lifetime.
std::string UniqueName(const std::string& prefix);

class LiveCgroup {
 public:
  // `path` relative to the hierarchy roots, e.g. "/statlet-test-123/cpu"; missing parents
  // are created (and removed again) too. `only`: these hierarchies when mounted, instead
  // of every mounted one.
  explicit LiveCgroup(std::string path, std::vector<Hierarchy> only = {});
  ~LiveCgroup();
  LiveCgroup(const LiveCgroup&) = delete;
  LiveCgroup& operator=(const LiveCgroup&) = delete;

  // False when a directory could not be made; error() says which.
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  bool in(Hierarchy h) const;
  std::string Dir(Hierarchy h) const;
  // Inode of the unified directory (what bpf_get_current_cgroup_id() returns); 0 without.
  uint64_t id() const { return id_; }

  // Moves `pid` into the cgroup in every hierarchy it was made in.
  bool Add(pid_t pid);
  bool Write(Hierarchy h, const std::string& file, const std::string& value);
  std::string Read(Hierarchy h, const std::string& file) const;
  // A memory limit where the host's memory controller is: v1 memory.limit_in_bytes, or v2
  // memory.max (enabling the controller for the parent, no swap).
  bool SetMemoryLimit(uint64_t bytes);
  // CPU time of everything that ran here, exited threads included: cpuacct.usage when the
  // cgroup is in cpuacct, else the unified cpu.stat usage_usec; -1 when unreadable.
  int64_t CpuUsageNs() const;
  // The kernel's own user/system split of that time, in ns: the unified cpu.stat
  // user_usec/system_usec when the cgroup is there (scaled by the kernel to its precise
  // total), else cpuacct.usage_user/usage_sys. {-1, -1} when unreadable.
  struct CpuSplit {
    int64_t user_ns = -1, system_ns = -1;
  };
  CpuSplit CpuSplitNs() const;
  void KillAll();
  // Kills what runs here and removes the directories, deepest first (waiting for killed
  // tasks to leave); the destructor does it too.
  void Destroy();

 private:
  std::string path_;
  std::vector<Hierarchy> hierarchies_;
  std::vector<std::string> created_;  // directories to remove, in creation order
  uint64_t id_ = 0;
  std::string error_;
};

}  // namespace statlet::testing
