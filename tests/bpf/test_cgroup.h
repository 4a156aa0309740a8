// A real cgroup for the probe tests: one directory in the unified (v2) hierarchy, whose
// inode is the id the probes key by, plus the same name in the v1 memory hierarchy on
// hybrid hosts. Removed (processes killed first) when the object goes away, also when a
// test fails half way.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace statlet::testing {

class TestCgroup {
 public:
  // `name` must be unique on the host; the directories must not exist yet.
  explicit TestCgroup(const std::string& name);
  ~TestCgroup();
  TestCgroup(const TestCgroup&) = delete;
  TestCgroup& operator=(const TestCgroup&) = delete;

  bool ok() const { return !unified_dir_.empty(); }
  const std::string& error() const { return error_; }
  uint64_t id() const { return id_; }  // inode of the unified directory
  const std::string& unified_dir() const { return unified_dir_; }

  // Moves a process into the cgroup (every hierarchy this object made a directory in).
  bool AddProcess(pid_t pid);
  // Sets a memory limit: v1 memory.limit_in_bytes on hybrid hosts, else v2 memory.max.
  bool SetMemoryLimit(uint64_t bytes);
  // v2 cpu.stat usage_usec of the unified directory, or -1.
  int64_t CpuUsageUsec() const;
  // Kills every process in the cgroup and removes the directories.
  void Destroy();

 private:
  std::string unified_dir_;
  std::string memory_v1_dir_;  // empty on pure v2 hosts
  uint64_t id_ = 0;
  std::string error_;
};

// The unified hierarchy's mount point: /sys/fs/cgroup or /sys/fs/cgroup/unified.
std::string Cgroup2Root();
// "statlet-bpf-test-<pid>-<tag>": unique per test process.
std::string UniqueName(const std::string& tag);

}  // namespace statlet::testing
