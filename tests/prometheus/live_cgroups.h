// Real cgroups for live tests: a directory of the same name in each mounted hierarchy
// (cgroup v1 controllers and the unified hierarchy), processes moved into them, removed
// again (children first) when the tree goes away.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace statlet::testing {

class LiveCgroupTree {
 public:
  // `root` is relative to every hierarchy, e.g. "/statlet-test-1234".
  explicit LiveCgroupTree(std::string root, std::string mount = "/sys/fs/cgroup");
  ~LiveCgroupTree();

  // Creates root/child in every hierarchy that can hold it; false if none could.
  bool Add(const std::string& child);
  // Moves `pid` into root/child in every hierarchy where the directory exists.
  bool Move(const std::string& child, pid_t pid);
  // Writes `value` to <hierarchy>/root/child/<file>.
  bool Write(const std::string& hierarchy, const std::string& child, const std::string& file,
             const std::string& value);
  const std::string& root() const { return root_; }
  std::string path(const std::string& child) const { return root_ + "/" + child; }

 private:
  std::string root_;
  std::string mount_;
  std::vector<std::string> hierarchies_;  // absolute mount points
  std::vector<std::string> created_;      // absolute dirs, in creation order
};

// Starts a child that spins on the CPU until killed; returns its pid.
pid_t StartCpuBurner();
// User+system CPU seconds of a process, from /proc/<pid>/stat.
double ProcessCpuSeconds(pid_t pid);
void KillAndReap(pid_t pid);

}  // namespace statlet::testing
