// Real cgroups and real processes for live tests on this machine's kernel: a cgroup
// created at the same path in every hierarchy statlet reads (v1 controllers and the
// unified cgroup2), and child processes moved into it before they start their workload.
// Everything is killed and removed in destructors, also when a test fails.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "collector/cgroup_hierarchies.h"

namespace statlet::testing {

const CgroupHierarchies& HostHierarchies();

class LiveCgroup {
 public:
  // `path` relative to the hierarchy roots, e.g. "/statlet-test-123/cpu".
  explicit LiveCgroup(std::string path);
  ~LiveCgroup();
  LiveCgroup(const LiveCgroup&) = delete;
  LiveCgroup& operator=(const LiveCgroup&) = delete;

  const std::string& path() const { return path_; }
  std::string Dir(Hierarchy h) const;
  void Add(pid_t pid);
  // Writes a control file in hierarchy h; returns false (and the test decides) on error.
  bool Write(Hierarchy h, const std::string& file, const std::string& value);
  std::string Read(Hierarchy h, const std::string& file) const;
  void KillAll();

 private:
  std::string path_;
  std::vector<std::string> created_;  // directories to remove, in creation order
};

// A child process whose body runs only after the parent moved it into its cgroups
// (Start), reporting one 64-bit value back (e.g. its own CPU time), then staying alive
// until killed so its cgroup keeps it.
class Child {
 public:
  explicit Child(std::function<uint64_t()> body, bool stay_alive = true);
  ~Child();
  pid_t pid() const { return pid_; }
  void Start();
  // Waits for the body's result (with a deadline; throws on timeout).
  uint64_t Result(int timeout_ms = 30000);
  void Kill();

 private:
  pid_t pid_ = -1;
  int go_fd_ = -1;
  int result_fd_ = -1;
};

// CPU time of a process in ns from /proc/<pid>/schedstat (the scheduler's own account).
uint64_t ProcessCpuNs(pid_t pid);
// Polls `cond` every 10 ms until it holds or `timeout_ms` passes.
bool WaitFor(const std::function<bool()>& cond, int timeout_ms);
std::string UniqueName(const std::string& prefix);

}  // namespace statlet::testing
