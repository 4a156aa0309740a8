#include "tests/live/live_cgroup.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <atomic>
#include <cstring>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace statlet::testing {

const CgroupHierarchies& HostHierarchies() {
  static CgroupHierarchies h = [] {
    auto r = DetectHierarchies("/sys/fs/cgroup", "/proc");
    if (!r.ok()) throw std::runtime_error(r.status().ToString());
    return *r;
  }();
  return h;
}

std::string UniqueName(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

LiveCgroup::LiveCgroup(std::string path) : path_(std::move(path)) {
  const auto& h = HostHierarchies();
  for (int i = 0; i < kNumHierarchies; ++i) {
    if (!h.has(static_cast<Hierarchy>(i))) continue;
    // Co-mounted v1 controllers share a directory: create each once.
    std::string base = h.mount[i];
    std::string cur = base;
    size_t pos = 1;
    while (pos <= path_.size()) {
      size_t next = path_.find('/', pos);
      if (next == std::string::npos) next = path_.size();
      cur = base + path_.substr(0, next);
      if (::mkdir(cur.c_str(), 0755) == 0) created_.push_back(cur);
      else if (errno != EEXIST) throw std::runtime_error("mkdir " + cur + ": " + std::strerror(errno));
      pos = next + 1;
    }
  }
}

LiveCgroup::~LiveCgroup() {
  KillAll();
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    // A killed task leaves its cgroup asynchronously: retry briefly.
    WaitFor([&] { return ::rmdir(it->c_str()) == 0 || errno == ENOENT; }, 5000);
  }
}

std::string LiveCgroup::Dir(Hierarchy h) const { return HostHierarchies().mount[h] + path_; }

void LiveCgroup::Add(pid_t pid) {
  const auto& h = HostHierarchies();
  for (int i = 0; i < kNumHierarchies; ++i) {
    if (!h.has(static_cast<Hierarchy>(i))) continue;
    if (!Write(static_cast<Hierarchy>(i), "cgroup.procs", std::to_string(pid)))
      throw std::runtime_error("cannot move " + std::to_string(pid) + " into " + Dir(static_cast<Hierarchy>(i)));
  }
}

bool LiveCgroup::Write(Hierarchy h, const std::string& file, const std::string& value) {
  int fd = ::open((Dir(h) + "/" + file).c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  ::close(fd);
  return ok;
}

std::string LiveCgroup::Read(Hierarchy h, const std::string& file) const {
  std::ifstream f(Dir(h) + "/" + file);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void LiveCgroup::KillAll() {
  const auto& h = HostHierarchies();
  for (int i = 0; i < kNumHierarchies; ++i) {
    if (!h.has(static_cast<Hierarchy>(i))) continue;
    std::ifstream procs(Dir(static_cast<Hierarchy>(i)) + "/cgroup.procs");
    pid_t p;
    while (procs >> p) ::kill(p, SIGKILL);
  }
}

Child::Child(std::function<uint64_t()> body, bool stay_alive) {
  int go[2], res[2];
  if (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(res, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork");
  if (pid_ == 0) {
    ::close(go[1]);
    ::close(res[0]);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
    uint64_t v = body();
    if (::write(res[1], &v, sizeof v) != sizeof v) ::_exit(1);
    if (stay_alive) {
      while (true) ::pause();
    }
    ::_exit(0);
  }
  ::close(go[0]);
  ::close(res[1]);
  go_fd_ = go[1];
  result_fd_ = res[0];
}

Child::~Child() {
  Kill();
  if (go_fd_ >= 0) ::close(go_fd_);
  if (result_fd_ >= 0) ::close(result_fd_);
}

void Child::Start() {
  char c = 'g';
  if (::write(go_fd_, &c, 1) != 1) throw std::runtime_error("start child");
}

uint64_t Child::Result(int timeout_ms) {
  struct pollfd p = {result_fd_, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) throw std::runtime_error("child result timed out");
  uint64_t v = 0;
  if (::read(result_fd_, &v, sizeof v) != sizeof v) throw std::runtime_error("child died before reporting");
  return v;
}

void Child::Kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

uint64_t ProcessCpuNs(pid_t pid) {
  // Sum over the process's threads: /proc/<pid>/task/*/schedstat field 1.
  uint64_t total = 0;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (auto* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f(dir + "/" + e->d_name + "/schedstat");
      uint64_t run = 0;
      if (f >> run) total += run;
    }
    ::closedir(d);
  }
  return total;
}

bool WaitFor(const std::function<bool()>& cond, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace statlet::testing
