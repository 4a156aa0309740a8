// Cgroup file contents obtained other than by reading cgroupfs: the eBPF cgroup iterators
// (bpf/cgroup_stats_probe.cc) read, in one kernel walk per hierarchy and collection, the
// values behind several files for every cgroup (unified-hierarchy files, and on v1 hosts
// those of the cpu, cpuacct and memory hierarchies), and render each file as the kernel
// shows it, so that the collector's own readers parse them and every value rule stays in
// one place. Files it cannot render, or cgroups its walk did not see, are read from
// cgroupfs as usual.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "collector/cgroup_hierarchies.h"
#include "collector/kept_file.h"

namespace statlet {

class CgroupFileSource {
 public:
  virtual ~CgroupFileSource() = default;

  // An index for a file of hierarchy `h` ("cpu.stat" of kUnified) this source renders on
  // this kernel, or -1.
  virtual int FileIndex(Hierarchy h, std::string_view file) const = 0;

  // One walk over every cgroup of each hierarchy in `hierarchies` (bit h: hierarchy h), at
  // the start of a collection; files of the other hierarchies render nothing until a
  // Refresh walks them. On error the collection reads every file from cgroupfs.
  virtual Status Refresh(uint32_t hierarchies) = 0;
  Status Refresh() { return Refresh(~0u); }

  // A walk visits every cgroup of its hierarchy and has a fixed cost (the iterator, and on
  // the unified hierarchy an rstat flush): below this many files of a hierarchy per
  // collection, reading them costs less (CollectorOptions::min_walked_files). Where the
  // walks break even with kept-fd reads is measured by statlet_cgroup_stats_bench
  // (bench/RESULTS.md, "cgroup walks").
  static constexpr size_t kMinWalkedFiles = 256;
  // Whether a hierarchy's walk runs this collection: at least `min_files` of its files to
  // read there, or, while it already runs, three quarters of that (no flapping at the edge).
  static bool WalkPays(size_t files, bool walking, size_t min_files = kMinWalkedFiles) {
    return files >= min_files || (walking && files * 4 >= min_files * 3);
  }

  // Writes the content of file `index` for the cgroup whose id in the file's hierarchy (its
  // directory's inode number there) is `cgroup_id`, as of
  // the last Refresh, into `buf`. False when that walk did not see the cgroup, or the
  // cgroup had no value for that file (its controller is not enabled there).
  virtual bool Render(uint64_t cgroup_id, int index, ReadBuffer* buf) const = 0;
};

}  // namespace statlet
