#include "bpf/cgroup_pruner.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace statlet::bpf {
namespace {

// File handle type of kernfs (cgroupfs) nodes: the handle is the 64-bit node id.
constexpr int kFileIdKernfs = 0xfe;

bool IsCgroup2(int fd) {
  struct statfs st;
  return fstatfs(fd, &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC;
}

}  // namespace

CgroupPruner::CgroupPruner(const std::vector<uint64_t>& live_ids, int cgroup2_root_fd, bool every_cgroup_listed)
    : live_(live_ids.begin(), live_ids.end()), root_fd_(cgroup2_root_fd), every_cgroup_listed_(every_cgroup_listed) {}

bool CgroupPruner::ShouldPrune(uint64_t id, bool map_crowded) {
  if (!every_cgroup_listed_) return root_fd_ >= 0 && CgroupExists(id) == Existence::kGone;
  if (map_crowded || root_fd_ < 0) return true;
  return CgroupExists(id) != Existence::kExists;
}

CgroupPruner::Existence CgroupPruner::CgroupExists(uint64_t id) {
  auto it = exists_.find(id);
  if (it != exists_.end()) return it->second;
  alignas(struct file_handle) unsigned char buf[sizeof(struct file_handle) + sizeof(uint64_t)];
  auto* fh = reinterpret_cast<struct file_handle*>(buf);
  fh->handle_bytes = sizeof(uint64_t);
  fh->handle_type = kFileIdKernfs;
  std::memcpy(fh->f_handle, &id, sizeof(id));
  int fd = open_by_handle_at(root_fd_, fh, O_RDONLY | O_CLOEXEC);
  Existence exists;
  if (fd >= 0) {
    close(fd);
    exists = Existence::kExists;
  } else if (errno == EPERM || errno == EACCES) {
    // Without CAP_DAC_READ_SEARCH (the DaemonSet does not grant it) the kernel will not
    // say: keep the entry, so counts of untracked sub-cgroups still roll up; a crowded map
    // drops it anyway (ShouldPrune), which bounds what removed cgroups can hold.
    exists = Existence::kExists;
  } else if (errno == ESTALE || errno == ENOENT) {
    exists = Existence::kGone;
  } else {
    // No handle support: unknown, and an unknown non-live entry is dropped by a full
    // collection, which is the interface's default.
    exists = Existence::kUnknown;
  }
  exists_.emplace(id, exists);
  return exists;
}

int OpenCgroup2Root(const std::string& path) {
  const char* candidates[] = {path.c_str(), "/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
  for (const char* p : candidates) {
    if (*p == '\0') continue;
    int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    if (IsCgroup2(fd)) return fd;
    close(fd);
    if (p == path.c_str()) return -1;  // an explicit path that is not cgroup2: no guessing
  }
  return -1;
}

}  // namespace statlet::bpf
