#include "bpf/cgroup_walk.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bpf/probe.h"
#include "bpf/probe_abi.h"

namespace statlet::bpf {

CgroupWalk::~CgroupWalk() { bpf_link__destroy(link_); }

Status CgroupWalk::Attach(bpf_program* prog, int root_fd) {
  if (root_fd < 0) return Unavailable("no cgroup v2 hierarchy mounted");
  union bpf_iter_link_info info;
  std::memset(&info, 0, sizeof(info));
  info.cgroup.cgroup_fd = static_cast<__u32>(root_fd);
  info.cgroup.order = BPF_CGROUP_ITER_DESCENDANTS_PRE;
  LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
  link_ = bpf_program__attach_iter(prog, &opts);
  if (!link_) return LibbpfError(errno, "attach iter/cgroup");
  return Status::Ok();
}

StatusOr<uint32_t> CgroupWalk::Run() {
  int fd = bpf_iter_create(bpf_link__fd(link_));
  if (fd < 0) return ErrnoStatus(errno, "create cgroup iterator");
  // The whole walk happens in the first read(); the output is only the trailer. The
  // buffer is the kernel's per-walk maximum, so no read() ends a walk early.
  alignas(statlet_iter_trailer) static thread_local char buf[32 * 1024];
  size_t have = 0;
  int err = 0;
  for (;;) {
    ssize_t n = read(fd, buf + have, sizeof(buf) - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
    if (have == sizeof(buf)) break;
  }
  close(fd);
  if (err != 0) return ErrnoStatus(err, "read cgroup iterator");
  statlet_iter_trailer trailer{};
  if (have != sizeof(trailer))
    return Internal("cgroup iterator: " + std::to_string(have) + " bytes instead of its trailer");
  std::memcpy(&trailer, buf, sizeof(trailer));
  if (trailer.magic != STATLET_ITER_MAGIC) return Internal("cgroup iterator: the walk did not complete");
  return trailer.cgroups;
}

MappedArray::~MappedArray() {
  if (data_) munmap(data_, len_);
}

Status MappedArray::Map(const bpf_map* map) {
  fd_ = bpf_map__fd(map);
  entries_ = bpf_map__max_entries(map);
  value_size_ = bpf_map__value_size(map);
  if (fd_ < 0 || value_size_ == 0) return Internal(std::string("map ") + bpf_map__name(map) + " is not loaded");
  return Status::Ok();
}

void MappedArray::Unmap() {
  if (data_) munmap(data_, len_);
  data_ = nullptr;
  len_ = 0;
  covered_ = 0;
}

Status MappedArray::Cover(uint32_t n) {
  if (n <= covered_) return Status::Ok();
  if (n > entries_)
    return Internal("map has " + std::to_string(entries_) + " entries, " + std::to_string(n) + " asked for");
  constexpr size_t kStep = 64 * 1024;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t whole = (static_cast<size_t>(entries_) * value_size_ + page - 1) / page * page;
  size_t want = std::max(static_cast<size_t>(n) * value_size_, len_ + len_ / 4);
  want = std::min((want + kStep - 1) / kStep * kStep, whole);
  void* p = mmap(nullptr, want, PROT_READ, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return ErrnoStatus(errno, "mmap " + std::to_string(want) + " bytes of a map");
  if (data_) munmap(data_, len_);
  data_ = static_cast<uint8_t*>(p);
  len_ = want;
  covered_ = static_cast<uint32_t>(std::min<size_t>(len_ / value_size_, entries_));
  return Status::Ok();
}

}  // namespace statlet::bpf
