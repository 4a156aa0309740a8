#include "collector/kept_file.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/status.h"

namespace statlet {

size_t FdBudget::FromRlimit(size_t reserve) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024 > reserve ? 1024 - reserve : 0;
  if (rl.rlim_cur < rl.rlim_max) {
    struct rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  size_t cur = rl.rlim_cur == RLIM_INFINITY ? (1u << 20) : static_cast<size_t>(rl.rlim_cur);
  return cur > reserve ? cur - reserve : 0;
}

size_t FdBudget::ForKeptFiles(size_t max_kept) {
  constexpr size_t kReserve = 512;
  return std::min(FromRlimit(kReserve), max_kept);
}

int PreadWhole(int fd, ReadBuffer* buf) {
  size_t len = 0;
  while (true) {
    ssize_t n = ::pread(fd, buf->data() + len, buf->capacity() - len, static_cast<off_t>(len));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    len += static_cast<size_t>(n);
    if (n == 0 || len < buf->capacity()) break;
    buf->Grow();
  }
  buf->set_len(len);
  return 0;
}

namespace {
// "dir/name" into rel ("name" for an empty dir: dir_fd is the directory); false when it
// does not fit.
bool RelPath(std::string_view dir, const char* name, char (&rel)[4096]) {
  size_t n = std::strlen(name);
  if (dir.size() + n + 2 > sizeof rel) return false;
  size_t at = 0;
  if (!dir.empty()) {
    std::memcpy(rel, dir.data(), dir.size());
    rel[dir.size()] = '/';
    at = dir.size() + 1;
  }
  std::memcpy(rel + at, name, n + 1);
  return true;
}
}  // namespace

ReadOutcome KeptFile::Check(int dir_fd, std::string_view dir, const char* name, int* err) {
  if (absent_) return ReadOutcome::kAbsent;
  if (exists_ || fd_ >= 0) return ReadOutcome::kOk;
  char rel[4096];
  if (!RelPath(dir, name, rel)) {
    *err = ENAMETOOLONG;
    return ReadOutcome::kError;
  }
  if (::faccessat(dir_fd, rel, F_OK, 0) != 0) {
    *err = errno;
    if (errno == ENOENT) {
      absent_ = true;  // or the cgroup is gone: the caller tells them apart
      return ReadOutcome::kAbsent;
    }
    return ErrnoMeansGone(errno) ? ReadOutcome::kGone : ReadOutcome::kError;
  }
  exists_ = true;
  return ReadOutcome::kOk;
}

ReadOutcome KeptFile::Read(int dir_fd, std::string_view dir, const char* name, FdBudget* budget, ReadBuffer* buf,
                           int* err) {
  if (absent_) return ReadOutcome::kAbsent;
  bool transient = false;
  if (fd_ < 0) {
    char rel[4096];
    if (!RelPath(dir, name, rel)) {
      *err = ENAMETOOLONG;
      return ReadOutcome::kError;
    }
    int fd = ::openat(dir_fd, rel, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *err = errno;
      if (errno == ENOENT) {
        // Absent file vs vanished cgroup: the caller tells them apart (its directory).
        absent_ = true;
        return ReadOutcome::kAbsent;
      }
      return ErrnoMeansGone(errno) ? ReadOutcome::kGone : ReadOutcome::kError;
    }
    if (budget == nullptr || budget->TryAcquire()) {
      fd_ = fd;
    } else {
      fd_ = fd;
      transient = true;
    }
  }
  int e = PreadWhole(fd_, buf);
  if (transient) {
    ::close(fd_);
    fd_ = -1;
  }
  if (e != 0) {
    *err = e;
    return ErrnoMeansGone(e) ? ReadOutcome::kGone : ReadOutcome::kError;
  }
  return ReadOutcome::kOk;
}

void KeptFile::Close(FdBudget* budget) {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    if (budget) budget->Release();
  }
}

KeptFile::~KeptFile() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace statlet
