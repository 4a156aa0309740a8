// Running a cgroup iterator program (iter/cgroup) over a hierarchy, and reading the array
// maps it fills in place. See cgroup_iter.bpf.h for the kernel side's contract.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

struct bpf_link;
struct bpf_map;
struct bpf_program;

namespace statlet::bpf {

class CgroupWalk {
 public:
  CgroupWalk() = default;
  CgroupWalk(const CgroupWalk&) = delete;
  CgroupWalk& operator=(const CgroupWalk&) = delete;
  ~CgroupWalk();

  // Attaches `prog` to walk, in pre-order, every cgroup below the directory `root_fd` (a
  // cgroupfs directory opened O_RDONLY) and the directory itself.
  Status Attach(bpf_program* prog, int root_fd);

  // One walk: the program runs once per cgroup, then writes its trailer. Returns the
  // number of cgroups it visited; an error when the walk did not complete.
  StatusOr<uint32_t> Run();

 private:
  bpf_link* link_ = nullptr;
};

// An mmapable BPF array map mapped read-only: entry i at data() + i * value_size.
//
// Only the entries a walk filled are mapped (Cover): mapping an array map puts every page
// of the range in the process's resident set at once (the kernel maps it whole), and the
// maps are sized for the largest node (--bpf.max-cgroups) while a walk fills as many
// entries as the hierarchy has cgroups.
class MappedArray {
 public:
  MappedArray() = default;
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;
  ~MappedArray();

  // Takes the map's fd and size; maps nothing yet.
  Status Map(const bpf_map* map);
  // Makes entries [0, n) readable (n at most entries()): grows the mapping when it is
  // shorter, by at least a quarter, in 64 KiB steps; never shrinks it. A failure keeps
  // the mapping as it was.
  Status Cover(uint32_t n);
  // Unmaps it all (Cover maps again).
  void Unmap();
  const uint8_t* data() const { return data_; }
  uint32_t entries() const { return entries_; }

  template <typename T>
  const T& at(uint32_t i) const {
    return *reinterpret_cast<const T*>(data_ + static_cast<size_t>(i) * sizeof(T));
  }

 private:
  int fd_ = -1;  // the map's (owned by libbpf)
  size_t value_size_ = 0;
  uint8_t* data_ = nullptr;
  size_t len_ = 0;
  uint32_t entries_ = 0;
  uint32_t covered_ = 0;  // whole entries inside the mapping
};

}  // namespace statlet::bpf
