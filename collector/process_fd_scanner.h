// Per-process scans behind container_file_descriptors, container_sockets and
// container_ulimits_soft: the open fds of a process (entries of /proc/<pid>/fd), how many
// of them are sockets (their link reads "socket:[inode]"), and its RLIMIT_NOFILE soft limit.
//
// Cost is what matters here: a node may run thousands of processes. The fd directory is
// listed with getdents64 into one reused buffer and each entry's link read with readlinkat
// into a stack buffer just long enough for the "socket:" prefix, so a scan allocates
// nothing. A process that exits mid-scan is a normal event (kGone), never an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collector/kept_file.h"

namespace statlet {

struct ProcessFdCounts {
  uint64_t fds = 0;
  uint64_t sockets = 0;
};

class ProcessFdScanner {
 public:
  explicit ProcessFdScanner(const std::string& proc_root);
  ~ProcessFdScanner();
  ProcessFdScanner(const ProcessFdScanner&) = delete;
  ProcessFdScanner& operator=(const ProcessFdScanner&) = delete;

  // Adds the fds and sockets of `pid` to *out. *err gets errno on kError.
  ReadOutcome Count(uint32_t pid, ProcessFdCounts* out, int* err);
  // The soft RLIMIT_NOFILE of `pid` (kUnlimited for RLIM_INFINITY): prlimit(2) when
  // allowed (same uid, or CAP_SYS_RESOURCE), else /proc/<pid>/limits.
  ReadOutcome MaxOpenFilesSoft(uint32_t pid, uint64_t* out, int* err);

 private:
  int proc_fd_ = -1;
  bool own_pid_namespace_ = false;  // proc_root is this process's /proc: prlimit may be used
  std::vector<char> dents_;
  ReadBuffer limits_;
};

}  // namespace statlet
