// A cgroupfs/procfs file kept open for the lifetime of its cgroup and re-read with
// pread(fd, buf, n, 0): cgroupfs regenerates the content on every read, so one open per
// lifetime replaces an open+read+close per collection (bench/collector/kept_file_bench).
// A removed cgroup answers ENODEV on the kept fd, a fresh open
// ENOENT: both are reported as kGone, a normal event.
#pragma once

#include <atomic>
#include <cstddef>
#include <string_view>
#include <vector>

namespace statlet {

enum class ReadOutcome : unsigned char { kOk, kAbsent, kGone, kError };

// Caps the number of fds kept open (RLIMIT_NOFILE minus a reserve). Files beyond the
// budget are opened, read and closed on each collection instead: slower, never wrong.
// Shared by the collector's reading threads.
class FdBudget {
 public:
  explicit FdBudget(size_t limit) : limit_(limit) {}
  bool TryAcquire() {
    size_t used = used_.load(std::memory_order_relaxed);
    while (used < limit_) {
      if (used_.compare_exchange_weak(used, used + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  void Release() { used_.fetch_sub(1, std::memory_order_relaxed); }
  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }
  // The budget this process can afford: raises the soft RLIMIT_NOFILE to the hard limit
  // and keeps `reserve` fds for sockets, clients and the rest of the daemon.
  static size_t FromRlimit(size_t reserve);
  // The collector's budget: what RLIMIT_NOFILE affords (512 fds kept for the rest of the
  // daemon), at most `max_kept` (CollectorOptions::max_kept_files).
  static size_t ForKeptFiles(size_t max_kept);

 private:
  size_t limit_;
  std::atomic<size_t> used_{0};
};

// A growable buffer reused across reads; never shrinks.
class ReadBuffer {
 public:
  ReadBuffer() : data_(16384) {}
  std::string_view view() const { return {data_.data(), len_}; }
  char* data() { return data_.data(); }
  size_t capacity() const { return data_.size(); }
  void Grow() { data_.resize(data_.size() * 2); }
  void set_len(size_t n) { len_ = n; }

 private:
  std::vector<char> data_;
  size_t len_ = 0;
};

class KeptFile {
 public:
  KeptFile() = default;
  KeptFile(const KeptFile&) = delete;
  KeptFile& operator=(const KeptFile&) = delete;
  ~KeptFile();

  // Reads the whole file into *buf. `dir_fd`, `dir` and `name` locate it (openat of
  // "dir/name", of "name" when `dir` is empty), used only when the file is not open yet. A file that does not exist is
  // remembered as absent (this kernel or controller does not have it) and not looked up again. *err gets errno on
  // kError.
  ReadOutcome Read(int dir_fd, std::string_view dir, const char* name, FdBudget* budget, ReadBuffer* buf, int* err);
  // Whether the file exists, for a file whose content comes from elsewhere (a
  // CgroupFileSource): looked up once, then remembered like Read's absent files. kOk,
  // kAbsent, or kGone / kError with *err.
  ReadOutcome Check(int dir_fd, std::string_view dir, const char* name, int* err);
  void Close(FdBudget* budget);
  bool is_open() const { return fd_ >= 0; }
  bool absent() const { return absent_; }
  void ForgetAbsent() { absent_ = false; }

 private:
  int fd_ = -1;
  bool absent_ = false;
  bool exists_ = false;  // Check found it
};

// Reads all of `fd` from offset 0 into *buf, growing it as needed. Returns 0 or an errno.
int PreadWhole(int fd, ReadBuffer* buf);

}  // namespace statlet
