// Kubernetes-shaped container cgroups made and removed in bulk for the churn tests:
// <root>/kubepods/burstable/pod<uid>/<64 hex id> in every hierarchy statlet reads, some
// with a sleeping process, as the kubelet's cgroupfs driver lays them out. statlet reports
// such cgroups with or without processes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"

namespace statlet::testing {

class ContainerTree {
 public:
  // Makes `root` and its kubepods/burstable parents (kept until destruction).
  explicit ContainerTree(std::string root);
  ~ContainerTree();

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& root() const { return root_; }

  // Adds `count` containers, each in a pod of its own; every `with_process_every`-th one
  // (0: none) gets a sleeping process. Their paths are appended to `paths`.
  bool Add(int count, int with_process_every, std::vector<std::string>* paths);
  // Kills and removes every container and pod made so far.
  void RemoveAll();
  size_t size() const { return containers_.size(); }

 private:
  std::string root_;
  std::vector<std::unique_ptr<LiveCgroup>> parents_;
  std::vector<std::unique_ptr<LiveCgroup>> pods_;
  std::vector<std::unique_ptr<LiveCgroup>> containers_;
  std::vector<Child> processes_;
  uint64_t next_ = 0;
  std::string error_;
};

}  // namespace statlet::testing
