// The cgroup files whose value changes only when that very file is written (limits: v1
// memory.limit_in_bytes, cpu.cfs_quota_us, cpu.shares, pids.max…; v2 memory.max, cpu.max,
// pids.max…, see CgroupFileReader::written_only) are read once and then served from memory
// until inotify says the file was written. vfs_write() raises IN_MODIFY on every successful
// write(2) to a cgroupfs file, whoever writes it and through whichever mount of the
// hierarchy (one kernfs superblock, one inode); a refused write changes nothing and raises
// nothing. One inotify instance serves the collector; a watch costs well under 1 KiB of
// kernel memory and no fd, where a kept file costs ~5 KiB and an fd, and an unkept one an
// open+read+close per collection. When the event queue overflows, every value is read again.
#pragma once

#include <string>
#include <vector>

namespace statlet {

class LimitWatch {
 public:
  LimitWatch();  // no watching (ok() false) when inotify is not available
  ~LimitWatch();
  LimitWatch(const LimitWatch&) = delete;
  LimitWatch& operator=(const LimitWatch&) = delete;

  bool ok() const { return fd_ >= 0; }
  // Starts watching `path` for writes: its watch descriptor, or -1 (the file is then read on
  // every collection: no inotify, no watch left in fs.inotify.max_user_watches, no file).
  int Add(const std::string& path);
  void Remove(int wd);

  // The events since the last call, without blocking: the watches whose file was written
  // in *written, those the kernel ended (IN_IGNORED: removed, or the file's inode went) in
  // *ended; true when the queue overflowed and events were lost (every watched value must
  // be read again).
  bool Drain(std::vector<int>* written, std::vector<int>* ended);

 private:
  int fd_ = -1;
};

}  // namespace statlet
