#include "collector/limit_watch.h"

#include <errno.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace statlet {

LimitWatch::LimitWatch() : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}

LimitWatch::~LimitWatch() {
  if (fd_ >= 0) ::close(fd_);
}

int LimitWatch::Add(const std::string& path) {
  if (fd_ < 0) return -1;
  return ::inotify_add_watch(fd_, path.c_str(), IN_MODIFY | IN_DONT_FOLLOW);
}

void LimitWatch::Remove(int wd) {
  if (fd_ >= 0 && wd >= 0) (void)::inotify_rm_watch(fd_, wd);
}

bool LimitWatch::Drain(std::vector<int>* written, std::vector<int>* ended) {
  written->clear();
  ended->clear();
  if (fd_ < 0) return false;
  bool overflow = false;
  alignas(struct inotify_event) char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: drained
    for (ssize_t off = 0; off < n;) {
      const auto* e = reinterpret_cast<const struct inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(struct inotify_event) + e->len);
      if (e->mask & IN_Q_OVERFLOW) overflow = true;
      else if (e->mask & IN_IGNORED) ended->push_back(e->wd);
      else if (e->wd >= 0) written->push_back(e->wd);
    }
  }
  return overflow;
}

}  // namespace statlet
