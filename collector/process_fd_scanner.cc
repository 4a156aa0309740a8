#include "collector/process_fd_scanner.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "base/status.h"
#include "collector/parse/cgroup_parsers.h"
#include "snapshot/snapshot.h"

namespace statlet {
namespace {

// The kernel's record layout for getdents64 (glibc exposes it only as struct dirent64).
struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// "<pid>/<leaf>" into buf (NUL-terminated).
void PidPath(uint32_t pid, const char* leaf, char (&buf)[48]) {
  auto [end, ec] = std::to_chars(buf, buf + 16, pid);
  *end++ = '/';
  size_t n = std::strlen(leaf);
  std::memcpy(end, leaf, n + 1);
}

}  // namespace

ProcessFdScanner::ProcessFdScanner(const std::string& proc_root) : dents_(32768) {
  proc_fd_ = ::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  own_pid_namespace_ = proc_root == "/proc";
}

ProcessFdScanner::~ProcessFdScanner() {
  if (proc_fd_ >= 0) ::close(proc_fd_);
}

ReadOutcome ProcessFdScanner::Count(uint32_t pid, ProcessFdCounts* out, int* err) {
  if (proc_fd_ < 0) {
    *err = EBADF;
    return ReadOutcome::kError;
  }
  char path[48];
  PidPath(pid, "fd", path);
  int dir = ::openat(proc_fd_, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    *err = errno;
    return ErrnoMeansGone(*err) ? ReadOutcome::kGone : ReadOutcome::kError;
  }
  ProcessFdCounts counts;
  ReadOutcome outcome = ReadOutcome::kOk;
  while (true) {
    long n = ::syscall(SYS_getdents64, dir, dents_.data(), dents_.size());
    if (n == 0) break;
    if (n < 0) {
      *err = errno;
      outcome = ErrnoMeansGone(*err) ? ReadOutcome::kGone : ReadOutcome::kError;
      break;
    }
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const LinuxDirent64*>(dents_.data() + off);
      off += d->d_reclen;
      if (d->d_name[0] == '.') continue;  // "." and ".."; fd names are digits
      ++counts.fds;
      // Only the prefix matters: a truncated link is fine. A fd closed meanwhile (ENOENT)
      // still counted as open when listed.
      char link[8];
      ssize_t len = ::readlinkat(dir, d->d_name, link, sizeof link);
      if (len == static_cast<ssize_t>(sizeof link) && std::memcmp(link, "socket:[", 8) == 0) ++counts.sockets;
    }
  }
  ::close(dir);
  if (outcome == ReadOutcome::kOk) {
    out->fds += counts.fds;
    out->sockets += counts.sockets;
  }
  return outcome;
}

ReadOutcome ProcessFdScanner::MaxOpenFilesSoft(uint32_t pid, uint64_t* out, int* err) {
  if (own_pid_namespace_) {
    struct rlimit rl;
    if (::prlimit(static_cast<pid_t>(pid), RLIMIT_NOFILE, nullptr, &rl) == 0) {
      *out = rl.rlim_cur == RLIM_INFINITY ? kUnlimited : static_cast<uint64_t>(rl.rlim_cur);
      return ReadOutcome::kOk;
    }
    if (ErrnoMeansGone(errno)) {
      *err = errno;
      return ReadOutcome::kGone;
    }
    // EPERM: another uid and no CAP_SYS_RESOURCE; procfs still answers.
  }
  if (proc_fd_ < 0) {
    *err = EBADF;
    return ReadOutcome::kError;
  }
  char path[48];
  PidPath(pid, "limits", path);
  int fd = ::openat(proc_fd_, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = errno;
    return ErrnoMeansGone(*err) ? ReadOutcome::kGone : ReadOutcome::kError;
  }
  int e = PreadWhole(fd, &limits_);
  ::close(fd);
  if (e != 0) {
    *err = e;
    return ErrnoMeansGone(e) ? ReadOutcome::kGone : ReadOutcome::kError;
  }
  if (!parse::ParseMaxOpenFilesSoft(limits_.view(), out)) {
    *err = EINVAL;
    return ReadOutcome::kError;
  }
  return ReadOutcome::kOk;
}

}  // namespace statlet
