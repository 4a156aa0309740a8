// The cgroups the whole-process benches measure: N real cgroups under one root in every
// mounted hierarchy, each holding one sleeping process (holding only stdio, as a
// container's process would), and a cgroup of its own for each measured server process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"

namespace statlet::bench {

class BenchTree {
 public:
  enum Shape {
    kFlat,     // root/c<i>
    kKubelet,  // root/kubepods/burstable/pod<uid>/<64-hex id>, `per_pod` per pod
  };
  BenchTree(std::string root, size_t cgroups, Shape shape, size_t per_pod = 4);
  // Processes killed, then the directories removed, deepest first.
  ~BenchTree();
  BenchTree(const BenchTree&) = delete;
  BenchTree& operator=(const BenchTree&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& root() const { return root_; }
  size_t pods() const { return pods_; }

 private:
  testing::LiveCgroup* Make(const std::string& path);

  std::string root_;
  size_t pods_ = 0;
  std::string error_;
  std::vector<std::unique_ptr<testing::LiveCgroup>> cgroups_;  // in creation order
  std::vector<testing::Child> sleepers_;
};

// Where a server process gets a cgroup of its own, beside the measured tree so that statlet
// does not see it: the v1 cpuacct hierarchy, else the unified one. Its CpuUsageNs() then
// counts every thread the server ran, exited ones too, at ns precision (/proc/<pid>/stat
// counts 10 ms ticks, and thread pools start and end threads). Create the cgroup before
// the process and destroy it after, so that rmdir finds it empty.
std::vector<Hierarchy> ServerCgroupHierarchies();

}  // namespace statlet::bench
