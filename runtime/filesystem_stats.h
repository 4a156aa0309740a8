// The filesystem holding a runtime-reported path (a container's writable layer): its
// capacity and inodes from statvfs(2), and the source of its mount ("/dev/vda1"), which is
// what cAdvisor puts in the `device` label of container_fs_* series.
#pragma once

#include <cstdint>
#include <string>

#include "snapshot/snapshot.h"

namespace statlet {

struct FilesystemStats {
  Opt<uint64_t> capacity_bytes, inodes_total, inodes_free;
  std::string device;  // the mount source; "<major>:<minor>" when mountinfo has no line for it
};

// False when `path` cannot be reached from statlet's mount namespace (the runtime may run
// in another one): the caller then has no capacity to report, never a made-up one.
bool StatFilesystem(const std::string& path, FilesystemStats* out,
                    const std::string& mountinfo_path = "/proc/self/mountinfo");

}  // namespace statlet
